"""Hooks: the environment, the node-side runner and real clusters.

The runner (backend_hooks.RunHooks) runs real scripts in temporary directories;
HooksMaster is driven with RPC results as noded sends them; LUs run
in-process with the recording FakeRpc; and a two-node virtual cluster runs
hook scripts through real noded processes, below each node's root.
"""

import os
import time

import pytest

from ganeti import constants, errors, opcodes, pathutils
from ganeti.backend import hooks as backend_hooks
from ganeti.hooksmaster import HooksMaster
from ganeti.rpc.client import RpcResult

from testutils_cluster import SMALL_IPOLICY_BOUNDS, VirtualCluster
from testutils_cmdlib import MakeContext
from testutils_instance import CHECKS, NODE1, NODE2

pytestmark = pytest.mark.integration

MASTER = NODE1
CLUSTER = "cluster.example.test"


def _Script(path, body, mode=0o755):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fobj:
        fobj.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, mode)


def _ReadEnv(path):
    with open(path, encoding="utf-8") as fobj:
        return dict(line.rstrip("\n").split("=", 1) for line in fobj
                    if "=" in line)


# The node side --------------------------------------------------------------

def test_runner_order_names_and_environment(tmp_path):
    hooks = tmp_path / "hooks" / "group-add-pre.d"
    record = tmp_path / "record"
    _Script(str(hooks / "20-second"),
            "echo second >> %s; env > %s.env; pwd > %s.cwd; echo out; "
            "echo err >&2" % (record, record, record))
    _Script(str(hooks / "10_first"), "echo first >> %s" % record)
    # Skipped: a dot in the name, not executable, a directory, hidden
    _Script(str(hooks / "30-x.sh"), "echo bad >> %s; exit 1" % record)
    _Script(str(hooks / "40-noexec"), "echo bad >> %s; exit 1" % record,
            mode=0o644)
    os.makedirs(hooks / "50-dir")
    _Script(str(hooks / ".60-hidden"), "echo bad >> %s; exit 1" % record)
    env = {"PATH": constants.HOOKS_PATH, "GANETI_FOO": "bar baz"}
    results = backend_hooks.RunHooks("group-add", "pre", env,
                                     base_dir=str(tmp_path / "hooks"))
    assert results == [
        ["group-add-pre.d/10_first", constants.HKR_SUCCESS, ""],
        ["group-add-pre.d/20-second", constants.HKR_SUCCESS, "out\nerr"],
        ["group-add-pre.d/30-x.sh", constants.HKR_SKIP, ""],
        ["group-add-pre.d/40-noexec", constants.HKR_SKIP, ""],
        ["group-add-pre.d/50-dir", constants.HKR_SKIP, ""],
    ]
    assert record.read_text() == "first\nsecond\n"
    seen = _ReadEnv(str(record) + ".env")
    # Exactly what the master sent (the shell adds only its own PWD etc.)
    assert seen["GANETI_FOO"] == "bar baz"
    assert seen["PATH"] == constants.HOOKS_PATH
    assert not {"HOME", "GANETI_ROOTDIR", "PYTEST_CURRENT_TEST"} & set(seen)
    assert (tmp_path / "record.cwd").read_text() == "/\n"


def test_runner_failures_and_missing_directory(tmp_path):
    base = str(tmp_path)
    assert backend_hooks.RunHooks("node-add", "post", {}, base_dir=base) == []
    _Script(os.path.join(base, "node-add-post.d", "10-fail"),
            "echo 'no way'; exit 3")
    _Script(os.path.join(base, "node-add-post.d", "20-silent"), "exit 1")
    _Script(os.path.join(base, "node-add-post.d", "30-ok"), "true")
    assert backend_hooks.RunHooks("node-add", "post", {}, base_dir=base) == [
        ["node-add-post.d/10-fail", constants.HKR_FAIL, "no way"],
        ["node-add-post.d/20-silent", constants.HKR_FAIL, ""],
        ["node-add-post.d/30-ok", constants.HKR_SUCCESS, ""],
    ]
    # Executable but not runnable (no interpreter line)
    path = os.path.join(base, "node-add-post.d", "40-garbage")
    with open(path, "wb") as fobj:
        fobj.write(b"\x7fELF\x00garbage")
    os.chmod(path, 0o755)
    script, status, output = backend_hooks.RunHooks("node-add", "post", {},
                                                    base_dir=base)[-1]
    assert (script, status) == ("node-add-post.d/40-garbage",
                                constants.HKR_FAIL)
    assert output.startswith("Hook script execution error:")


