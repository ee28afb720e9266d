"""Node-to-node transfers (ganeti.impexp) between real noded processes.

Two nodes of a virtual cluster (own roots and 127.x.y.z addresses, one
cluster certificate) copy files of their backup directories, command
output and FIFOs through the import_start/export_start/impexp_* RPCs and
through impexp.master.TransferInstanceData; the tests check the data, the
checksums, the refusal of foreign peers and that nothing (process,
listening socket, partial file, transfer directory) is left behind.
"""

import hashlib
import os
import socket
import ssl
import threading
import time

import pytest

from ganeti import impexp, pathutils
from ganeti.impexp import master, sparse, transfer
from ganeti.utils import x509

MIB = 1024 * 1024
# The backup directory as the nodes see it (virtual path)
VBACKUP = pathutils.EXPORT_DIR


def _MakeBackupDirs(cluster):
    for node in cluster.nodes:
        os.makedirs(node.Path(pathutils.EXPORT_DIR), exist_ok=True)


pytestmark = [pytest.mark.integration,
              pytest.mark.noded_cluster(setup=_MakeBackupDirs)]


@pytest.fixture(autouse=True)
def _nothing_left(request):
    """After each test using the cluster's runner: no transfer left."""
    yield
    if "noded_runner" in request.fixturenames:
        _CheckNothingLeft(request.getfixturevalue("noded_cluster"))


def _Ok(result):
    assert result.fail_msg is None, result.fail_msg
    return result.payload


def _Processes(cluster):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fobj:
                cmdline = fobj.read().decode("utf-8", "replace")
        except OSError:
            continue
        if transfer.__name__ in cmdline and cluster.tmpdir in cmdline:
            found.append(pid)
    return found


def _CheckNothingLeft(cluster):
    assert _Processes(cluster) == []
    for node in cluster.nodes:
        tdir = node.Path(pathutils.IMPORT_EXPORT_DIR)
        assert not os.path.isdir(tdir) or os.listdir(tdir) == []


def _WriteFile(node, name, data):
    with open(node.Path(os.path.join(VBACKUP, name)), "wb") as fobj:
        fobj.write(data)
    return os.path.join(VBACKUP, name)


def _Sha256(data):
    return hashlib.sha256(data).hexdigest()


