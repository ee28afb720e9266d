"""Replacing one node's copy of a drbd disk while it is written to (the
storage side of replace-disks -s/-p), on a pair of real QEMU daemons."""

import os
import threading

from test_storage_drbd import SIZE, _Contents, _Write
import test_storage_drbd as drbd_tests

pytestmark = drbd_tests.pytestmark
# The storage tests' pair of nodes and their ports
pair = drbd_tests.pair
unused_port_range = drbd_tests.unused_port_range


class _Writer(threading.Thread):
    """Writes through a device until stopped; keeps its first error."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.passes = 0
        self.error = None
        self.stop = threading.Event()

    def run(self):
        try:
            while not self.stop.is_set():
                _Write(self.path, self.passes % (SIZE - 4), 4,
                       "pass %d" % self.passes)
                self.passes += 1
        except OSError as err:
            self.error = err


def test_replace_both_sides_while_writing(pair):
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    writer = _Writer(pair.Dev("pnode").device)
    writer.start()
    try:
        for _ in range(2):
            old = os.stat(pair.Image("snode")).st_ino
            pair.Call("pnode", "DisconnectPeer")
            assert pair.Status()[2]
            pair.Call("snode", "ReplaceImage", False)
            pair.Call("pnode", "Assemble")
            pair.WaitInSync()
            assert os.stat(pair.Image("snode")).st_ino != old
            pair.Call("snode", "RemoveReplaced")

            old = os.stat(pair.Image("pnode")).st_ino
            pair.Call("pnode", "ReplaceImage", True)
            pair.Call("pnode", "Assemble")
            pair.WaitInSync()
            assert os.stat(pair.Image("pnode")).st_ino != old
            pair.Call("pnode", "RemoveReplaced")
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error
    assert writer.passes > 0
    assert pair.Call("pnode", "Attach")
    pair.Call("pnode", "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))
    assert not [path for path in pair.Files()
                if path.endswith((".new", ".replaced"))]