def test_runner_timeouts_kill_the_script_and_its_children(tmp_path):
    base = str(tmp_path)
    pid_file = tmp_path / "child.pid"
    # The child keeps the output pipe open: only killing it ends the wait
    _Script(os.path.join(base, "group-add-pre.d", "10-slow"),
            "echo started; sleep 30 & echo $! > %s; wait" % pid_file)
    _Script(os.path.join(base, "group-add-pre.d", "20-next"), "echo next")
    start = time.monotonic()
    results = backend_hooks.RunHooks("group-add", "pre",
                                     {"PATH": "/bin:/usr/bin"},
                                     base_dir=base, script_timeout=0.5)
    assert time.monotonic() - start < 5
    assert results == [
        ["group-add-pre.d/10-slow", constants.HKR_FAIL,
         "started\n(timed out after 0.5 seconds)"],
        ["group-add-pre.d/20-next", constants.HKR_SUCCESS, "next"],
    ]
    child = int(pid_file.read_text())
    for _ in range(50):
        if not os.path.exists("/proc/%d" % child) or \
                open("/proc/%d/stat" % child).read().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError("child %d of the hook survived" % child)


def test_runner_phase_budget_fails_the_remaining_scripts(tmp_path):
    base = str(tmp_path)
    _Script(os.path.join(base, "node-remove-pre.d", "10-slow"), "sleep 1")
    _Script(os.path.join(base, "node-remove-pre.d", "20-late"), "true")
    results = backend_hooks.RunHooks("node-remove", "pre", {"PATH": "/bin"},
                                     base_dir=base, phase_timeout=0.3)
    assert results[0][1:] == [constants.HKR_FAIL,
                              "(timed out after 0.3 seconds)"]
    assert results[1] == ["node-remove-pre.d/20-late", constants.HKR_FAIL,
                          "Not run: the hooks of this phase took longer"
                          " than 0.3 seconds"]


@pytest.mark.parametrize("args, message", [
    (("../etc", "pre", {}), "Invalid hooks path '../etc'"),
    (("node-add", "later", {}), "Unknown hooks phase 'later'"),
    (("node-add", "pre", {"GANETI_X": 1}), "Invalid hooks environment"),
    (("node-add", "pre", {"A=B": "c"}), "Invalid hooks environment"),
    (("node-add", "pre", ["GANETI_X"]), "Invalid hooks environment"),
])
def test_hooks_runner_refuses_bad_arguments(args, message):
    with pytest.raises(errors.GenericError, match=message.replace(".", r"\.")):
        backend_hooks.hooks_runner(*args)


# The master side ------------------------------------------------------------

class _Recorder:
    """hooks_runner stand-in: records the calls, answers from a table."""

    def __init__(self, answers=None):
        self.calls = []
        self.answers = answers or {}

    def __call__(self, nodes, hpath, phase, env):
        self.calls.append((list(nodes), hpath, phase, env))
        result = {}
        for node in nodes:
            answer = self.answers.get((node, phase), [])
            if isinstance(answer, RpcResult):
                result[node] = answer
            else:
                result[node] = RpcResult(data=[True, answer],
                                         call="hooks_runner",
                                         node=node + ".example.test")
        return result


def _Master(runner, env_fn, nodes=(["n1"], ["n1", "n2"]), logs=None,
            **kwargs):
    def _Log(msg, *args):
        logs.append(msg % args if args else msg)
    return HooksMaster("OP_GROUP_ADD", "group-add", nodes, runner, env_fn,
                       _Log, constants.HTYPE_GROUP, CLUSTER, MASTER,
                       **kwargs)


def test_environment_of_both_phases():
    state = {"NAME": "old", "SIZE": 1}
    runner = _Recorder()
    master = _Master(runner, lambda: dict(state))
    master.RunPhase(constants.HOOKS_PHASE_PRE)
    state.update(NAME="new", SIZE=2)
    master.RunPhase(constants.HOOKS_PHASE_POST)
    (pre_nodes, hpath, phase, pre_env), (post_nodes, _, _, post_env) = \
        runner.calls
    assert (pre_nodes, post_nodes, hpath, phase) == \
        (["n1"], ["n1", "n2"], "group-add", "pre")
    base = {
        "PATH": constants.HOOKS_PATH,
        "GANETI_HOOKS_VERSION": "2",
        "GANETI_OP_CODE": "OP_GROUP_ADD",
        "GANETI_DATA_DIR": "/var/lib/ganeti",
        "GANETI_HOOKS_PATH": "group-add",
        "GANETI_OBJECT_TYPE": "GROUP",
        "GANETI_CLUSTER": CLUSTER,
        "GANETI_MASTER": MASTER,
    }
    assert pre_env == dict(base, GANETI_HOOKS_PHASE="pre",
                           GANETI_NAME="old", GANETI_SIZE="1")
    # Post scripts see the values from before and after the operation
    assert post_env == dict(base, GANETI_HOOKS_PHASE="post",
                            GANETI_NAME="old", GANETI_SIZE="1",
                            GANETI_POST_NAME="new", GANETI_POST_SIZE="2")


