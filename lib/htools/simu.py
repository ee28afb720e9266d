"""Simulated clusters as iallocator input messages (like hspace's --simu).

Used for capacity what-ifs, tests and benchmarks: ``Message`` makes a
cluster of identical nodes in one or more groups, with instances placed
round-robin (or, with ``skew``, only on the first nodes) and the nodes'
free values lowered by what the instances use, as live data would be.
"""

import random
from typing import Any

from ganeti import constants
from ganeti.parameters import families


def Message(nodes: int, instances: int = 0, groups: int = 1,
            memory: int = 65536, disk: int = 2 * 1024 * 1024, cpus: int = 16,
            templates: tuple[str, ...] = (constants.DT_PLAIN, ),
            skew: float = 0.0, seed: int = 1,
            request: dict | None = None) -> dict:
    """An input message for ``nodes`` nodes (memory and disk in MiB) and
    ``instances`` instances; with ``skew`` in [0, 1) only the first
    ``(1 - skew) * nodes`` nodes receive instances."""
    rnd = random.Random(seed)
    ipolicy = families.FillIPolicy(families.IPOLICY_DEFAULTS, {})
    ipolicy[families.IPOLICY_DTS] = sorted(constants.DISK_TEMPLATES)
    group_uuids = ["group-%04d-uuid" % idx for idx in range(groups)]
    msg_groups = {uuid: {"name": "group%d" % idx if idx else "default",
                         "alloc_policy": constants.ALLOC_POLICY_PREFERRED,
                         "networks": [], "ipolicy": ipolicy, "tags": []}
                  for idx, uuid in enumerate(group_uuids)}
    names = ["node%04d.example.com" % idx for idx in range(nodes)]
    msg_nodes: dict[str, dict[str, Any]] = {}
    for idx, name in enumerate(names):
        msg_nodes[name] = {
            "tags": [], "primary_ip": "192.0.2.%d" % (idx % 250 + 1),
            "secondary_ip": "198.51.100.%d" % (idx % 250 + 1),
            "offline": False, "drained": False, "master_candidate": idx < 10,
            "group": group_uuids[idx * groups // max(nodes, 1)],
            "master_capable": True, "vm_capable": True,
            "ndparams": {"spindle_count": 1, "exclusive_storage": False},
            "total_memory": memory, "reserved_memory": 1024,
            "free_memory": memory - 1024, "total_disk": disk,
            "free_disk": disk, "total_spindles": 1, "free_spindles": 1,
            "total_cpus": cpus, "reserved_cpus": 0, "i_pri_memory": 0,
            "i_pri_up_memory": 0}
    used = max(1, int(round(nodes * (1.0 - skew))))
    msg_instances = {}
    for idx in range(instances):
        template = templates[idx % len(templates)]
        mem = rnd.choice([512, 1024, 2048])
        size = rnd.choice([10240, 20480])
        pidx = idx % used
        group = pidx * groups // max(nodes, 1)
        pnode = names[pidx]
        inst_nodes = [pnode]
        data = msg_nodes[pnode]
        data["free_memory"] -= mem
        data["i_pri_memory"] += mem
        data["i_pri_up_memory"] += mem
        if template in constants.DTS_INT_MIRROR:
            members = [i for i in range(used)
                       if i * groups // max(nodes, 1) == group and i != pidx]
            sidx = members[(idx // used) % len(members)] if members else None
            if sidx is not None:
                inst_nodes.append(names[sidx])
                msg_nodes[names[sidx]]["free_disk"] -= size
        if template not in (constants.DT_DISKLESS, constants.DT_SHARED_FILE,
                            constants.DT_EXT, constants.DT_BLOCK):
            data["free_disk"] -= size
        msg_instances["inst%05d.example.com" % idx] = {
            "tags": [], "admin_state": "up", "admin_state_source": "admin",
            "vcpus": rnd.choice([1, 2]), "memory": mem, "spindle_use": 1,
            "os": "debootstrap+default", "nodes": inst_nodes,
            "nics": [{"mac": "aa:00:00:%02x:%02x:%02x" % (
                idx >> 16 & 255, idx >> 8 & 255, idx & 255),
                "ip": None, "mode": "bridged", "link": "br0"}],
            "disks": [{"size": size, "mode": "rw", "spindles": None}],
            "disk_template": template, "disks_active": True,
            "hypervisor": constants.HT_KVM, "disk_space_total": size}
    return {
        "version": constants.IALLOCATOR_VERSION,
        "cluster_name": "cluster.example.com", "cluster_tags": [],
        "enabled_hypervisors": [constants.HT_KVM], "ipolicy": ipolicy,
        "nodegroups": msg_groups, "nodes": msg_nodes,
        "instances": msg_instances,
        "request": request or {"type": constants.IALLOCATOR_MODE_ALLOC},
    }


def AllocRequest(name: str = "new.example.com", memory: int = 1024,
                 disk: int = 10240, vcpus: int = 1,
                 template: str = constants.DT_PLAIN, **extra) -> dict:
    """An allocate request for one instance."""
    req = {"type": constants.IALLOCATOR_MODE_ALLOC, "name": name,
           "memory": memory, "vcpus": vcpus, "disk_template": template,
           "disks": [{"size": disk, "mode": "rw"}], "disk_space_total": disk,
           "spindle_use": 1, "tags": [], "os": "debootstrap+default",
           "nics": [], "hypervisor": constants.HT_KVM,
           "required_nodes":
           2 if template in constants.DTS_INT_MIRROR else 1}
    req.update(extra)
    return req
