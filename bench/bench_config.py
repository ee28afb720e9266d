#!/usr/bin/env python3
"""Benchmark of the configuration store with a large cluster.

Generates a config.data with many instances (one disk and one NIC each,
field values like those of a real cluster), then measures loading it, a
durable update of one field of one instance (Update: validate, write,
fsync, rename), the full reads and the file size.

Usage: bench_config.py [--instances N] [--nodes N] [--updates N] [--dir D]
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from ganeti import config, constants, objects, utils
from ganeti.config import serialization


def _Mac(rnd: random.Random) -> str:
    return "aa:00:00:%02x:%02x:%02x" % (rnd.randrange(256), rnd.randrange(256),
                                        rnd.randrange(256))


def GenerateConfig(num_instances: int, num_nodes: int) -> objects.ConfigData:
    """A cluster of ``num_nodes`` nodes carrying ``num_instances`` VMs."""
    rnd = random.Random(42)
    now = time.time()
    group = objects.NodeGroup(name="default", uuid=objects.NewUUID(),
                              serial_no=3, ctime=now, mtime=now)
    nodes = {}
    for idx in range(num_nodes):
        node = objects.Node(
            name="node%03d.example.com" % idx, uuid=objects.NewUUID(),
            primary_ip="192.0.2.%d" % (idx + 1),
            secondary_ip="198.51.100.%d" % (idx + 1), group=group.uuid,
            master_candidate=idx < 10, serial_no=5, ctime=now, mtime=now)
        node.UpgradeConfig()
        nodes[node.uuid] = node
    group.UpgradeConfig()
    node_uuids = sorted(nodes)
    cluster = objects.Cluster(
        cluster_name="cluster.example.com", uuid=objects.NewUUID(),
        master_node=node_uuids[0], master_ip="192.0.2.254",
        master_netdev="eth0", enabled_hypervisors=[constants.HT_KVM],
        hvparams={constants.HT_KVM: {"kernel_path": "", "acpi": True,
                                     "boot_order": "disk"}},
        enabled_disk_templates=[constants.DT_PLAIN, constants.DT_FILE],
        volume_group_name="xenvg", tags=["production"], serial_no=100,
        ctime=now, mtime=now)
    cluster.UpgradeConfig()
    instances = {}
    disks = {}
    for idx in range(num_instances):
        inst_uuid = objects.NewUUID()
        pnode = rnd.choice(node_uuids)
        disk = objects.Disk(
            uuid=objects.NewUUID(), dev_type=constants.DT_PLAIN,
            logical_id=["xenvg", "%s.disk0" % objects.NewUUID()],
            nodes=[pnode], iv_name="disk/0", size=rnd.choice([10240, 20480]),
            mode="rw", params={}, serial_no=1, ctime=now, mtime=now)
        disks[disk.uuid] = disk
        mem = rnd.choice([512, 1024, 2048, 4096])
        inst = objects.Instance(
            name="instance%05d.example.com" % idx, uuid=inst_uuid,
            primary_node=pnode, os="debootstrap+default",
            hypervisor=constants.HT_KVM, hvparams={},
            beparams={"minmem": mem, "maxmem": mem,
                      "vcpus": rnd.choice([1, 2, 4])},
            osparams={}, osparams_private={},
            admin_state=rnd.choice(["up", "up", "up", "down"]),
            admin_state_source="admin", disks_active=True,
            disks=[disk.uuid], network_port=11000 + idx,
            nics=[objects.NIC(mac=_Mac(rnd), uuid=objects.NewUUID(),
                              ip="10.%d.%d.%d" % (idx >> 16, (idx >> 8) & 255,
                                                  idx & 255),
                              nicparams={"link": "br0"})],
            tags=["service:web"] if idx % 3 else [], serial_no=2,
            ctime=now, mtime=now)
        instances[inst_uuid] = inst
    return objects.ConfigData(
        version=constants.CONFIG_VERSION, cluster=cluster, nodes=nodes,
        nodegroups={group.uuid: group}, instances=instances, networks={},
        disks=disks, filters={}, serial_no=1000, ctime=now, mtime=now)


def _Timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=10000)
    parser.add_argument("--nodes", type=int, default=40)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--dir", default=None,
                        help="directory for config.data (default: a"
                        " temporary directory, removed afterwards)")
    opts = parser.parse_args()

    workdir = opts.dir or tempfile.mkdtemp(prefix="bench-config-")
    cfg_file = os.path.join(workdir, "config.data")
    try:
        gen_time, data = _Timed(GenerateConfig, opts.instances, opts.nodes)
        dump_time, text = _Timed(serialization.SerializeConfig, data)
        del data
        utils.WriteFile(cfg_file, data=text, mode=constants.CONFIG_FILE_MODE)
        del text
        size = os.path.getsize(cfg_file)
        print("instances: %d, nodes: %d" % (opts.instances, opts.nodes))
        print("config.data size: %.2f MiB (%d bytes)" %
              (size / 1048576.0, size))
        print("generation: %.3f s" % gen_time)
        print("full JSON dump of all objects (what a write would cost"
              " without the fragment cache): %.1f ms" % (dump_time * 1000))

        load_times = []
        cfg = None
        for _ in range(3):
            del cfg
            load_time, cfg = _Timed(config.ConfigWriter, cfg_file, True, True)
            load_times.append(load_time)
        print("load (incl. indexing and fragment cache): min %.3f s,"
              " max %.3f s" % (min(load_times), max(load_times)))

        rnd = random.Random(1)
        inst_uuids = cfg.GetInstanceList()
        update_times = []
        for _ in range(opts.updates):
            uuid = rnd.choice(inst_uuids)
            start = time.perf_counter()
            inst = cfg.GetInstanceInfo(uuid)
            inst.admin_state = "down" if inst.admin_state == "up" else "up"
            cfg.Update(inst)
            update_times.append(time.perf_counter() - start)
        update_times.sort()
        print("durable one-field update (%d runs): median %.1f ms,"
              " min %.1f ms, max %.1f ms" %
              (len(update_times), statistics.median(update_times) * 1000,
               update_times[0] * 1000, update_times[-1] * 1000))

        read_time, _ = _Timed(cfg.GetAllInstancesInfo)
        print("GetAllInstancesInfo (copies): %.1f ms" % (read_time * 1000))
        ssconf_time, _ = _Timed(cfg.GetSsconfValues)
        print("GetSsconfValues (first call): %.1f ms" % (ssconf_time * 1000))
        verify_time, problems = _Timed(cfg.VerifyConfig)
        print("VerifyConfig: %.1f ms, %d problems" %
              (verify_time * 1000, len(problems)))
    finally:
        if opts.dir is None:
            shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