def test_environment_keys_are_checked():
    with pytest.raises(errors.ProgrammerError, match="without prefix"):
        _Master(_Recorder(), lambda: {"GANETI_NAME": "x"})
    master = _Master(_Recorder(), lambda: {"HOOKS_PATH": "x"})
    with pytest.raises(errors.ProgrammerError,
                       match="GANETI_HOOKS_PATH are reserved"):
        master.RunPhase(constants.HOOKS_PHASE_PRE)


def test_failing_pre_hooks_abort_naming_node_and_script():
    runner = _Recorder({
        ("n1", "pre"): [["group-add-pre.d/10-ok", constants.HKR_SUCCESS, ""],
                        ["group-add-pre.d/20-no", constants.HKR_FAIL,
                         "denied"]],
        ("n2", "pre"): [["group-add-pre.d/10-x", constants.HKR_FAIL, ""],
                        ["group-add-pre.d/x.sh", constants.HKR_SKIP, ""]],
        ("n3", "pre"): RpcResult(data="connection refused", failed=True,
                                 call="hooks_runner", node="n3.example.test"),
        ("n4", "pre"): RpcResult(offline=True, call="hooks_runner",
                                 node="n4.example.test"),
    })
    logs = []
    master = _Master(runner, dict, nodes=(["n1", "n2", "n3", "n4"], []),
                     logs=logs)
    with pytest.raises(errors.HooksAbort) as info:
        master.RunPhase(constants.HOOKS_PHASE_PRE)
    assert info.value.args[0] == [
        ("n1.example.test", "group-add-pre.d/20-no", "denied"),
        ("n2.example.test", "group-add-pre.d/10-x", ""),
    ]
    # An unreachable node vetoes nothing; it is only reported
    assert logs == ["Communication failure to node n3.example.test:"
                    " connection refused"]
    # No post nodes: nothing runs
    assert master.RunPhase(constants.HOOKS_PHASE_POST) is None
    assert len(runner.calls) == 1


def test_failing_post_hooks_are_only_reported():
    runner = _Recorder({
        ("n2", "post"): [["group-add-post.d/10-no", constants.HKR_FAIL, ""],
                         ["group-add-post.d/20-no", constants.HKR_FAIL,
                          "bad"]],
    })
    logs = []
    master = _Master(runner, dict, logs=logs,
                     prepare_post_nodes_fn=lambda nodes: nodes + ["n2"])
    results = master.RunPhase(constants.HOOKS_PHASE_POST)
    assert sorted(results) == ["n1", "n2"]
    assert runner.calls[0][0] == ["n1", "n2"]
    assert logs == [
        "On n2.example.test script group-add-post.d/10-no failed, output:"
        " (no output)",
        "On n2.example.test script group-add-post.d/20-no failed, output:"
        " bad",
    ]


def test_no_answer_at_all():
    master = _Master(lambda *args: {}, dict)
    with pytest.raises(errors.HooksFailure, match="Communication Failure"):
        master.RunPhase(constants.HOOKS_PHASE_PRE)


# LUs, in-process ------------------------------------------------------------

def _GroupNames(ctx):
    return {group.name for group in ctx.cfg.GetAllNodeGroupsInfo().values()}


def _HookCalls(ctx):
    return [call for call in ctx.rpc.calls if call[0] == "hooks_runner"]


