"""The test clusters' own clean-up: nothing they started outlives them."""

import os
import subprocess
import sys

import pytest

from ganeti.utils import process

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.unit


def test_cleanup_stops_processes_running_from_the_cluster():
    """Like a drbd block daemon left by a test: a process whose command
    line names the cluster's files is stopped, even if it ignores
    SIGTERM, and the files are removed."""
    cluster = VirtualCluster()
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time\n"
         "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
         "print('ready', flush=True)\ntime.sleep(60)\n",
         os.path.join(cluster.base, "d11000.qmp")],
        stdout=subprocess.PIPE, text=True)
    polite = subprocess.Popen([sys.executable, "-c",
                               "import time; time.sleep(60)", cluster.base])
    try:
        assert stubborn.stdout.readline() == "ready\n"
        cluster.Cleanup()
        assert stubborn.wait(1) == -9 and polite.wait(1) == -15
        assert not os.path.exists(cluster.base)
    finally:
        for proc in (stubborn, polite):
            if process.IsProcessAlive(proc.pid):
                proc.kill()
            proc.wait()
