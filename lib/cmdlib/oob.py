"""Out-of-band management of nodes (gnt-node power|health, gnt-cluster
epo).

A node's ``oob_program`` node parameter names a program on the master
speaking Ganeti's OOB protocol: it is run as ``<program> <command>
<node name>``; ``power-status`` answers ``{"powered": bool}``, ``health``
a list of ``[item, status]`` pairs, the power changes nothing.
"""

import logging
import time
from typing import Any, Callable

from ganeti import constants, errors, locking, objects, utils
from ganeti.cmdlib.base import ExpandNodeUuidAndName, NoHooksLU

# The master cannot power itself off or cycle: the job would die with it
_SKIP_MASTER = frozenset([constants.OOB_POWER_OFF,
                          constants.OOB_POWER_CYCLE])


def OobProgram(cfg: Any, node: objects.Node) -> str:
    """The node's out-of-band program; empty if it has none."""
    group = cfg.GetNodeGroup(node.group)
    return cfg.GetClusterInfo().FillND(node, group).get(
        objects.ND_OOB_PROGRAM) or ""


def _PayloadErrors(command: str, payload: Any) -> list[str]:
    """What is wrong with an OOB program's answer (Ganeti's checks)."""
    if command == constants.OOB_HEALTH:
        if not isinstance(payload, list):
            return ["command 'health' is expected to return a list but got"
                    " %s" % type(payload).__name__]
        errs = []
        for entry in payload:
            if not (isinstance(entry, list) and len(entry) == 2):
                errs.append("health item %r is not an [item, status] pair" %
                            (entry, ))
            elif entry[1] not in constants.OOB_STATUSES:
                errs.append("health item '%s' has invalid status '%s'" %
                            tuple(entry))
        return errs
    if command == constants.OOB_POWER_STATUS:
        if not isinstance(payload, dict) or \
                constants.OOB_POWER_STATUS_POWERED not in payload:
            return ["power-status is expected to return a dict with"
                    " '%s' but got %r" % (constants.OOB_POWER_STATUS_POWERED,
                                          payload)]
        return []
    if payload is not None:
        return ["%s is expected to not return payload but got '%s'" %
                (command, payload)]
    return []


class LUOobCommand(NoHooksLU):
    """Run an out-of-band command for nodes; one result row per node:
    ``[(RS_NORMAL, name), (status, payload)]``."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        if self.op.node_names:
            pairs = [ExpandNodeUuidAndName(self.cfg, None, name)
                     for name in self.op.node_names]
            self.op.node_uuids = [uuid for uuid, _ in pairs]
            self.op.node_names = [name for _, name in pairs]
            wanted = self.op.node_uuids
        else:
            wanted = locking.ALL_SET
        self.needed_locks = {locking.LEVEL_NODE: wanted}

    def CheckPrereq(self) -> None:
        master = self.cfg.GetNodeInfo(self.cfg.GetMasterNode())
        if self.op.node_uuids:
            if self.op.command in _SKIP_MASTER and \
                    master.uuid in self.op.node_uuids:
                program = OobProgram(self.cfg, master)
                if program:
                    extra = ("run '%s %s %s' if you want to operate on the"
                             " master regardless" % (program, self.op.command,
                                                     master.name))
                else:
                    extra = "it does not support out-of-band operations"
                raise errors.OpPrereqError(
                    "Operating on the master node %s is not allowed for %s;"
                    " %s" % (master.name, self.op.command, extra),
                    errors.ECODE_INVAL)
            uuids = list(self.op.node_uuids)
        else:
            uuids = [uuid for uuid in self.cfg.GetNodeList()
                     if not (self.op.command in _SKIP_MASTER and
                             uuid == master.uuid)]
        self.nodes = sorted((self.cfg.GetNodeInfo(uuid) for uuid in uuids),
                            key=lambda node: utils.NiceSortKey(node.name))
        for node in self.nodes:
            if not self.op.ignore_status and \
                    self.op.command == constants.OOB_POWER_OFF and \
                    not node.offline:
                raise errors.OpPrereqError(
                    "Cannot power off node %s because it is not marked"
                    " offline" % node.name, errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        master_uuid = self.cfg.GetMasterNode()
        result = []
        for idx, node in enumerate(self.nodes):
            entry: list[tuple[int, Any]] = [(constants.RS_NORMAL, node.name)]
            result.append(entry)
            program = OobProgram(self.cfg, node)
            if not program:
                entry.append((constants.RS_UNAVAIL, None))
                continue
            logging.info("Executing out-of-band command '%s' using '%s' on"
                         " %s", self.op.command, program, node.name)
            answer = self.rpc.call_run_oob(master_uuid, program,
                                           self.op.command, node.name,
                                           self.op.timeout)
            if answer.fail_msg:
                self.LogWarning("Out-of-band RPC failed on node '%s': %s",
                                node.name, answer.fail_msg)
                entry.append((constants.RS_NODATA, None))
                continue
            errs = _PayloadErrors(self.op.command, answer.payload)
            if errs:
                self.LogWarning("Payload returned by node '%s' is not valid:"
                                " Check of out-of-band payload failed due to"
                                " %s", node.name, ", ".join(errs))
                entry.append((constants.RS_NODATA, None))
                continue
            self._Record(node, answer.payload, feedback_fn)
            entry.append((constants.RS_NORMAL, answer.payload))
            if self.op.command == constants.OOB_POWER_ON and \
                    idx < len(self.nodes) - 1:
                time.sleep(self.op.power_delay)
        return result

    def _Record(self, node: objects.Node, payload: Any,
                feedback_fn: Callable[[str], None]) -> None:
        """Log unhealthy items; keep the node's power state current."""
        command = self.op.command
        if command == constants.OOB_HEALTH:
            for item, status in payload:
                if status in (constants.OOB_STATUS_WARNING,
                              constants.OOB_STATUS_CRITICAL):
                    self.LogWarning("Item '%s' on node '%s' has status '%s'",
                                    item, node.name, status)
        elif command == constants.OOB_POWER_STATUS:
            powered = payload[constants.OOB_POWER_STATUS_POWERED]
            if powered != node.powered:
                logging.warning("Recorded power state (%s) of node '%s' does"
                                " not match actual power state (%s)",
                                node.powered, node.name, powered)
        elif command in (constants.OOB_POWER_ON, constants.OOB_POWER_OFF):
            node.powered = command == constants.OOB_POWER_ON
            self.cfg.Update(node, feedback_fn)
