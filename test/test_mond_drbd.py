"""mond's ``drbd`` collector on a virtual cluster with a drbd instance.

Real mirror daemons (qemu-storage-daemon) on the primary and the
secondary; each node's mond reports its side of the disk in Ganeti's
format, with the minor and instance of the configuration. A secondary
that dies turns the primary's report into a temporary failure until the
disks are activated again; the collector is switched off and on with
gnt-cluster modify --enabled-data-collectors like the others.
"""

import json
import os
import time
import urllib.error
import urllib.request

import pytest

from ganeti import constants, pathutils
from ganeti.monitoring import report
from ganeti.utils import process

from testutils_instance import (CHECKS, NODE2, FindInstance, InstanceCluster,
                                RemoveInstances)
from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, *DRBD_TOOLS]

PATH = "/1/report/storage/drbd"
SIZE = 16
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def vc():
    """Two nodes of a drbd cluster running mond, the drbd collector
    collected every half second."""
    with InstanceCluster("--enabled-disk-templates=drbd,file") as cluster:
        cluster.Run("gnt-cluster", "modify", "--data-collector-interval",
                    "drbd=0.5")
        for node in (cluster, cluster.nodes[NODE2]):
            node.Run("daemon-util", "start", "ganeti-mond")
        yield cluster


def _Get(node, path: str):
    url = "http://%s:%d%s" % (node.node_ip, constants.DEFAULT_MOND_PORT, path)
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def _WaitReport(node, predicate, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while True:
        rep = _Get(node, PATH)
        if predicate(rep["data"]):
            return rep
        if time.monotonic() > deadline:
            raise AssertionError("Last drbd report: %s" % rep)
        time.sleep(0.2)


def _ConnectedAndKnown(data) -> bool:
    """The one device is connected and named in the node's configuration."""
    return bool(data["deviceInfos"]) and \
        data["deviceInfos"][0]["connectionState"] == "Connected" and \
        data["deviceInfos"][0]["instance"] is not None


def _Minors(cluster, node_name: str) -> dict[str, int]:
    """Instance name -> minor, as gnt-node list-drbd shows them."""
    out = cluster.Run("gnt-node", "list-drbd", "--no-headers",
                      "--separator=|", node_name).stdout
    return {fields[2]: int(fields[1]) for fields in
            (line.split("|") for line in out.splitlines())}


def _Write(path: str) -> None:
    with open(path, "r+b") as fobj:
        fobj.write(b"m" * MIB * 2)
        fobj.flush()
        os.fsync(fobj.fileno())


def _OneDevice(data) -> dict:
    (device, ) = data["deviceInfos"]
    return device


def test_drbd_collector(vc):
    node2 = vc.nodes[NODE2]
    listed = _Get(vc, "/1/list/collectors")
    assert ["drbd", "storage", report.KIND_STATUS] in listed
    rep = _Get(vc, PATH)
    assert (rep["name"], rep["category"], rep["kind"], rep["version"]) == \
        ("drbd", "storage", report.KIND_STATUS, "B")
    assert rep["data"] == {"versionInfo": {}, "deviceInfos": [],
                           "status": {"code": report.STATUS_OK,
                                      "message": ""}}

    vc.Run("gnt-instance", "add", "-t", "drbd", "-n",
           "%s:%s" % (vc.node, NODE2), "--disk", "0:size=%dM" % SIZE,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "mon-drbd", timeout=120)
    try:
        _, (disk, ) = FindInstance(vc, "mon-drbd")
        port = disk["logical_id"][2]
        # The pair connects before the job writes the instance into the
        # configuration the report takes the minor from: wait for both
        primary = _OneDevice(_WaitReport(vc, _ConnectedAndKnown)["data"])
        assert primary["minor"] == _Minors(vc, vc.node)["mon-drbd"]
        assert (primary["instance"], primary["disk"], primary["port"]) == \
            ("mon-drbd", "disk/0", port)
        assert (primary["localRole"], primary["remoteRole"],
                primary["localState"], primary["remoteState"]) == \
            ("Primary", "Secondary", "UpToDate", "UpToDate")
        assert primary["replicationProtocol"] == "C"
        assert primary["ioFlags"] == "r-----"
        assert "syncStatus" not in primary
        assert primary["perfIndicators"]["outOfSync"] == 0
        # What is written goes to the peer
        device_path = vc.NodePath(os.path.join(pathutils.DRBD_RUN_DIR,
                                               "d%d.dev" % port))
        _Write(device_path)
        _WaitReport(vc, lambda data: data["deviceInfos"][0][
            "perfIndicators"]["networkSend"] >= 2 * 1024)
        data = _Get(vc, PATH)["data"]
        assert data["status"] == {"code": report.STATUS_OK, "message": ""}
        assert data["versionInfo"]["version"].count(".") == 2

        secondary = _OneDevice(_WaitReport(node2, _ConnectedAndKnown)["data"])
        assert secondary["minor"] == _Minors(vc, NODE2)["mon-drbd"]
        assert (secondary["instance"], secondary["localRole"],
                secondary["remoteRole"], secondary["localState"]) == \
            ("mon-drbd", "Secondary", "Primary", "UpToDate")

        # The secondary's daemon dies: the primary waits for it
        pid_file = node2.NodePath(os.path.join(pathutils.DRBD_RUN_DIR,
                                               "d%d.pid" % port))
        process.KillProcess(process.ReadPidFile(pid_file), timeout=15)
        rep = _WaitReport(vc, lambda data: data["status"]["code"] ==
                          report.STATUS_TEMPORARY)
        device = _OneDevice(rep["data"])
        assert (device["connectionState"], device["remoteRole"],
                device["remoteState"]) == \
            ("WFConnection", "Unknown", "DUnknown")
        assert rep["data"]["status"]["message"] == \
            "%d: Trying to establish a network connection" % primary["minor"]
        # Its own report drops the disk at its next collection
        _WaitReport(node2, lambda data: data["deviceInfos"] == [])

        vc.Run("gnt-instance", "activate-disks", "--wait-for-sync",
               "mon-drbd", timeout=120)
        _WaitReport(vc, lambda data: data["status"]["code"] ==
                    report.STATUS_OK and
                    data["deviceInfos"][0]["connectionState"] == "Connected")
        # The primary connects again at its next write
        _Write(device_path)
        _WaitReport(node2, lambda data: data["deviceInfos"] and
                    data["deviceInfos"][0]["connectionState"] == "Connected")
    finally:
        RemoveInstances(vc, "mon-drbd")
    _WaitReport(vc, lambda data: data["deviceInfos"] == [])


def test_drbd_collector_disabled_and_enabled(vc):
    vc.Run("gnt-cluster", "modify", "--enabled-data-collectors",
           "drbd=false")
    try:
        info = vc.Run("gnt-cluster", "info").stdout
        assert "drbd:\n    active: False" in info
        assert "drbd" not in [entry[0] for entry in
                              _Get(vc, "/1/list/collectors")]
        with pytest.raises(urllib.error.HTTPError) as err:
            _Get(vc, PATH)
        assert err.value.code == 404
    finally:
        vc.Run("gnt-cluster", "modify", "--enabled-data-collectors",
               "drbd=true")
    assert _Get(vc, PATH)["name"] == "drbd"
