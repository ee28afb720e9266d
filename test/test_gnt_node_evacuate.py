"""gnt-node evacuate and /2/nodes/[node]/evacuate on a real three-node
virtual cluster (fake hypervisor).

No template has secondary nodes here, so an evacuation moves the node's
primary instances, each by a follow-up job, to the node given with ``-n``
(there is no instance allocator): externally mirrored ones migrate when
running and fail over when stopped, ``file`` ones are moved (the fake
hypervisor can't copy disks during a migration). A running fake instance
is a state file in its node's FAKE_HV_DIR, so the tests see where each
instance really runs.
"""

import os

import pytest

from ganeti import constants, pathutils

from testutils_cluster import NoDefaultIAllocator
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, NODE3,
                                ADMIN, DiskPaths, FakeState, Fail, Field,
                                InstanceCluster, RapiClient,
                                RemoveInstances)

pytestmark = pytest.mark.integration

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
HOOK_RECORD = "evacuate-hook.env"


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=diskless,file,sharedfile",
                         file_paths=(FILE_VDIR, SHARED_VDIR),
                         rapi_users=True) as cluster:
        os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
        hooks = cluster.NodePath(os.path.join(pathutils.HOOKS_BASE_DIR,
                                              "node-evacuate-post.d"))
        os.makedirs(hooks)
        script = os.path.join(hooks, "10-record")
        with open(script, "w", encoding="ascii") as fobj:
            fobj.write("#!/bin/sh\nenv > %s\n" % cluster.Path(HOOK_RECORD))
        os.chmod(script, 0o755)
        yield cluster


def _Add(cluster, name, node, *extra, template="diskless"):
    """A small instance without OS, its group's policy ignored."""
    cluster.Run("gnt-instance", "add", "-t", template, "-n", node,
                "--no-install", "--ignore-ipolicy", "-B", "memory=64",
                *extra, *CHECKS, name)


def _RunsOn(cluster, name):
    """The nodes whose fake hypervisor runs the instance."""
    return sorted(node for node in cluster.nodes
                  if os.path.exists(FakeState(cluster.nodes[node], name)))


def _HookEnv(cluster):
    with open(cluster.Path(HOOK_RECORD), encoding="ascii") as fobj:
        return dict(line.split("=", 1) for line in fobj.read().splitlines()
                    if "=" in line)


def test_evacuate_primaries(vc):
    names = ("ev-mig", "ev-fo", "ev-mv")
    _Add(vc, "ev-mig", NODE2)
    _Add(vc, "ev-fo", NODE2, "--no-start", "--disk", "0:size=4M",
         template="sharedfile")
    _Add(vc, "ev-mv", NODE2, "--disk", "0:size=4M", template="file")
    try:
        (old_file, ) = DiskPaths(vc, "ev-mv", NODE2)
        assert os.path.exists(old_file)
        result = vc.Run("gnt-node", "evacuate", "-f", "-n", NODE3, NODE2)
        assert "All instances evacuated successfully." in result.stdout, \
            result.stdout
        # One job per instance, each the fitting operation
        jobs = vc.Run("gnt-job", "list", "--no-headers", "-o",
                      "summary").stdout
        for summary in ("INSTANCE_MIGRATE(ev-mig)",
                        "INSTANCE_FAILOVER(ev-fo)", "INSTANCE_MOVE(ev-mv)",
                        "NODE_EVACUATE(%s)" % NODE2):
            assert summary in jobs, jobs
        assert Field(vc, "ev-mig", "pnode,status") == "%s|running" % NODE3
        assert Field(vc, "ev-fo", "pnode,status") == \
            "%s|ADMIN_down" % NODE3
        assert Field(vc, "ev-mv", "pnode,status") == "%s|running" % NODE3
        assert _RunsOn(vc, "ev-mig") == [NODE3]
        assert _RunsOn(vc, "ev-fo") == []
        assert _RunsOn(vc, "ev-mv") == [NODE3]
        assert not os.path.exists(old_file)
        assert all(map(os.path.exists, DiskPaths(vc, "ev-mv", NODE3)))
        env = _HookEnv(vc)
        assert env["GANETI_NODE_NAME"] == NODE2
        assert env["GANETI_EVAC_MODE"] == constants.NODE_EVAC_ALL
        assert env["GANETI_REMOTE_NODE"] == NODE3
        assert env["GANETI_HOOKS_PATH"] == "node-evacuate"

        result = vc.Run("gnt-node", "evacuate", "-f", "-n", NODE1, NODE2)
        assert "No instances to evacuate on node(s) %s, exiting." % NODE2 \
            in result.stderr, result.stderr
        # No secondaries anywhere: nothing to do either
        result = vc.Run("gnt-node", "evacuate", "-f", "-s", NODE3)
        assert "No instances to evacuate on node(s) %s" % NODE3 in \
            result.stderr, result.stderr
        assert Field(vc, "ev-mig", "pnode") == NODE3

        # Back with --primary-only; a failed move is counted
        vc.Run("gnt-instance", "stop", "ev-mig")
        vc.Run("gnt-instance", "startup", "ev-fo")
        open(FakeState(vc.nodes[NODE1], ".fail-accept"), "w").close()
        try:
            result = vc.Run("gnt-node", "evacuate", "-f", "-p", "-n", NODE1,
                            NODE3, check=False)
        finally:
            os.unlink(FakeState(vc.nodes[NODE1], ".fail-accept"))
        assert result.returncode == constants.EXIT_FAILURE
        assert "There were 1 errors during the evacuation." in \
            result.stdout, result.stdout
        assert Field(vc, "ev-fo", "pnode,status") == "%s|running" % NODE3
        assert _RunsOn(vc, "ev-fo") == [NODE3]
        assert Field(vc, "ev-mig", "pnode,status") == \
            "%s|ADMIN_down" % NODE1
        assert Field(vc, "ev-mv", "pnode,status") == "%s|running" % NODE1
        assert _HookEnv(vc)["GANETI_EVAC_MODE"] == constants.NODE_EVAC_PRI
    finally:
        RemoveInstances(vc, *names)


