"""gnt-cluster command and copyfile: the node side (run_command,
copyfile_upload and the copyfile allow-list) in-process, and both commands
on a real 3-node virtual cluster.
"""

import os
import re
import signal

import pytest

from ganeti import constants, errors, pathutils
from ganeti.backend import verify

from test_cluster_verify import MASTER, NODE2, NODE3, StartThreeNodeCluster

pytestmark = pytest.mark.integration

_SEPARATOR = "------------------------------------------------"


# run_command -----------------------------------------------------------------

def test_run_command_returns_exit_code_and_output():
    code, output = verify.run_command("echo out; echo err >&2; exit 3")
    assert (code, output) == (3, "out\nerr\n")
    assert verify.run_command("pwd") == [0, "/\n"]
    assert verify.run_command("kill -TERM $$")[0] == 128 + signal.SIGTERM


def test_run_command_refuses_empty_and_times_out(monkeypatch):
    with pytest.raises(errors.GenericError, match="Invalid command"):
        verify.run_command("  ")
    monkeypatch.setattr(constants, "NODE_COMMAND_TIMEOUT", 0.3)
    with pytest.raises(errors.GenericError, match="timed out after 0.3"):
        verify.run_command("echo started; sleep 30")


# The copyfile allow-list -----------------------------------------------------

@pytest.fixture
def node_paths(tmp_path, monkeypatch):
    """A node whose data directory and allow-list live in ``tmp_path``."""
    monkeypatch.setattr(pathutils, "DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(pathutils, "COPYFILE_PATHS_FILE",
                        str(tmp_path / "copyfile-paths"))
    os.makedirs(tmp_path / "data")
    os.makedirs(tmp_path / "allowed" / "sub")
    return tmp_path


def _Allow(tmp_path, *lines):
    (tmp_path / "copyfile-paths").write_text("\n".join(lines) + "\n")


def test_copyfile_needs_an_allow_list(node_paths):
    target = str(node_paths / "allowed" / "file")
    with pytest.raises(errors.OpPrereqError) as info:
        verify.CheckCopyfileTarget(target)
    assert str(info.value.args[0]) == (
        "Refusing to copy to %s: no path is allowed for copyfile (%s is"
        " missing or empty)" % (target, node_paths / "copyfile-paths"))
    _Allow(node_paths, "# only comments", "", "relative/path")
    with pytest.raises(errors.OpPrereqError, match="missing or empty"):
        verify.CheckCopyfileTarget(target)


def test_copyfile_allows_only_paths_below_listed_prefixes(node_paths):
    allowed = str(node_paths / "allowed")
    _Allow(node_paths, "# copyfile targets", allowed + "/")
    for path in (allowed + "/file", allowed + "/sub/file", allowed):
        assert verify.CheckCopyfileTarget(path) == path
    for path in (allowed + "2/file", str(node_paths / "file"),
                 allowed + "/../elsewhere", "/etc/passwd"):
        with pytest.raises(errors.OpPrereqError,
                           match="not below any path allowed in"):
            verify.CheckCopyfileTarget(path)
    with pytest.raises(errors.OpPrereqError, match="expected an absolute"):
        verify.CheckCopyfileTarget("allowed/file")


def test_copyfile_resolves_symlinks(node_paths):
    _Allow(node_paths, str(node_paths / "allowed"))
    os.symlink(str(node_paths), str(node_paths / "allowed" / "escape"))
    with pytest.raises(errors.OpPrereqError, match="not below any path"):
        verify.CheckCopyfileTarget(
            str(node_paths / "allowed" / "escape" / "file"))


def test_copyfile_never_touches_ganeti_files(node_paths):
    _Allow(node_paths, "/")
    for path in (str(node_paths / "data" / "server.pem"),
                 str(node_paths / "data" / "ssconf_node_list"),
                 str(node_paths / "copyfile-paths"),
                 pathutils.FILE_STORAGE_PATHS_FILE):
        with pytest.raises(errors.OpPrereqError,
                           match="Ganeti's own files .* can't be"):
            verify.CheckCopyfileTarget(path)


def test_copyfile_upload_writes_content_and_mode(node_paths):
    _Allow(node_paths, str(node_paths / "allowed"))
    target = str(node_paths / "allowed" / "sub" / "file")
    verify.copyfile_upload(target, [constants.RPC_ENCODING_NONE, "data\n"],
                           0o640)
    with open(target, encoding="utf-8") as fobj:
        assert fobj.read() == "data\n"
    assert os.stat(target).st_mode & 0o7777 == 0o640
    with pytest.raises(errors.GenericError, match="Invalid file mode"):
        verify.copyfile_upload(target, [constants.RPC_ENCODING_NONE, "x"],
                               0o17777)
    missing = str(node_paths / "allowed" / "nodir" / "file")
    with pytest.raises(errors.GenericError,
                       match="directory .*nodir does not exist"):
        verify.copyfile_upload(missing, [constants.RPC_ENCODING_NONE, "x"],
                               0o644)
    with pytest.raises(errors.GenericError, match="Refusing to copy to"):
        verify.copyfile_upload(str(node_paths / "data" / "server.pem"),
                               [constants.RPC_ENCODING_NONE, "x"], 0o600)


# On a real cluster -----------------------------------------------------------

@pytest.fixture(scope="module")
def vcluster():
    cluster = StartThreeNodeCluster()
    try:
        yield cluster
    finally:
        cluster.Cleanup()


def _Blocks(stdout):
    """The per-node output blocks of gnt-cluster command."""
    assert stdout.startswith(_SEPARATOR + "\n"), stdout
    return [block.strip("\n").split("\n")
            for block in stdout.split(_SEPARATOR + "\n")[1:]]


