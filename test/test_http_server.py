"""ganeti.http.server: real sockets, TLS via pyOpenSSL, both modes."""

import http.client
import os
import pathlib
import socket
import ssl
import threading
import time

import pytest

from ganeti import http as ghttp
from ganeti.http import server
from ganeti.utils import x509


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("certs")
    cluster = str(tmp / "cluster.pem")
    other = str(tmp / "other.pem")
    x509.GenerateSelfSignedSslCert(cluster, validity_days=1)
    x509.GenerateSelfSignedSslCert(other, validity_days=1)
    return cluster, other


def _Handler(method, path, headers, body):
    if path == "/fail":
        raise RuntimeError("handler bug")
    if path == "/forbidden":
        raise ghttp.HttpForbidden("go away", headers={"X-Reason": "test"})
    if path == "/close":
        return 200, {"Connection": "close"}, b"bye"
    if path == "/pid":
        return 200, {}, str(os.getpid()).encode()
    answer = "%s %s %s %d" % (method, path, headers.get("x-test", "-"),
                              len(body))
    return 200, {"Content-Type": "text/plain"}, answer.encode()


def _Start(certs=None, **kwargs):
    cert_file = certs[0] if certs else None
    # Forked children inherit this process's copy of the client sockets,
    # so they see no EOF when a test closes its connection; don't let them
    # wait the default 30 s
    kwargs.setdefault("idle_timeout", 1.0)
    srv = server.HttpServer("127.0.0.1", 0, _Handler, ssl_cert_file=cert_file,
                            **kwargs)
    srv.start()
    return srv


def _Connect(srv, certs=None, client_cert=None, timeout=5):
    host, port = srv.server_address
    if certs is None:
        return http.client.HTTPConnection(host, port, timeout=timeout)
    ctx = ssl.create_default_context(cafile=certs[0])
    ctx.check_hostname = False
    if client_cert is not None:
        ctx.load_cert_chain(client_cert)
    return http.client.HTTPSConnection(host, port, context=ctx,
                                       timeout=timeout)