def test_refusals(vc):
    _Add(vc, "ref1", NODE2)
    try:
        with NoDefaultIAllocator(vc):
            out = Fail(vc, "gnt-node", "evacuate", "-f", NODE2)
        assert "No iallocator or node given" in out, out
        for args, message in [
                (("-I", "hail"), "iallocator module 'hail' not found"),
                (("-n", NODE2), "Can not use evacuated node %s as the"
                 " target node" % NODE2),
                (("-n", "nosuchnode"), "Node 'nosuchnode' not known"),
                (("-p", "-s", "-n", NODE3),
                 "Only one of the --primary-only and --secondary-only")]:
            out = Fail(vc, "gnt-node", "evacuate", "-f", *args, NODE2)
            assert message in out, (args, out)
        vc.Run("gnt-node", "modify", "-D", "yes", NODE3)
        try:
            out = Fail(vc, "gnt-node", "evacuate", "-f", "-n", NODE3, NODE2)
            assert "Can't use drained node %s" % NODE3 in out, out
        finally:
            vc.Run("gnt-node", "modify", "-D", "no", NODE3)
        # A dry run checks only
        vc.Run("gnt-node", "evacuate", "-f", "--dry-run", "-n", NODE3, NODE2)
        assert Field(vc, "ref1", "pnode,status") == "%s|running" % NODE2
        assert _RunsOn(vc, "ref1") == [NODE2]
    finally:
        RemoveInstances(vc, "ref1")


def test_rapi_evacuate(vc):
    _Add(vc, "rev1", NODE1)
    client = RapiClient(vc, ADMIN)
    try:
        assert "node-evac-res1" in client.GetFeatures()
        job_id = client.EvacuateNode(NODE1, remote_node=NODE2,
                                     mode=constants.NODE_EVAC_PRI)
        assert client.WaitForJobCompletion(job_id, period=0.2, retries=300)
        result = client.GetJobStatus(job_id)["opresult"][0]
        ((submitted, follow_up), ) = result["jobs"]
        assert submitted is True
        assert client.WaitForJobCompletion(follow_up, period=0.2,
                                           retries=300)
        assert Field(vc, "rev1", "pnode,status") == "%s|running" % NODE2
        assert _RunsOn(vc, "rev1") == [NODE2]
    finally:
        RemoveInstances(vc, "rev1")