def test_lu_hooks_and_a_veto(tmp_path):
    ctx = MakeContext(tmp_path)
    master_uuid = ctx.cfg.GetMasterNode()
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    (_, pre_nodes, hpath, phase, env), post = _HookCalls(ctx)
    assert (pre_nodes, hpath, phase) == ((master_uuid,), "group-add", "pre")
    assert env["GANETI_GROUP_NAME"] == "rack1"
    assert env["GANETI_OBJECT_TYPE"] == "GROUP"
    assert env["GANETI_OP_CODE"] == "OP_GROUP_ADD"
    assert post[3] == "post" and post[4]["GANETI_POST_GROUP_NAME"] == "rack1"

    ctx.rpc.calls.clear()
    ctx.rpc.answers[("hooks_runner", master_uuid)] = [
        ["group-add-pre.d/50-deny", constants.HKR_FAIL, "no more groups"]]
    with pytest.raises(errors.HooksAbort) as info:
        ctx.Run(opcodes.OpGroupAdd(group_name="rack2"))
    assert info.value.args[0] == [(MASTER, "group-add-pre.d/50-deny",
                                   "no more groups")]
    assert "rack2" not in _GroupNames(ctx)
    assert [call[3] for call in _HookCalls(ctx)] == ["pre"]


def test_dry_run_runs_only_pre_hooks(tmp_path):
    ctx = MakeContext(tmp_path)
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1", dry_run=True))
    assert [call[3] for call in _HookCalls(ctx)] == ["pre"]
    assert "rack1" not in _GroupNames(ctx)


def test_no_hooks_lus_make_no_calls(tmp_path):
    ctx = MakeContext(tmp_path)
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    ctx.rpc.calls.clear()
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="rack1", nodes=[MASTER]))
    assert _HookCalls(ctx) == []


def test_group_rename_runs_on_master_and_members(tmp_path):
    ctx = MakeContext(tmp_path)
    n2 = ctx.NewNode(NODE2, "127.0.0.2")
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    ctx.NewNode("node3.example.test", "127.0.0.3",
                group=ctx.cfg.LookupNodeGroup("rack1"))
    ctx.rpc.calls.clear()
    ctx.Run(opcodes.OpGroupRename(group_name="default", new_name="main"))
    (_, nodes, _, _, env), _ = _HookCalls(ctx)
    assert nodes == (ctx.cfg.GetMasterNode(), n2)
    assert (env["GANETI_OLD_NAME"], env["GANETI_NEW_NAME"]) == \
        ("default", "main")


def test_node_remove_runs_post_hooks_on_the_leaving_node(tmp_path,
                                                        monkeypatch):
    ctx = MakeContext(tmp_path, monkeypatch)
    master_uuid = ctx.cfg.GetMasterNode()
    n2 = ctx.NewNode(NODE2, "127.0.0.2")
    ctx.rpc.answers[("hooks_runner", n2)] = [
        ["node-remove-post.d/10-no", constants.HKR_FAIL, "bye"]]
    messages = []
    ctx.Run(opcodes.OpNodeRemove(node_name=NODE2), messages)
    assert [(call[1], call[3]) for call in _HookCalls(ctx)] == [
        ((master_uuid,), "pre"), ((n2,), "post"), ((master_uuid,), "post")]
    assert _HookCalls(ctx)[0][4]["GANETI_NODE_NAME"] == NODE2
    assert any("On %s script node-remove-post.d/10-no failed, output: bye" %
               NODE2 in msg for msg in messages), messages
    assert ctx.Node(NODE2) is None


def test_cluster_destroy_runs_post_hooks_on_the_master(tmp_path):
    ctx = MakeContext(tmp_path)
    assert ctx.Run(opcodes.OpClusterDestroy()) == MASTER
    (_, nodes, hpath, phase, env), = _HookCalls(ctx)
    assert (nodes, hpath, phase) == ((ctx.cfg.GetMasterNode(),),
                                     "cluster-destroy", "post")
    assert env["GANETI_POST_OP_TARGET"] == CLUSTER


# A real cluster -------------------------------------------------------------

def _HooksDir(node, hpath, phase):
    return os.path.join(node.NodePath(pathutils.HOOKS_BASE_DIR),
                        "%s-%s.d" % (hpath, phase))


def _Recording(node, hpath, phase):
    """A hook script recording its environment in the node's root."""
    record = node.Path("%s-%s.env" % (hpath, phase))
    _Script(os.path.join(_HooksDir(node, hpath, phase), "10-record"),
            "env > %s" % record)
    return record


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS)
        node2 = cluster.NewNode(NODE2)
        for node in (cluster, node2):
            _Recording(node, "node-add", "pre")
            _Recording(node, "node-add", "post")
        node2.StartNoded()
        with open(node2.NodePath(pathutils.NODED_JOIN_KEY_FILE),
                  encoding="ascii") as fobj:
            key = fobj.read().strip()
        cluster.Run("gnt-node", "add", "--join-key=" + key, NODE2)
        yield cluster
    finally:
        cluster.Cleanup()


