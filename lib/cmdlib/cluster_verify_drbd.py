"""Cluster verify's drbd check (Ganeti's ENODEDRBD findings).

Ganeti compares the DRBD minors a node has in use with those the
configuration assigns it. Here a drbd disk side is a block daemon per
disk and node (storage.drbd), known by the disk's port: the node lists
the ports of its running image daemons, with the disk each holds and
whether it exports the device (NV_DRBDLIST); the configuration says
which disks each node holds and on which port. Reported, in Ganeti's
words where Ganeti has them:

* a disk of an instance whose disks are active without its daemon on
  one of its nodes ("drbd minor N of disk D (attached in instance 'I')
  is not active"), or without its device on the primary node;
* a daemon on a port the configuration gives this node for no disk, or
  for another disk ("unallocated drbd minor ... is in use": a disk
  removed, or moved away by replace-disks, whose daemon stayed);
* a device exported on a node that is not the instance's primary (two
  writers, as a DRBD in the primary role on both sides would be).
"""

from typing import Any

from ganeti import constants


def _Attached(instance: Any) -> str:
    return "(attached in instance '%s')" % instance.name


def NodeDrbdProblems(cfg: Any, node_uuid: str, running: Any) -> list[str]:
    """The findings about one node's drbd daemons (module doc);
    ``running`` is the node's NV_DRBDLIST answer."""
    if not isinstance(running, list) or not all(
            isinstance(entry, list) and len(entry) == 3 and
            isinstance(entry[0], int) for entry in running):
        return ["cannot parse drbd status file: %s" % (running, )]
    owner = {disk_uuid: inst
             for inst in cfg.GetAllInstancesInfo().values()
             for disk_uuid in inst.disks}
    # port -> (minor, disk, instance or None)
    expected: dict[int, tuple[int, Any, Any]] = {}
    for disk in cfg.GetAllDisksInfo().values():
        if disk.dev_type != constants.DT_DRBD8:
            continue
        node_a, node_b, port, minor_a, minor_b, _ = disk.logical_id
        if node_uuid in (node_a, node_b):
            expected[port] = (minor_a if node_uuid == node_a else minor_b,
                              disk, owner.get(disk.uuid))
    problems = []
    active = {port: (disk_uuid, primary)
              for port, disk_uuid, primary in running}
    for port, (minor, disk, inst) in sorted(expected.items()):
        if inst is None or not inst.disks_active:
            continue
        if port not in active:
            problems.append("drbd minor %d of disk %s %s is not active" %
                            (minor, disk.uuid, _Attached(inst)))
        elif inst.primary_node == node_uuid and not active[port][1]:
            problems.append("drbd minor %d of disk %s %s has no device on"
                            " its primary node" %
                            (minor, disk.uuid, _Attached(inst)))
    for port, disk_uuid, primary in running:
        entry = expected.get(port)
        if entry is None or disk_uuid not in (None, entry[1].uuid):
            problems.append("unallocated drbd minor (port %d) is in use by"
                            " the daemon of disk %s" % (port, disk_uuid))
            continue
        minor, disk, inst = entry
        if primary and inst is not None and inst.primary_node != node_uuid:
            problems.append("drbd minor %d of disk %s %s exports its device"
                            " on a node that is not the primary" %
                            (minor, disk.uuid, _Attached(inst)))
    return problems
