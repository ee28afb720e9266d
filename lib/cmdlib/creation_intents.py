"""Intent records of instance creations, and the clean-up of those that
a crash interrupted.

Creating an instance makes storage on a node before the configuration
owns it, so a master daemon killed in between would leave disk files that
nothing names. The creation LU therefore writes a record naming the
instance and the disks it is about to create (durably, before the first
one is created) and removes it once the configuration owns them or they
are removed again. A record still there when the master daemon starts is
from a creation whose job died: ``RecoverCreations`` removes, through
noded, the disks it names that the configuration does not own. A record
whose clean-up failed (node unreachable) is kept for the next start;
``gnt-cluster verify`` reports the files meanwhile.
"""

import logging
import os
from typing import Any

from ganeti import constants, errors, objects, serializer, utils

_SUFFIX = ".json"


def IntentDir(cfg: Any) -> str:
    """Where the records live: beside the configuration they refer to."""
    return os.path.join(os.path.dirname(cfg.GetConfigFileName()),
                        "creation-intents")


def _RecordPath(cfg: Any, instance_uuid: str) -> str:
    return os.path.join(IntentDir(cfg), instance_uuid + _SUFFIX)


def Record(cfg: Any, instance: objects.Instance,
           disks: list[objects.Disk]) -> None:
    """Durably note that ``disks`` are about to be created for
    ``instance`` (call before the first side effect)."""
    utils.EnsureDirs([(IntentDir(cfg), constants.SECURE_DIR_MODE)])
    data = serializer.DumpJson({
        "instance": instance.name,
        "uuid": instance.uuid,
        "disks": [disk.ToDict() for disk in disks],
    })
    utils.WriteFile(_RecordPath(cfg, instance.uuid), data=data,
                    mode=constants.SECURE_FILE_MODE)


def Clear(cfg: Any, instance_uuid: str) -> None:
    """Forget a creation: it finished, or what it made is gone again."""
    utils.RemoveFile(_RecordPath(cfg, instance_uuid))


def PendingRecords(cfg: Any) -> list[str]:
    """Paths of the records left."""
    intent_dir = IntentDir(cfg)
    try:
        names = os.listdir(intent_dir)
    except FileNotFoundError:
        return []
    return [os.path.join(intent_dir, name) for name in sorted(names)
            if name.endswith(_SUFFIX) and not name.startswith(".")]


def _RemoveUnowned(cfg: Any, rpc: Any, record: dict) -> bool:
    """Remove the recorded disks the configuration does not own; True if
    nothing is left to do for this record."""
    if cfg.GetInstanceInfo(record["uuid"]) is not None:
        # The creation got as far as the configuration: nothing is orphaned
        return True
    done = True
    for data in record["disks"]:
        disk = objects.Disk.FromDict(data)
        if cfg.GetDiskInfo(disk.uuid) is not None:
            continue
        for node_uuid in disk.nodes:
            if cfg.GetNodeInfo(node_uuid) is None:
                continue
            result = rpc.call_blockdev_remove(node_uuid, disk.ToDict())
            if result.fail_msg:
                logging.warning("Cannot remove disk %s of the interrupted"
                                " creation of instance %s on node %s: %s",
                                disk.logical_id, record["instance"],
                                result.node, result.fail_msg)
                done = False
            else:
                logging.info("Removed disk %s of the interrupted creation"
                             " of instance %s", disk.logical_id,
                             record["instance"])
    return done


def RecoverCreations(cfg: Any, rpc: Any) -> int:
    """Undo the creations a crash interrupted; returns how many records
    are kept (their clean-up failed and is tried again at the next start).

    The caller holds the Big Ganeti Lock exclusively, so no creation of
    this process is under way and every record found is a dead one.
    """
    kept = 0
    for path in PendingRecords(cfg):
        try:
            record = serializer.LoadJson(utils.ReadFile(path))
            if not isinstance(record, dict) or \
                    not isinstance(record.get("disks"), list):
                raise ValueError("not a creation record")
            done = _RemoveUnowned(cfg, rpc, record)
        except (OSError, ValueError, KeyError, TypeError,
                errors.GenericError) as err:
            logging.error("Unusable creation record %s, removed: %s", path,
                          err)
            done = True
        if done:
            utils.RemoveFile(path)
        else:
            kept += 1
    return kept