def test_node_add_hooks_environment_and_nodes(vcluster):
    node2 = vcluster.nodes[NODE2]
    pre = _ReadEnv(vcluster.Path("node-add-pre.env"))
    assert {key: pre[key] for key in pre if key.startswith("GANETI_")} == {
        "GANETI_HOOKS_VERSION": "2",
        "GANETI_HOOKS_PHASE": "pre",
        "GANETI_HOOKS_PATH": "node-add",
        "GANETI_OP_CODE": "OP_NODE_ADD",
        "GANETI_OBJECT_TYPE": "NODE",
        "GANETI_CLUSTER": CLUSTER,
        "GANETI_MASTER": MASTER,
        "GANETI_DATA_DIR": vcluster.NodePath(pathutils.DATA_DIR),
        "GANETI_OP_TARGET": NODE2,
        "GANETI_NODE_NAME": NODE2,
        "GANETI_NODE_PIP": node2.node_ip,
        "GANETI_NODE_SIP": node2.node_ip,
        "GANETI_MASTER_CAPABLE": "True",
        "GANETI_VM_CAPABLE": "True",
    }
    assert pre["PATH"] == constants.HOOKS_PATH
    assert "GANETI_ROOTDIR" not in pre
    # The new node runs only the post hooks, with its own data directory
    assert not os.path.exists(node2.Path("node-add-pre.env"))
    for node in (vcluster, node2):
        post = _ReadEnv(node.Path("node-add-post.env"))
        assert post["GANETI_HOOKS_PHASE"] == "post"
        assert post["GANETI_NODE_NAME"] == NODE2
        assert post["GANETI_POST_NODE_NAME"] == NODE2
        assert post["GANETI_DATA_DIR"] == node.NodePath(pathutils.DATA_DIR)


def test_failing_pre_hook_aborts_group_add(vcluster):
    _Script(os.path.join(_HooksDir(vcluster, "group-add", "pre"), "50-deny"),
            "echo 'no groups today'; exit 1")
    try:
        result = vcluster.Run("gnt-group", "add", "rack1", check=False)
    finally:
        os.unlink(os.path.join(_HooksDir(vcluster, "group-add", "pre"),
                               "50-deny"))
    assert result.returncode != 0
    assert "Failure: hooks execution failed:" in result.stderr
    assert ("node: %s, script: group-add-pre.d/50-deny, output: no groups"
            " today" % MASTER) in result.stderr
    names = vcluster.Run("gnt-group", "list", "--no-headers", "-o",
                         "name").stdout.split()
    assert "rack1" not in names


def test_failing_pre_hook_on_a_member_aborts_group_rename(vcluster):
    node2 = vcluster.nodes[NODE2]
    hook = os.path.join(_HooksDir(node2, "group-rename", "pre"), "10-deny")
    _Script(hook, "exit 2")
    try:
        result = vcluster.Run("gnt-group", "rename", "default", "main",
                              check=False)
    finally:
        os.unlink(hook)
    assert result.returncode != 0
    assert ("node: %s, script: group-rename-pre.d/10-deny (no output)" %
            NODE2) in result.stderr
    assert vcluster.Run("gnt-group", "list", "--no-headers", "-o",
                        "name").stdout.split() == ["default"]


def test_failing_post_hook_is_only_reported(vcluster):
    hook = os.path.join(_HooksDir(vcluster, "group-add", "post"), "50-fail")
    _Script(hook, "echo 'post hook broke'; exit 1")
    record = _Recording(vcluster, "group-remove", "pre")
    skipped = vcluster.Path("skipped")
    remove_dir = _HooksDir(vcluster, "group-remove", "pre")
    # Names and modes the runner must skip
    _Script(os.path.join(remove_dir, "20-bad.sh"),
            "touch %s; exit 1" % skipped)
    _Script(os.path.join(remove_dir, "30-noexec"),
            "touch %s; exit 1" % skipped, mode=0o644)
    try:
        result = vcluster.Run("gnt-group", "add", "rack2")
        output = result.stdout + result.stderr
        assert ("WARNING: On %s script group-add-post.d/50-fail failed,"
                " output: post hook broke" % MASTER) in output
        assert "rack2" in vcluster.Run("gnt-group", "list", "--no-headers",
                                       "-o", "name").stdout.split()
        vcluster.Run("gnt-group", "remove", "rack2")
    finally:
        os.unlink(hook)
    env = _ReadEnv(record)
    assert env["GANETI_GROUP_NAME"] == "rack2"
    assert env["GANETI_HOOKS_PATH"] == "group-remove"
    assert not os.path.exists(skipped)
    assert "rack2" not in vcluster.Run("gnt-group", "list", "--no-headers",
                                       "-o", "name").stdout.split()


