"""Slow and silent clients against real ganeti-rapi and ganeti-noded.

Issue 12, fault 3: connections that trickle header lines or never start
TLS, more of them than --max-clients and from several addresses, must
not keep a normal request from being answered within a second, nor make
noded fork a child per connection.
"""

import http.client
import socket
import ssl
import time

import pytest

from ganeti import constants, pathutils, serializer
from ganeti.rpc import client as rpc_client

from testutils_cluster import VirtualCluster
from testutils_node import ChildPids

pytestmark = pytest.mark.integration

# More than the default --max-clients (20) of each kind
_ABUSERS = 30
# Source addresses of the abusive connections; the normal client uses
# the first as well
_SOURCES = ("127.0.0.1", "127.0.0.2", "127.0.0.3")


@pytest.fixture(scope="module")
def cluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        yield cluster
    finally:
        cluster.Cleanup()


def _Open(address, index):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((_SOURCES[index % len(_SOURCES)], 0))
    sock.settimeout(5)
    sock.connect(address)
    return sock


def _SlowHeaders(address, context):
    """TLS connections that started a request and send a header line now
    and then (slowloris)."""
    conns = []
    for index in range(_ABUSERS):
        conn = context.wrap_socket(_Open(address, index))
        conn.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        conns.append(conn)
    return conns


def _Silent(address):
    """TCP connections that never start TLS."""
    return [_Open(address, index) for index in range(_ABUSERS)]


def _HalfHandshakes(address):
    """Connections that send the first bytes of a TLS record, then wait."""
    socks = _Silent(address)
    for sock in socks:
        sock.sendall(b"\x16\x03\x01")
    return socks


def _Timed(fn):
    start = time.monotonic()
    result = fn()
    return result, time.monotonic() - start


def test_rapi_answers_despite_slow_clients(cluster):
    address = (cluster.node_ip, constants.DEFAULT_RAPI_PORT)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE

    def _Version():
        conn = http.client.HTTPSConnection(*address, context=context,
                                           timeout=5)
        try:
            conn.request("GET", "/version")
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    abusers = _SlowHeaders(address, context) + _Silent(address)
    try:
        time.sleep(0.5)
        for attempt in range(2):
            (status, body), elapsed = _Timed(_Version)
            assert status == 200 and body.strip() == b"2"
            assert elapsed < 1.0, "attempt %d took %.1f s" % (attempt,
                                                               elapsed)
            for conn in abusers[:_ABUSERS]:
                try:
                    conn.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass
            time.sleep(0.5)
    finally:
        for conn in abusers:
            conn.close()


def test_noded_answers_despite_slow_clients(cluster):
    address = (cluster.node_ip, cluster.noded_port)
    client = rpc_client.RpcClient(
        cluster.NodePath(pathutils.NODED_CERT_FILE))

    def _Version():
        return client.Call("version", [("n", cluster.node, cluster.node_ip,
                                         False)], cluster.noded_port,
                           serializer.DumpJsonBytes([]), 5,
                           repeatable=True)["n"]

    abusers = _Silent(address) + _HalfHandshakes(address)
    try:
        time.sleep(0.5)
        # Waiting connections cost noded no process
        noded_pid = cluster.Pid("ganeti-noded")
        assert noded_pid
        assert len(ChildPids(noded_pid)) < 5
        for attempt in range(2):
            result, elapsed = _Timed(_Version)
            assert result.payload == constants.PROTOCOL_VERSION, \
                result.fail_msg
            assert elapsed < 1.0, "attempt %d took %.1f s" % (attempt,
                                                               elapsed)
            client.close()
            time.sleep(0.5)
    finally:
        client.close()
        for sock in abusers:
            sock.close()