def _Refused(address, port):
    try:
        socket.create_connection((address, port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def _WaitDone(runner, node, name, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        (status, ) = _Ok(runner.call_impexp_status(node.name, [name]))
        if status["done"]:
            return status
        time.sleep(0.05)
    raise AssertionError("transfer %s did not finish" % name)


@pytest.mark.parametrize("compress", [impexp.IEC_NONE, impexp.IEC_GZIP])
def test_file_to_file(noded_cluster, noded_runner, compress):
    node1, node2 = noded_cluster.nodes
    # Random data, zeros (holes in the copy) and text compress differently
    data = os.urandom(3 * MIB) + bytes(2 * MIB) + b"ganeti " * 100000
    source = _WriteFile(node1, "src-%s.img" % compress, data)
    dest = os.path.join(VBACKUP, "sub", "dst-%s.img" % compress)
    opts = impexp.MakeOptions(compress)
    info = _Ok(noded_runner.call_import_start(
        node2.name, opts, "inst1.example", "disk/0",
        [impexp.IEIO_FILE, dest], node2.ip))
    assert info["address"] == node2.ip and info["port"] > 0
    name = _Ok(noded_runner.call_export_start(
        node1.name, opts, info["address"], info["port"], "inst1.example",
        "disk/0", [impexp.IEIO_FILE, source]))
    exp = _WaitDone(noded_runner, node1, name)
    imp = _WaitDone(noded_runner, node2, info["name"])
    for status in (exp, imp):
        assert status["success"] is True and status["error"] is None
        assert status["bytes"] == len(data)
        assert status["checksum"] == _Sha256(data)
        assert status["connected"] is True and status["listening"] is False
        assert status["end_time"] >= status["connect_time"] >= \
            status["start_time"]
    assert imp["mode"] == impexp.IEM_IMPORT and imp["total"] == len(data)
    assert (imp["instance"], imp["component"]) == ("inst1.example",
                                                   "disk/0")
    with open(node2.Path(dest), "rb") as fobj:
        assert fobj.read() == data
    assert _Refused(node2.ip, info["port"])
    _Ok(noded_runner.call_impexp_cleanup(node1.name, name))
    _Ok(noded_runner.call_impexp_cleanup(node2.name, info["name"]))
    assert _Ok(noded_runner.call_impexp_status(node2.name,
                                               [info["name"]])) == \
        [None]
    # The data stays after the cleanup of a successful import
    assert os.path.getsize(node2.Path(dest)) == len(data)


def _WriteSparse(path, pieces):
    """A file of data pieces (bytes) and holes (int: that many bytes)."""
    with open(path, "wb") as fobj:
        for piece in pieces:
            if isinstance(piece, int):
                fobj.seek(piece, os.SEEK_CUR)
            else:
                fobj.write(piece)
        fobj.truncate()
    with open(path, "rb") as fobj:
        return fobj.read()


@pytest.mark.parametrize("compress", [impexp.IEC_NONE, impexp.IEC_GZIP_FAST])
def test_sparse_source_holes_are_skipped(noded_cluster, noded_runner,
                                         compress):
    node1, node2 = noded_cluster.nodes
    source = os.path.join(VBACKUP, "sparse-%s.img" % compress)
    dest = os.path.join(VBACKUP, "sparse-%s.copy" % compress)
    # Data, a hole, data, a hole at the end (an empty disk's tail)
    data = _WriteSparse(node1.Path(source),
                        [os.urandom(MIB + 5), 64 * MIB, b"ganeti " * 9999,
                         256 * MIB])
    src_blocks = os.stat(node1.Path(source)).st_blocks
    if src_blocks * 512 >= len(data):
        pytest.skip("the file system here keeps no holes")
    # A command destination gets the holes as zeros
    piped = node2.Path(os.path.join(VBACKUP, "sparse-%s.piped" % compress))
    result, to_command = master.TransferInstanceData(
        noded_runner, None, node1.name, node2.name, node2.ip, compress,
        "inst1.example", [
            master.DiskTransfer("disk/0", impexp.IEIO_FILE, source,
                                impexp.IEIO_FILE, dest),
            master.DiskTransfer("disk/1", impexp.IEIO_FILE, source,
                                impexp.IEIO_COMMAND,
                                {"argv": ["/bin/sh", "-c",
                                          "cat > '%s'" % piped],
                                 "env": None})])
    assert result.success and to_command.success, (result, to_command)
    with open(piped, "rb") as fobj:
        assert fobj.read() == data
    assert result.size == len(data)
    # The holes are described in the checksum, not hashed as zeros
    assert result.checksum == sparse.FileChecksum(node1.Path(source))
    assert result.checksum != _Sha256(data)
    with open(node2.Path(dest), "rb") as fobj:
        assert fobj.read() == data
    # The copy is as sparse as the source (within a few blocks)
    assert os.stat(node2.Path(dest)).st_blocks <= src_blocks + 64


def test_stream_digest():
    plain = sparse.StreamDigest()
    plain.Data(b"abc")
    plain.Data(b"def")
    assert plain.HexDigest() == _Sha256(b"abcdef")
    holed = sparse.StreamDigest()
    holed.Data(b"abc")
    holed.Hole(3, 3)
    moved = sparse.StreamDigest()
    moved.Hole(0, 3)
    moved.Data(b"abc")
    assert len({plain.HexDigest(), holed.HexDigest(),
                moved.HexDigest()}) == 3


def test_transfer_instance_data(noded_cluster, noded_runner):
    """Several streams at once, commands as source and destination."""
    node1, node2 = noded_cluster.nodes
    data = os.urandom(MIB) + b"x" * 12345
    source = _WriteFile(node1, "multi.img", data)
    command_out = node2.Path(os.path.join(VBACKUP, "from-command"))
    messages = []
    results = master.TransferInstanceData(
        noded_runner, messages.append, node1.name, node2.name, node2.ip,
        impexp.IEC_GZIP_FAST, "inst2.example", [
            master.DiskTransfer("disk/0", impexp.IEIO_FILE, source,
                                impexp.IEIO_FILE,
                                os.path.join(VBACKUP, "multi.copy")),
            master.DiskTransfer(
                "disk/1", impexp.IEIO_COMMAND,
                {"argv": ["/bin/sh", "-c", "printf 'abc%.0s' $(seq 1000)"],
                 "env": None},
                impexp.IEIO_COMMAND,
                {"argv": ["/bin/sh", "-c", "cat > '%s'" % command_out],
                 "env": {"PATH": "/bin:/usr/bin"}}),
        ])
    assert [result.success for result in results] == [True, True], results
    assert results[0].size == len(data)
    assert results[0].checksum == _Sha256(data)
    assert results[1].checksum == _Sha256(b"abc" * 1000)
    with open(node2.Path(os.path.join(VBACKUP, "multi.copy")), "rb") as fobj:
        assert fobj.read() == data
    with open(command_out, "rb") as fobj:
        assert fobj.read() == b"abc" * 1000
    assert any("disk/1: copied" in msg for msg in messages), messages


def test_failing_command_fails_the_transfer(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    dest = os.path.join(VBACKUP, "never.img")
    (result, ) = master.TransferInstanceData(
        noded_runner, None, node1.name, node2.name, node2.ip, impexp.IEC_NONE,
        "inst3.example", [master.DiskTransfer(
            "disk/0", impexp.IEIO_COMMAND,
            {"argv": ["/bin/sh", "-c", "echo partial; exit 3"],
             "env": None}, impexp.IEIO_FILE, dest)])
    assert not result.success
    assert "exited with exit code 3" in result.error, result.error
    assert not os.path.exists(node2.Path(dest))


def _StartFifoTransfer(cluster, runner, name):
    """A transfer reading a FIFO the test feeds: it stays in progress."""
    node1, node2 = cluster.nodes
    fifo = node1.Path(os.path.join(VBACKUP, name + ".fifo"))
    os.mkfifo(fifo)
    dest = os.path.join(VBACKUP, name + ".img")
    opts = impexp.MakeOptions()
    info = _Ok(runner.call_import_start(node2.name, opts, "inst4", "disk/0",
                                        [impexp.IEIO_FILE, dest], node2.ip))
    export = _Ok(runner.call_export_start(
        node1.name, opts, info["address"], info["port"], "inst4", "disk/0",
        [impexp.IEIO_FILE, os.path.join(VBACKUP, name + ".fifo")]))

    def _Feed():
        try:
            with open(fifo, "wb") as fobj:
                while True:
                    fobj.write(os.urandom(64 * 1024))
                    fobj.flush()
                    time.sleep(0.01)
        except OSError:
            # The export was aborted
            pass

    feeder = threading.Thread(target=_Feed, daemon=True)
    feeder.start()
    deadline = time.monotonic() + 30
    while True:
        (status, ) = _Ok(runner.call_impexp_status(node2.name,
                                                   [info["name"]]))
        if status["bytes"]:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert not status["done"] and status["total"] is None
    return info, export, node2.Path(dest), feeder


def test_abort_in_progress(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    info, export, dest, feeder = _StartFifoTransfer(noded_cluster,
                                                    noded_runner,
                                                    "abort1")
    assert os.path.exists(dest)
    _Ok(noded_runner.call_impexp_abort(node2.name, info["name"]))
    (status, ) = _Ok(noded_runner.call_impexp_status(node2.name,
                                                     [info["name"]]))
    assert status["done"] and status["success"] is False
    assert status["error"] == "Aborted"
    assert not os.path.exists(dest)
    assert not os.path.exists(os.path.dirname(dest) + "/abort1.img")
    assert _Refused(node2.ip, info["port"])
    # The source notices and fails
    exp = _WaitDone(noded_runner, node1, export)
    assert exp["success"] is False and exp["error"]
    feeder.join(10)
    assert not feeder.is_alive()
    for node, name in ((node1, export), (node2, info["name"])):
        _Ok(noded_runner.call_impexp_cleanup(node.name, name))


def test_cleanup_stops_a_running_transfer(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    info, export, dest, feeder = _StartFifoTransfer(noded_cluster,
                                                    noded_runner,
                                                    "cleanup1")
    _Ok(noded_runner.call_impexp_cleanup(node1.name, export))
    _Ok(noded_runner.call_impexp_cleanup(node2.name, info["name"]))
    assert not os.path.exists(dest)
    assert _Refused(node2.ip, info["port"])
    feeder.join(10)


def test_abort_before_connection_and_timeout(noded_cluster, noded_runner):
    _, node2 = noded_cluster.nodes
    dest = os.path.join(VBACKUP, "unused.img")
    info = _Ok(noded_runner.call_import_start(
        node2.name, impexp.MakeOptions(), "inst5", "disk/0",
        [impexp.IEIO_FILE, dest], node2.ip))
    (status, ) = _Ok(noded_runner.call_impexp_status(node2.name,
                                                     [info["name"]]))
    assert status["listening"] and not status["connected"]
    _Ok(noded_runner.call_impexp_abort(node2.name, info["name"]))
    assert _Refused(node2.ip, info["port"])
    assert not os.path.exists(node2.Path(dest))
    _Ok(noded_runner.call_impexp_cleanup(node2.name, info["name"]))

    info = _Ok(noded_runner.call_import_start(
        node2.name, impexp.MakeOptions(connect_timeout=0.5), "inst5",
        "disk/0", [impexp.IEIO_FILE, dest], node2.ip))
    status = _WaitDone(noded_runner, node2, info["name"])
    assert status["success"] is False
    assert status["error"] == "No source connected within 0.5 seconds"
    assert _Refused(node2.ip, info["port"])
    assert not os.path.exists(node2.Path(dest))
    _Ok(noded_runner.call_impexp_cleanup(node2.name, info["name"]))


def _Connect(address, port, cert_file):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(cert_file)
    conn = ctx.wrap_socket(socket.create_connection((address, port),
                                                    timeout=10))
    return conn


def test_foreign_peers_refused(noded_cluster, noded_runner, tmp_path):
    """Peers with another certificate or the wrong magic are refused; the
    import keeps waiting for the real source."""
    node1, node2 = noded_cluster.nodes
    data = os.urandom(100000)
    source = _WriteFile(node1, "peer.img", data)
    dest = os.path.join(VBACKUP, "peer.copy")
    opts = impexp.MakeOptions()
    info = _Ok(noded_runner.call_import_start(
        node2.name, opts, "inst6", "disk/0", [impexp.IEIO_FILE, dest],
        node2.ip))
    other_cert = str(tmp_path / "other.pem")
    x509.GenerateSelfSignedSslCert(other_cert, validity_days=1)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        conn = _Connect(info["address"], info["port"], other_cert)
        # TLS 1.3: the server's verdict arrives with the first read
        conn.sendall(b"x")
        conn.recv(1)
    conn = _Connect(info["address"], info["port"], noded_cluster.cert_file)
    wire = transfer.Wire(conn)
    wire.SendJson(transfer.FRAME_HEADER, {"magic": "not-the-magic-value",
                                          "compress": opts["compress"],
                                          "size": None})
    assert conn.recv(1) == b""
    conn.close()
    deadline = time.monotonic() + 10
    while True:
        (status, ) = _Ok(noded_runner.call_impexp_status(node2.name,
                                                         [info["name"]]))
        if status["refused"] == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status["refused"] == 2 and status["listening"], status
    export = _Ok(noded_runner.call_export_start(
        node1.name, opts, info["address"], info["port"], "inst6", "disk/0",
        [impexp.IEIO_FILE, source]))
    assert _WaitDone(noded_runner, node2, info["name"])["success"] is True
    with open(node2.Path(dest), "rb") as fobj:
        assert fobj.read() == data
    for node, name in ((node1, export), (node2, info["name"])):
        _Ok(noded_runner.call_impexp_cleanup(node.name, name))


def test_abort_discards_a_finished_import(noded_cluster, noded_runner):
    """How the master rejects data after the fact (checksum mismatch)."""
    node1, node2 = noded_cluster.nodes
    source = _WriteFile(node1, "finished.img", b"data" * 1000)
    dest = os.path.join(VBACKUP, "new", "dir", "finished.copy")
    opts = impexp.MakeOptions()
    info = _Ok(noded_runner.call_import_start(
        node2.name, opts, "inst7", "disk/0", [impexp.IEIO_FILE, dest],
        node2.ip))
    export = _Ok(noded_runner.call_export_start(
        node1.name, opts, info["address"], info["port"], "inst7", "disk/0",
        [impexp.IEIO_FILE, source]))
    assert _WaitDone(noded_runner, node2, info["name"])["success"] is True
    assert os.path.exists(node2.Path(dest))
    _Ok(noded_runner.call_impexp_abort(node2.name, info["name"]))
    (status, ) = _Ok(noded_runner.call_impexp_status(node2.name,
                                                     [info["name"]]))
    assert status["success"] is False and status["checksum"] is None
    assert "data discarded" in status["error"]
    # The directories the import created go too
    assert not os.path.exists(node2.Path(os.path.join(VBACKUP, "new")))
    for node, name in ((node1, export), (node2, info["name"])):
        _Ok(noded_runner.call_impexp_cleanup(node.name, name))


@pytest.mark.parametrize("call,args,message", [
    ("export_start", lambda n: [impexp.MakeOptions(), n.ip, 1, "i", "d",
                                [impexp.IEIO_FILE, VBACKUP + "/missing"]],
     "Cannot open %s/missing" % VBACKUP),
    ("export_start", lambda n: [impexp.MakeOptions(), n.ip, 1, "i", "d",
                                [impexp.IEIO_FILE, "/etc/passwd"]],
     "not below the backup directory"),
    ("import_start", lambda n: [impexp.MakeOptions(), "i", "d",
                                [impexp.IEIO_FILE, VBACKUP + "/../x"],
                                n.ip],
     "not below the backup directory"),
    ("import_start", lambda n: [impexp.MakeOptions(), "i", "d",
                                [impexp.IEIO_COMMAND,
                                 {"argv": ["/no/such/cmd"], "env": None}],
                                n.ip],
     "Command /no/such/cmd not found"),
    ("import_start", lambda n: [dict(impexp.MakeOptions(), compress="xz"),
                                "i", "d", [impexp.IEIO_FILE, VBACKUP + "/y"],
                                n.ip],
     "Unsupported compression 'xz'"),
    ("import_start", lambda n: [impexp.MakeOptions(), "i", "d",
                                [impexp.IEIO_FILE, VBACKUP + "/y"],
                                "192.0.2.1"],
     "Cannot listen on 192.0.2.1"),
    ("impexp_abort", lambda n: ["../etc"], "Invalid transfer name"),
])
def test_bad_arguments_refused(noded_cluster, noded_runner, call, args,
                               message):
    node = noded_cluster.nodes[1]
    result = getattr(noded_runner, "call_" + call)(node.name, *args(node))
    assert result.fail_msg is not None and message in result.fail_msg, \
        result.fail_msg


def test_existing_file_not_overwritten(noded_cluster, noded_runner):
    node2 = noded_cluster.nodes[1]
    dest = _WriteFile(node2, "exists.img", b"precious")
    result = noded_runner.call_import_start(node2.name, impexp.MakeOptions(),
                                            "i",
                                            "d", [impexp.IEIO_FILE, dest],
                                            node2.ip)
    assert "Refusing to overwrite the existing file" in result.fail_msg
    with open(node2.Path(dest), "rb") as fobj:
        assert fobj.read() == b"precious"


def test_master_rejects_differing_data():
    """Both ends succeeding is not enough: sizes and checksums must match
    (the master then aborts the import, discarding its data)."""
    state = master._Transfer(
        master.DiskTransfer("disk/0", impexp.IEIO_FILE, VBACKUP + "/a",
                            impexp.IEIO_FILE, VBACKUP + "/b"),
        impexp.MakeOptions())
    state.src_name, state.dest_name = "node1", "node2"
    done = {"done": True, "success": True, "error": None, "connected": True}
    state.exp = dict(done, bytes=10, checksum="aa")
    state.imp = dict(done, bytes=10, checksum="bb")
    master._Judge(state, None)
    assert state.finished and not state.Result().success
    assert "Data of disk/0 differs after the transfer" in state.error
    state.error, state.finished = None, False
    state.imp = dict(done, bytes=10, checksum="aa")
    master._Judge(state, None)
    assert state.finished and state.Result().success