def test_cluster_verify_post_hooks_run_on_the_group(vcluster):
    node2 = vcluster.nodes[NODE2]
    records = [_Recording(node, "cluster-verify", "post")
               for node in (vcluster, node2)]
    vcluster.Run("gnt-cluster", "verify", check=False)
    for node, record in zip((vcluster, node2), records):
        env = _ReadEnv(record)
        assert env["GANETI_HOOKS_PHASE"] == "post"
        assert env["GANETI_OP_CODE"] == "OP_CLUSTER_VERIFY_GROUP"
        assert env["GANETI_CLUSTER_TAGS"] == ""
    assert not os.path.exists(node2.Path("cluster-verify-pre.env"))


def test_instance_hooks_environment_and_veto(vcluster):
    node2 = vcluster.nodes[NODE2]
    name = "hooked.example.test"
    add_pre = [_Recording(node, "instance-add", "pre")
               for node in (vcluster, node2)]
    start_post = _Recording(node2, "instance-start", "post")
    remove_post = _Recording(vcluster, "instance-remove", "post")
    vcluster.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
                 "--no-start", *CHECKS, "-n", NODE2, "-B",
                 "memory=96,vcpus=2", "--net",
                 "0:mac=aa:00:00:00:00:42,link=br7", name)
    env = _ReadEnv(add_pre[1])
    assert {key: env[key] for key in (
        "GANETI_OBJECT_TYPE", "GANETI_INSTANCE_NAME",
        "GANETI_INSTANCE_PRIMARY", "GANETI_INSTANCE_SECONDARIES",
        "GANETI_INSTANCE_STATUS", "GANETI_INSTANCE_MAXMEM",
        "GANETI_INSTANCE_VCPUS", "GANETI_INSTANCE_DISK_TEMPLATE",
        "GANETI_INSTANCE_NIC_COUNT", "GANETI_INSTANCE_NIC0_MAC",
        "GANETI_INSTANCE_NIC0_LINK", "GANETI_INSTANCE_DISK_COUNT",
        "GANETI_INSTANCE_ADD_MODE")} == {
        "GANETI_OBJECT_TYPE": "INSTANCE",
        "GANETI_INSTANCE_NAME": name,
        "GANETI_INSTANCE_PRIMARY": NODE2,
        "GANETI_INSTANCE_SECONDARIES": "",
        "GANETI_INSTANCE_STATUS": "down",
        "GANETI_INSTANCE_MAXMEM": "96",
        "GANETI_INSTANCE_VCPUS": "2",
        "GANETI_INSTANCE_DISK_TEMPLATE": "diskless",
        "GANETI_INSTANCE_NIC_COUNT": "1",
        "GANETI_INSTANCE_NIC0_MAC": "aa:00:00:00:00:42",
        "GANETI_INSTANCE_NIC0_LINK": "br7",
        "GANETI_INSTANCE_DISK_COUNT": "0",
        "GANETI_INSTANCE_ADD_MODE": "create",
    }
    assert os.path.exists(add_pre[0])
    # A veto on the primary node keeps the instance down
    deny = os.path.join(_HooksDir(node2, "instance-start", "pre"), "50-deny")
    _Script(deny, "echo 'not now'; exit 1")
    try:
        result = vcluster.Run("gnt-instance", "startup", name, check=False)
    finally:
        os.unlink(deny)
    assert result.returncode != 0
    assert "script: instance-start-pre.d/50-deny, output: not now" in \
        result.stderr
    assert not os.path.exists(start_post)
    status = vcluster.Run("gnt-instance", "list", "--no-headers", "-o",
                          "admin_state", name).stdout.strip()
    assert status == "down"
    vcluster.Run("gnt-instance", "startup", name)
    env = _ReadEnv(start_post)
    assert env["GANETI_INSTANCE_STATUS"] == "down"
    assert env["GANETI_POST_INSTANCE_STATUS"] == "up"
    vcluster.Run("gnt-instance", "remove", "-f", name)
    env = _ReadEnv(remove_post)
    assert env["GANETI_POST_INSTANCE_NAME"] == name
    assert env["GANETI_SHUTDOWN_TIMEOUT"] == "120"