def _Request(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    resp = conn.getresponse()
    return resp.status, resp.read(), resp


@pytest.mark.parametrize("mode", [server.MODE_THREAD, server.MODE_FORK])
def test_keepalive_tls(certs, mode):
    srv = _Start(certs, mode=mode)
    try:
        conn = _Connect(srv, certs)
        pids = set()
        for i in range(5):
            status, body, resp = _Request(conn, "POST", "/x%d" % i,
                                          body=b"abc", headers={"X-Test": "t"})
            assert (status, body) == (200, b"POST /x%d t 3" % i)
            assert resp.getheader("Connection") == "keep-alive"
            pids.add(_Request(conn, "GET", "/pid")[1])
        # One connection, so one handler process for all requests
        assert len(pids) == 1
        in_child = pids.pop() != str(os.getpid()).encode()
        assert in_child == (mode == server.MODE_FORK)
        conn.close()
    finally:
        srv.shutdown()


def test_plain_http_and_errors():
    srv = _Start(mode=server.MODE_THREAD)
    try:
        conn = _Connect(srv)
        status, body, _ = _Request(conn, "GET", "/fail")
        assert status == 500 and b"handler bug" not in body
        status, body, resp = _Request(conn, "GET", "/forbidden")
        assert (status, body) == (403, b"go away\n")
        assert resp.getheader("X-Reason") == "test"
        status, body, resp = _Request(conn, "HEAD", "/head")
        assert status == 200 and body == b""
        assert resp.getheader("Content-Length") == str(len(b"HEAD /head - 0"))
        status, body, resp = _Request(conn, "GET", "/close")
        assert resp.getheader("Connection") == "close"
        conn.close()
    finally:
        srv.shutdown()


def test_body_limit():
    srv = _Start(mode=server.MODE_THREAD, max_body_size=100)
    try:
        conn = _Connect(srv)
        assert _Request(conn, "PUT", "/ok", body=b"x" * 100)[0] == 200
        status, _, resp = _Request(conn, "PUT", "/big", body=b"x" * 101)
        assert status == 413
        assert resp.getheader("Connection") == "close"
        conn.close()
    finally:
        srv.shutdown()


def _RawExchange(srv, data, read_until=b"\r\n\r\n"):
    sock = socket.create_connection(srv.server_address, timeout=5)
    sock.sendall(data)
    received = b""
    while read_until not in received:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return sock, received


def test_chunked_continue_and_bad_requests():
    srv = _Start(mode=server.MODE_THREAD, max_body_size=1000)
    try:
        sock, answer = _RawExchange(
            srv, b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
            b"\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n",
            read_until=b"POST /c - 5")
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        sock.close()

        sock, answer = _RawExchange(
            srv, b"POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
            b"Expect: 100-continue\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"body")
        while b"POST /e - 4" not in answer:
            answer += sock.recv(4096)
        sock.close()

        sock, answer = _RawExchange(
            srv, b"POST /e HTTP/1.1\r\nContent-Length: 5000\r\n"
            b"Expect: 100-continue\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 413 ")
        sock.close()

        bad_length = b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"
        for request, status in ((b"garbage\r\n\r\n", b"400"),
                                (b"GET / HTTP/2.0\r\n\r\n", b"505"),
                                (bad_length, b"400")):
            sock, answer = _RawExchange(srv, request)
            assert answer.startswith(b"HTTP/1.1 " + status), answer
            sock.close()
    finally:
        srv.shutdown()


@pytest.mark.parametrize("mode", [server.MODE_THREAD, server.MODE_FORK])
def test_idle_timeout(mode):
    srv = _Start(mode=mode, idle_timeout=0.3)
    try:
        sock, answer = _RawExchange(srv, b"GET /a HTTP/1.1\r\n\r\n",
                                    read_until=b"GET /a - 0")
        assert b"200 OK" in answer
        sock.settimeout(3)
        start = time.monotonic()
        assert sock.recv(100) == b""
        assert time.monotonic() - start < 2
        sock.close()
    finally:
        srv.shutdown()


@pytest.mark.parametrize("mode", [server.MODE_THREAD, server.MODE_FORK])
def test_client_certificate_required(certs, mode):
    cluster, other = certs
    digest = x509.GetCertificateDigest(pathlib.Path(cluster).read_bytes())
    srv = _Start(certs, mode=mode, require_client_cert=True,
                 verify_fn=lambda cert, _: x509.GetCertificateDigest(cert) ==
                 digest)
    try:
        conn = _Connect(srv, certs, client_cert=cluster)
        assert _Request(conn, "GET", "/ok")[0] == 200
        conn.close()
        for client_cert in (other, None):
            conn = _Connect(srv, certs, client_cert=client_cert)
            # TLS 1.3 reports the rejection when reading the response
            with pytest.raises((ssl.SSLError, ConnectionError)):
                _Request(conn, "GET", "/ok")
            conn.close()
    finally:
        srv.shutdown()


def test_many_concurrent_connections():
    srv = _Start(mode=server.MODE_THREAD)
    try:
        socks = [socket.create_connection(srv.server_address, timeout=5)
                 for _ in range(100)]
        start = time.monotonic()
        for sock in socks:
            sock.sendall(b"GET /m HTTP/1.0\r\n\r\n")
        for sock in socks:
            data = b""
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            assert data.endswith(b"GET /m - 0")
            sock.close()
        assert time.monotonic() - start < 2
    finally:
        srv.shutdown()


def test_max_clients():
    srv = _Start(mode=server.MODE_THREAD, max_clients=1, idle_timeout=0.5)
    try:
        first = _Connect(srv)
        assert _Request(first, "GET", "/1")[0] == 200
        second = _Connect(srv, timeout=5)
        start = time.monotonic()
        # The first connection is idle: it is closed to make room at once
        assert _Request(second, "GET", "/2")[0] == 200
        assert time.monotonic() - start < 0.3
        first.sock.settimeout(2)
        assert first.sock.recv(1) == b""
        first.close()
        second.close()
    finally:
        srv.shutdown()


def test_shutdown_is_fast():
    servers = [_Start(mode=mode) for mode in (server.MODE_THREAD,
                                              server.MODE_FORK) * 5]
    address = servers[0].server_address
    start = time.monotonic()
    for srv in servers:
        srv.shutdown()
    assert time.monotonic() - start < 0.5
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=1)


def test_shutdown_without_serving_and_bad_mode():
    srv = server.HttpServer("127.0.0.1", 0, _Handler)
    port = srv.server_address[1]
    srv.shutdown()
    # The port is free again
    again = server.HttpServer("127.0.0.1", port, _Handler)
    again.shutdown()
    with pytest.raises(ValueError):
        server.HttpServer("127.0.0.1", 0, _Handler, mode="spawn")


@pytest.mark.parametrize("mode", [server.MODE_THREAD, server.MODE_FORK])
def test_slow_clients_do_not_starve_others(mode):
    """Issue 12: connections trickling headers hold no worker and are
    dropped at the header deadline; a normal request is served at once."""
    srv = _Start(mode=mode, max_clients=2, header_timeout=0.6,
                 idle_timeout=5)
    slow = [socket.create_connection(srv.server_address, timeout=3)
            for _ in range(6)]
    try:
        for sock in slow:
            sock.sendall(b"GET /slow HTTP/1.1\r\n")
        time.sleep(0.2)
        conn = _Connect(srv)
        start = time.monotonic()
        assert _Request(conn, "GET", "/ok")[0] == 200
        assert time.monotonic() - start < 0.5
        conn.close()
        for sock in slow:
            sock.sendall(b"X-Slow: 1\r\n")
        for sock in slow:
            assert sock.recv(100) == b""
        assert time.monotonic() - start < 2
    finally:
        for sock in slow:
            sock.close()
        srv.shutdown()


def test_pending_per_address_limit():
    srv = _Start(max_pending_per_address=2)
    try:
        socks = [socket.create_connection(srv.server_address, timeout=3)
                 for _ in range(3)]
        # The oldest made room for the newest
        assert socks[0].recv(1) == b""
        socks[2].sendall(b"GET /new HTTP/1.0\r\n\r\n")
        assert socks[2].recv(100).startswith(b"HTTP/1.1 200")
        for sock in socks:
            sock.close()
    finally:
        srv.shutdown()


@pytest.mark.parametrize("mode", [server.MODE_THREAD, server.MODE_FORK])
def test_reconfigure_keeps_listening(certs, mode):
    """A switch of certificate and handler never closes the port, and a
    connection that shook hands under the old settings is not served by
    the new handler (noded's join: join certificate -> cluster's)."""
    cluster, other = certs
    srv = server.HttpServer("127.0.0.1", 0, _Handler, ssl_cert_file=other,
                            mode=mode, idle_timeout=1.0)
    srv.start()
    try:
        assert _Request(_Connect(srv, (other,)), "GET", "/a")[:2] == \
            (200, b"GET /a - 0")
        # Handshake done, request not sent yet: accepted under the old
        # settings
        host, port = srv.server_address
        ctx = ssl.create_default_context(cafile=other)
        ctx.check_hostname = False
        early = ctx.wrap_socket(socket.create_connection((host, port),
                                                         timeout=5))
        refused = []
        stop = False

        def _Probe():
            while not stop:
                try:
                    socket.create_connection((host, port), timeout=5).close()
                except ConnectionRefusedError as err:
                    refused.append(err)

        prober = threading.Thread(target=_Probe)
        prober.start()
        try:
            for _ in range(3):
                srv.Reconfigure(
                    lambda *_args: (200, {}, b"member"), cluster,
                    require_client_cert=True,
                    verify_fn=lambda _cert, _ok: True)
        finally:
            stop = True
            prober.join()
        assert refused == []
        try:
            early.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = early.recv(100)
        except OSError:  # closed or reset: either way not served
            answer = b""
        assert answer == b""
        # New connections get the new certificate and handler
        conn = _Connect(srv, (cluster,), client_cert=cluster)
        assert _Request(conn, "GET", "/c")[:2] == (200, b"member")
        with pytest.raises(ssl.SSLError):
            _Request(_Connect(srv, (other,), client_cert=cluster), "GET", "/")
    finally:
        srv.shutdown()
