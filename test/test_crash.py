"""The crash test: daemons killed with SIGKILL at random points under a
multi-client job load, then restarted; every acknowledged job must be
accounted for (finished or failed by the kill, never lost, never run
twice), the job and configuration files valid and ``gnt-cluster verify``
clean. ``--seed`` and ``--rounds`` (conftest) make longer runs.
"""

import glob
import json
import os
import re
import time

import pytest

from ganeti import pathutils

from testutils_crash import CrashLoad, RestartMasterd
from testutils_instance import CHECKS, FILE_VDIR, NODE2, InstanceCluster
from testutils_cluster import SMALL_IPOLICY_BOUNDS

pytestmark = pytest.mark.integration

_CLIENTS = 3
_JOBS_PER_ROUND = 40


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         nodes=(NODE2, )) as cluster:
        yield cluster


def _CheckFiles(vc):
    """Every job file and every copy of the configuration parses; no
    temporary file outlives the write it belongs to (jobs submitted but
    not acknowledged before a kill may still be running)."""
    for node in vc.nodes.values():
        for path in glob.glob(os.path.join(node.queue_dir, "job-*")):
            try:
                with open(path, encoding="utf-8") as fobj:
                    json.load(fobj)
            except FileNotFoundError:
                # Archived since the listing (by a job that finished)
                continue
        with open(node.NodePath(pathutils.CLUSTER_CONF_FILE),
                  encoding="utf-8") as fobj:
            json.load(fobj)
    deadline = time.monotonic() + 10
    while glob.glob(os.path.join(vc.queue_dir, ".*.tmp")):
        assert time.monotonic() < deadline, os.listdir(vc.queue_dir)
        time.sleep(0.1)


def _VerifyClean(vc, timeout=20.0):
    """gnt-cluster verify without errors or orphans (copies converge)."""
    deadline = time.monotonic() + timeout
    while True:
        result = vc.Run("gnt-cluster", "verify", check=False)
        if result.returncode == 0 and "is unknown" not in result.stdout:
            return
        if time.monotonic() > deadline:
            raise AssertionError(result.stdout + result.stderr)
        time.sleep(1)


def _Assert(accounting):
    assert accounting.lost == [] and accounting.duplicated == [] and \
        accounting.failed == [], accounting
    assert accounting.finished > 0, accounting


def _RunRounds(vc, crash_rng, kill, name):
    rng, rounds = crash_rng
    for round_no in range(rounds):
        load = CrashLoad(vc, "%s%d" % (name, round_no), _JOBS_PER_ROUND,
                         _CLIENTS)
        load.Start()
        time.sleep(rng.uniform(0.1, 1.0))
        kill()
        load.Stop()
        _Assert(load.Account())
        _CheckFiles(vc)
    _VerifyClean(vc)


def test_masterd_killed_under_load(vc, crash_rng):
    _RunRounds(vc, crash_rng, lambda: RestartMasterd(vc), "masterd")


def test_candidate_noded_killed_under_load(vc, crash_rng):
    node2 = vc.nodes[NODE2]

    def kill():
        node2.KillDaemon("ganeti-noded")
        time.sleep(0.3)
        node2.StartNoded()

    _RunRounds(vc, crash_rng, kill, "noded")


def test_primary_noded_killed_during_creation(vc, crash_rng):
    rng, rounds = crash_rng
    node2 = vc.nodes[NODE2]
    for round_no in range(rounds):
        name = "crash%d" % round_no
        result = vc.Run("gnt-instance", "add", "--submit", "-t", "file",
                        "--disk", "0:size=8M", "-o", "tinyimage", "-n", NODE2,
                        "--no-start", *CHECKS, name)
        job_id = re.findall(r"\d+", result.stdout + result.stderr)[-1]
        time.sleep(rng.uniform(0.0, 1.0))
        node2.KillDaemon("ganeti-noded")
        result = vc.Run("gnt-job", "watch", job_id, check=False)
        node2.StartNoded()
        if name in vc.Run("gnt-instance", "list", "--no-headers",
                          "-o", "name").stdout.split():
            vc.Run("gnt-instance", "remove", "-f", name)
        # A creation whose disks could not be removed left its record: the
        # next start of the master daemon finishes the roll-back
        RestartMasterd(vc)
        _CheckFiles(vc)
        _VerifyClean(vc)
        assert not glob.glob(node2.NodePath(FILE_VDIR) + "/%s/*" % name)