def test_command_on_all_nodes(vcluster):
    result = vcluster.Run("gnt-cluster", "command", "echo",
                          "$GANETI_HOSTNAME;", "exit", "4")
    assert result.returncode == 0
    # The master comes last
    assert _Blocks(result.stdout) == [
        ["node: %s" % name, name, "", "return code = 4"]
        for name in (NODE2, NODE3, MASTER)]


def test_command_selected_nodes_and_formats(vcluster):
    result = vcluster.Run("gnt-cluster", "command", "-n", "node3",
                          "-n", NODE2, "-M", "printf 'a\\nb\\n'")
    assert _Blocks(result.stdout) == [
        ["%s: a" % name, "%s: b" % name, "return code = 0"]
        for name in (NODE2, NODE3)]
    result = vcluster.Run("gnt-cluster", "command", "--failure-only",
                          "test $GANETI_HOSTNAME = %s" % NODE2)
    assert [block[0] for block in _Blocks(result.stdout)] == [
        "node: %s" % NODE3, "node: %s" % MASTER]
    result = vcluster.Run("gnt-cluster", "command", "-n", "node9", "true",
                          check=False)
    assert result.returncode == 1
    assert "Node 'node9' not known" in result.stderr


def test_command_unreachable_node(vcluster):
    node3 = vcluster.nodes[NODE3]
    node3.KillDaemon("ganeti-noded", signal.SIGKILL)
    try:
        result = vcluster.Run("gnt-cluster", "command", "true", check=False)
    finally:
        node3.StartNoded()
    assert result.returncode == 1
    blocks = _Blocks(result.stdout)
    assert blocks[0] == ["node: %s" % NODE2, "", "return code = 0"]
    assert blocks[1][0] == "node: %s" % NODE3
    assert blocks[1][1].startswith("Failure while running the command: ")
    assert blocks[2][0] == "node: %s" % MASTER


def _CopySource(cluster, name, text, mode):
    path = cluster.NodePath("/srv/copy/" + name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fobj:
        fobj.write(text)
    os.chmod(path, mode)
    return path


def _SetAllowList(cluster, nodes):
    """Allow /srv/copy on ``nodes`` (names) and no copies elsewhere."""
    for node in cluster.nodes.values():
        allow_list = node.NodePath(pathutils.COPYFILE_PATHS_FILE)
        if node.name in nodes:
            os.makedirs(node.NodePath("/srv/copy"), exist_ok=True)
            with open(allow_list, "w", encoding="utf-8") as fobj:
                fobj.write("# test\n/srv/copy\n")
        elif os.path.exists(allow_list):
            os.unlink(allow_list)


def test_copyfile_refused_without_allow_list(vcluster):
    _SetAllowList(vcluster, [])
    source = _CopySource(vcluster, "refused.txt", "x", 0o644)
    result = vcluster.Run("gnt-cluster", "copyfile", source, check=False)
    assert result.returncode == 1
    assert "Refusing to copy to /srv/copy/refused.txt: no path is allowed" \
        " for copyfile (%s is missing or empty)" % \
        pathutils.COPYFILE_PATHS_FILE in result.stderr
    for name in (NODE2, NODE3):
        assert not os.path.exists(
            vcluster.nodes[name].NodePath("/srv/copy/refused.txt"))


def test_copyfile_to_other_nodes(vcluster):
    _SetAllowList(vcluster, [MASTER, NODE2, NODE3])
    source = _CopySource(vcluster, "data.txt", "some data\n", 0o640)
    result = vcluster.Run("gnt-cluster", "copyfile", source, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    for name in (NODE2, NODE3):
        target = vcluster.nodes[name].NodePath("/srv/copy/data.txt")
        with open(target, encoding="utf-8") as fobj:
            assert fobj.read() == "some data\n"
        assert os.stat(target).st_mode & 0o7777 == 0o640
    source = _CopySource(vcluster, "one.txt", "one\n", 0o600)
    vcluster.Run("gnt-cluster", "copyfile", "-n", "node3", source)
    assert os.path.exists(vcluster.nodes[NODE3].NodePath("/srv/copy/one.txt"))
    assert not os.path.exists(
        vcluster.nodes[NODE2].NodePath("/srv/copy/one.txt"))


def test_copyfile_each_node_checks_its_allow_list(vcluster):
    _SetAllowList(vcluster, [MASTER, NODE2])
    source = _CopySource(vcluster, "partial.txt", "p\n", 0o644)
    result = vcluster.Run("gnt-cluster", "copyfile", source, check=False)
    assert result.returncode == 1
    assert re.match(r"^Copy of file %s to node %s failed: Refusing to copy to"
                    r" /srv/copy/partial\.txt: no path is allowed" %
                    (re.escape(source), re.escape(NODE3)), result.stderr), \
        result.stderr
    assert os.path.exists(
        vcluster.nodes[NODE2].NodePath("/srv/copy/partial.txt"))


def test_copyfile_refuses_cluster_secrets(vcluster):
    for node in vcluster.nodes.values():
        with open(node.NodePath(pathutils.COPYFILE_PATHS_FILE), "w",
                  encoding="utf-8") as fobj:
            fobj.write("/\n")
    try:
        result = vcluster.Run("gnt-cluster", "copyfile",
                              vcluster.NodePath(pathutils.NODED_CERT_FILE),
                              check=False)
    finally:
        _SetAllowList(vcluster, [])
    assert result.returncode == 1
    assert "Refusing to copy to %s: Ganeti's own files" % \
        pathutils.NODED_CERT_FILE in result.stderr
