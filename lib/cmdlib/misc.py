"""LUs for testing and miscellaneous operations."""

import os
import shutil
import socket
import tempfile
import time
from typing import Any, Callable

from ganeti import constants, errors, locking
from ganeti.cmdlib.base import (ExpandNodeUuidAndName, NoHooksLU,
                                ResultWithJobs)


class LUTestDelay(NoHooksLU):
    """Sleep on the master and/or nodes; used to test locking and the queue."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}
        if self.op.on_nodes:
            self.op.on_node_uuids = [
                ExpandNodeUuidAndName(self.cfg, None, name)[0]
                for name in self.op.on_nodes]
            if not self.op.no_locks:
                self.needed_locks[locking.LEVEL_NODE] = self.op.on_node_uuids

    def _TestDelay(self) -> None:
        if self.op.on_master:
            time.sleep(self.op.duration)
        if self.op.on_node_uuids:
            result = self.rpc.call_test_delay(self.op.on_node_uuids,
                                              self.op.duration)
            for node_uuid, node_result in result.items():
                node_result.Raise("Failure during rpc call to node %s" %
                                  node_result.node)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if self.op.repeat == 0:
            self._TestDelay()
            return
        top_value = self.op.repeat - 1
        for i in range(self.op.repeat):
            self.LogInfo("Test delay iteration %d/%d", i, top_value)
            self._TestDelay()


class LUTestJqueue(NoHooksLU):
    """Exercise the job queue as Ganeti's gnt-debug test-jobqueue expects.

    Each notification is a jqueue-test log entry ``[socket path, test,
    argument]``; the LU then waits for the client to connect to that Unix
    socket and to close the connection, so the client can check what the
    job looks like at that point (waiting for locks, running, logging).
    """

    REQ_BGL = False
    # The client must connect before WaitForJobChange would time out
    _CONNECT_TIMEOUT = 20.0
    _CONFIRM_TIMEOUT = 60.0

    def _Notify(self, error_class: type[errors.GenericError], test: str,
                arg: Any) -> None:
        tmpdir = tempfile.mkdtemp(prefix="ganeti-jqtest-")
        path = os.path.join(tmpdir, "sock")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.bind(path)
                sock.listen(1)
                self.LogEntry(constants.ELOG_JQUEUE_TEST, (path, test, arg))
                sock.settimeout(self._CONNECT_TIMEOUT)
                try:
                    conn, _ = sock.accept()
                except OSError as err:
                    raise error_class("Client didn't connect in time (%s)"
                                      % err) from None
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
        with conn:
            conn.settimeout(self._CONFIRM_TIMEOUT)
            try:
                conn.recv(1)
            except OSError as err:
                raise error_class("Client failed to confirm notification"
                                  " (%s)" % err) from None

    def ExpandNames(self) -> None:
        if self.op.notify_waitlock:
            self._Notify(errors.OpPrereqError, constants.JQT_EXPANDNAMES,
                         None)
        self.LogInfo("Expanding names")
        # A lock only to have one to wait for
        self.needed_locks = {locking.LEVEL_NODE: [self.cfg.GetMasterNode()]}

    def Exec(self, feedback_fn: Callable[..., None]) -> bool:
        if self.op.notify_exec:
            self._Notify(errors.OpExecError, constants.JQT_EXEC, None)
        self.LogInfo("Executing")
        if self.op.log_messages:
            self._Notify(errors.OpExecError, constants.JQT_STARTMSG,
                         len(self.op.log_messages))
            for idx, msg in enumerate(self.op.log_messages):
                self.LogInfo("Sending log message %s", idx + 1)
                feedback_fn(constants.JQT_MSGPREFIX + msg)
                self._Notify(errors.OpExecError, constants.JQT_LOGMSG,
                             idx + 1)
        if self.op.fail:
            raise errors.OpExecError("Opcode failure was requested")
        return True


class LUTestOsParams(NoHooksLU):
    """Show the secret OS parameters in the job log (their transport from
    the client to the LU is what is tested)."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if not self.op.osparams_secret:
            raise errors.OpExecError("Opcode needs secret parameters")
        feedback_fn("Secret OS parameters: %s" % self.op.osparams_secret)


class LUTestDummy(NoHooksLU):
    """Log the given messages, then fail, submit jobs or return the result
    as asked."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> Any:
        for message in self.op.messages or []:
            feedback_fn(str(message))
        if self.op.fail:
            raise errors.OpExecError("Opcode failure was requested")
        if self.op.submit_jobs:
            return ResultWithJobs(self.op.submit_jobs)
        return self.op.result


class LURepairCommand(NoHooksLU):
    """Run a node's white-listed repair command (ganeti-maintd's
    live-repair); the command's output is the result."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, None, self.op.node_name)
        self.needed_locks = {locking.LEVEL_NODE: [self.node_uuid]}

    def CheckPrereq(self) -> None:
        if self.cfg.GetNodeInfo(self.node_uuid).offline:
            raise errors.OpPrereqError("Node %s is offline" %
                                       self.op.node_name, errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        feedback_fn("Running the repair command %s on %s" %
                    (self.op.command, self.op.node_name))
        result = self.rpc.call_repair_command(self.node_uuid, self.op.command,
                                              self.op.input)
        result.Raise("Repair command %s failed on node %s" %
                     (self.op.command, self.op.node_name))
        return result.payload
