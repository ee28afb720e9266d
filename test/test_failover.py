"""Replication, master voting and master failover on a real 5-node cluster.

Every node is a real noded process with its own root and loopback
address; nodes join with the key their noded printed. The tests kill
daemons outright and check that no job and no config change is lost.
"""

import os
import signal
import subprocess

import pytest

from ganeti import bootstrap, constants, jqueue, pathutils, serializer

from testutils_cluster import VirtualCluster, WaitFor, WaitForJob
from testutils_instance import RapiRequest, WriteRapiUsers

pytestmark = pytest.mark.integration

NODES = ["node%d.example.test" % i for i in range(2, 6)]
# A masterd that cannot win the vote gives up after 4 pauses; one that
# stops loses the jobs still running after its grace: both in a second,
# not the production waits (8 and 10 s)
_SHORT_WAITS = {bootstrap.ENV_VOTE_RETRY_DELAY: "0.25",
                jqueue.ENV_SHUTDOWN_TIMEOUT: "1"}


def _Master(cluster):
    """The node whose masterd runs (there must be exactly one)."""
    running = [node for node in cluster.nodes.values()
               if node.IsRunning("ganeti-masterd")]
    assert len(running) == 1, [node.name for node in running]
    return running[0]


def _Submit(node, *args: str) -> int:
    result = node.Run("gnt-debug", "delay", "--submit", "--print-jobid",
                      *args)
    return int(result.stdout.strip())


def _QueueFiles(node) -> dict[str, str]:
    """Live job files and serial of a node's queue copy."""
    queue = node.queue_dir
    files = {}
    for name in os.listdir(queue):
        if name.startswith("job-") or name == "serial":
            with open(os.path.join(queue, name), encoding="utf-8") as fobj:
                files[name] = fobj.read()
    return files


def _ConfigSerial(node) -> int | None:
    try:
        with open(node.NodePath(pathutils.CLUSTER_CONF_FILE),
                  encoding="utf-8") as fobj:
            return serializer.LoadJson(fobj.read())["serial_no"]
    except FileNotFoundError:
        return None


def _WaitSynced(master, nodes):
    """Until every given node's copies equal the master's."""
    def synced():
        want_queue, want_serial = _QueueFiles(master), _ConfigSerial(master)
        return all(_QueueFiles(node) == want_queue and
                   _ConfigSerial(node) == want_serial for node in nodes)
    WaitFor(synced, what="replication to %s" %
            ", ".join(node.name for node in nodes))


def _Tags(node) -> list[str]:
    return node.Run("gnt-cluster", "list-tags").stdout.split()


def _Build() -> VirtualCluster:
    cluster = VirtualCluster(env=_SHORT_WAITS)
    try:
        cluster.Init()
        for name in NODES:
            cluster.AddNode(name)
    except BaseException:
        cluster.Cleanup()
        raise
    return cluster


def _Restore(cluster) -> None:
    """Undo what a test did to the shared cluster: every noded running,
    the first node the master again, every copy synced with it."""
    for node in cluster.nodes.values():
        if not node.IsRunning("ganeti-noded"):
            node.StartNoded()
    if not cluster.IsRunning("ganeti-masterd"):
        master = _Master(cluster)
        _WaitSynced(master, [cluster])
        cluster.Run("gnt-cluster", "master-failover")
        # A new masterd sends single changes only to the nodes it has
        # resynchronised in full (masterd.replication); a test killing it
        # right after a change expects them to have that change
        for name in NODES:
            text = "Node %s resynchronised" % name
            WaitFor(lambda: cluster.Logged(constants.MASTERD, text),
                    what=text)
    _WaitSynced(_Master(cluster), list(cluster.nodes.values()))


@pytest.fixture(scope="module")
def shared_cluster():
    """A list holding the module's 5-node cluster (replaced by ``cluster``
    when it cannot be restored), cleaned up at the end."""
    holder = [_Build()]
    yield holder
    holder[0].Cleanup()


@pytest.fixture
def cluster(shared_cluster):
    """The shared 5-node cluster as built: node1 the master, the other four
    candidates with current copies. Building one per test costs more than
    failing the master back; one that cannot be restored (after a failed
    test) is replaced."""
    try:
        _Restore(shared_cluster[0])
    except (AssertionError, subprocess.TimeoutExpired):
        shared_cluster[0].Cleanup()
        shared_cluster[0] = _Build()
    return shared_cluster[0]


# Runs first: its own cluster, before the shared one starts its daemons
def test_two_node_failover_rapi_users_and_the_old_master():
    """What a user of the local cluster meets after a master failover."""
    cluster = VirtualCluster()
    try:
        cluster.Init()
        WriteRapiUsers(cluster)
        new = cluster.AddNode("node2.example.test")
        # The RAPI users go along with the other cluster files
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE),
                  encoding="utf-8") as fobj:
            users = fobj.read()
        with open(new.NodePath(pathutils.RAPI_USERS_FILE),
                  encoding="utf-8") as fobj:
            assert fobj.read() == users
        new.Run("gnt-cluster", "master-failover")
        status, job_id = RapiRequest(new, "PUT", "/2/redistribute-config")
        assert status == 200, job_id
        result = new.Run("gnt-cluster", "verify", check=False)
        assert "rapi/users" not in result.stdout + result.stderr
        # The old master names the new one and how to get there
        result = cluster.Run("gnt-node", "list", check=False)
        assert result.returncode == 1
        assert ("This is not the master node, please connect to node"
                " 'node2.example.test'") in result.stderr
        assert "GANETI_ROOTDIR=%s" % new.root in result.stderr
        # Restarting the old master's daemons leaves the master role alone,
        # quietly
        cluster.KillDaemon("ganeti-noded", signal.SIGTERM)
        result = cluster.Run("daemon-util", "start-all")
        assert result.stdout + result.stderr == ""
        assert cluster.IsRunning("ganeti-noded")
        assert not cluster.IsRunning("ganeti-masterd")
        assert not cluster.IsRunning("ganeti-rapi")
    finally:
        cluster.Cleanup()


