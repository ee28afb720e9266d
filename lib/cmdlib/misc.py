"""LUs for testing and miscellaneous operations."""

import time
from typing import Callable

from ganeti import locking
from ganeti.cmdlib.base import ExpandNodeUuidAndName, NoHooksLU


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