def test_all_nodes_are_candidates_with_copies(cluster):
    master = _Master(cluster)
    assert master is cluster
    result = cluster.Run("gnt-node", "list", "--no-headers", "-o",
                         "name,role", "--separator=|")
    roles = dict(line.split("|") for line in result.stdout.splitlines())
    assert roles[cluster.name] == "M"
    assert all(roles[name] == "C" for name in NODES)
    cluster.Run("gnt-debug", "delay", "0.01")
    _WaitSynced(master, [cluster.nodes[name] for name in NODES])


def test_replication_catches_up_after_a_candidate_returns(cluster):
    victim = cluster.nodes[NODES[1]]
    victim.KillDaemon("ganeti-noded")
    job_ids = [_Submit(cluster, "0.01") for _ in range(5)]
    cluster.Run("gnt-cluster", "add-tags", "while-down")
    client = cluster.Luxi()
    for job_id in job_ids:
        assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
    assert "job-%d" % job_ids[-1] not in _QueueFiles(victim)
    others = [cluster.nodes[name] for name in NODES if name != victim.name]
    _WaitSynced(cluster, others)
    victim.StartNoded()
    _WaitSynced(cluster, [victim])


def test_failover_to_each_candidate_keeps_jobs_and_config(cluster):
    # Those of the tests before, on the shared cluster
    expected_tags = _Tags(cluster)
    finished = []
    for index, name in enumerate(NODES):
        old = _Master(cluster)
        tag = "before-" + name.split(".")[0]
        old.Run("gnt-cluster", "add-tags", tag)
        expected_tags.append(tag)
        finished.append(_Submit(old, "0.01"))
        WaitForJob(old.Luxi(), finished[-1])
        # A job still running when its master stops is lost; the old master
        # waits for it up to its shutdown grace (_SHORT_WAITS)
        running = _Submit(old, "30") if index == 0 else None
        queued = [_Submit(old, "0.01") for _ in range(2)]
        new = cluster.nodes[name]
        _WaitSynced(old, [new])
        new.Run("gnt-cluster", "master-failover")
        assert _Master(cluster) is new
        client = new.Luxi()
        if running is not None:
            assert WaitForJob(client, running) == constants.JOB_STATUS_ERROR
        for job_id in queued + finished:
            assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
        assert sorted(_Tags(new)) == sorted(expected_tags)
        assert new.Run("gnt-cluster", "getmaster").stdout.strip() == name
        # The old master's daemon refuses to come back
        result = old.StartMasterd(check=False)
        assert result.returncode != 0


def test_failover_after_the_master_dies(cluster):
    master = cluster
    master.Run("gnt-cluster", "add-tags", "last-words")
    job_id = _Submit(master, "0.01")
    WaitForJob(master.Luxi(), job_id)
    running = _Submit(master, "60")
    new = cluster.nodes[NODES[0]]
    _WaitSynced(master, [new])
    master.KillDaemon("ganeti-masterd", signal.SIGKILL)
    master.KillDaemon("ganeti-noded", signal.SIGKILL)
    result = new.Run("gnt-cluster", "master-failover")
    assert "could not stop the master daemon" in result.stdout
    assert _Master(cluster) is new
    client = new.Luxi()
    assert WaitForJob(client, running) == constants.JOB_STATUS_ERROR
    assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
    assert "last-words" in _Tags(new)
    info = client.QueryJobs([running], ["oplog", "opresult"])[0]
    assert constants.JOB_LOST_MESSAGE in serializer.DumpJson(info)
    # The old master comes back: its masterd must not start
    master.StartNoded()
    result = master.StartMasterd(check=False)
    assert result.returncode == constants.EXIT_NOTMASTER, result.stderr
    # ... and it catches up with the new master's state
    _WaitSynced(new, [master])


def test_stale_candidate_refuses_to_become_master(cluster):
    stale = cluster.nodes[NODES[3]]
    stale.KillDaemon("ganeti-noded")
    cluster.Run("gnt-cluster", "add-tags", "stale-misses-this")
    serial = _ConfigSerial(cluster)
    cluster.KillDaemon("ganeti-masterd", signal.SIGKILL)
    stale.StartNoded()
    result = stale.Run("gnt-cluster", "master-failover", check=False)
    assert result.returncode != 0
    assert "newer configuration" in result.stderr
    assert _ConfigSerial(stale) < serial
    # Nobody runs the master role; a fresh candidate can take it
    fresh = cluster.nodes[NODES[0]]
    fresh.Run("gnt-cluster", "master-failover")
    assert _Master(cluster) is fresh
    assert "stale-misses-this" in _Tags(fresh)


def test_masterd_refuses_without_a_majority(cluster):
    cluster.KillDaemon("ganeti-masterd", signal.SIGTERM)
    for name in NODES[:3]:
        cluster.nodes[name].KillDaemon("ganeti-noded")
    result = cluster.StartMasterd(check=False)
    assert result.returncode == constants.EXIT_NOTMASTER
    assert "Not enough nodes agree" in result.stderr
    result = cluster.StartMasterd("--no-voting", check=False)
    assert result.returncode != 0
    assert "--yes-do-it" in result.stderr
    cluster.StartMasterd("--no-voting", "--yes-do-it")
    assert _Master(cluster) is cluster
