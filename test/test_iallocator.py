"""Instance allocators on a virtual cluster: the input message, external
programs run through noded (and their failures), placement without -n and
opportunistic locking."""

import json
import os
import subprocess

import pytest

from ganeti import pathutils
from ganeti.masterd import iallocator

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, NODE1, NODE2, NODE3, Config, Fail,
                                InstanceCluster, PrimaryNode)

pytestmark = pytest.mark.integration

# A script allocator: its behaviour is read from a file beside it, so each
# test picks one; "ok" places on the node with the least primary memory
_ALLOCATOR = r"""#!%(python)s
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "behaviour")) as fobj:
    behaviour = fobj.read().strip()
with open(sys.argv[1]) as fobj:
    data = json.load(fobj)
with open(os.path.join(here, "last-input.json"), "w") as fobj:
    json.dump({"argv": sys.argv[2:], "message": data}, fobj)
if behaviour == "crash":
    print("allocator exploded: no coffee")
    sys.exit(3)
if behaviour == "garbage":
    print("this is { not json")
    sys.exit(0)
if behaviour == "hang":
    time.sleep(60)
if behaviour == "unknown":
    print(json.dumps({"success": True, "info": "",
                      "result": ["ghost.example.test"]}))
    sys.exit(0)
if behaviour.startswith("sleep"):
    time.sleep(float(behaviour[5:]))
req = data["request"]
allowed = req.get("restrict-to-nodes")
nodes = sorted((info.get("i_pri_memory", 0), name)
               for name, info in data["nodes"].items()
               if "free_memory" in info and
               (allowed is None or name in allowed))
out = {"success": True, "info": "allocation successful",
       "result": [nodes[0][1]]}
if "--explain" in sys.argv:
    out["explanation"] = "%%s has the least primary memory" %% nodes[0][1]
print(json.dumps(out))
"""


def _Behave(vc, behaviour: str) -> None:
    with open(os.path.join(_AllocDir(vc), "behaviour"), "w") as fobj:
        fobj.write(behaviour)


def _AllocDir(vc) -> str:
    return vc.NodePath(pathutils.IALLOCATOR_SEARCH_PATH[0])


def _LastInput(vc) -> dict:
    with open(os.path.join(_AllocDir(vc), "last-input.json")) as fobj:
        return json.load(fobj)


@pytest.fixture(scope="module")
def vc():
    # Short enough for the hanging allocator (masterd passes it to noded)
    old = os.environ.get(iallocator.ENV_TIMEOUT)
    os.environ[iallocator.ENV_TIMEOUT] = "3"
    try:
        with InstanceCluster("--ipolicy-bounds-specs",
                             SMALL_IPOLICY_BOUNDS) as cluster:
            path = _AllocDir(cluster)
            os.makedirs(path)
            with open(os.path.join(path, "testalloc"), "w") as fobj:
                fobj.write(_ALLOCATOR % {"python": os.sys.executable})
            os.chmod(os.path.join(path, "testalloc"), 0o755)
            _Behave(cluster, "ok")
            yield cluster
    finally:
        if old is None:
            os.environ.pop(iallocator.ENV_TIMEOUT, None)
        else:
            os.environ[iallocator.ENV_TIMEOUT] = old


def _Remove(vc, *names: str) -> None:
    for name in names:
        vc.Run("gnt-instance", "remove", "-f", name)


def test_default_allocator_is_builtin(vc):
    info = vc.Run("gnt-cluster", "info").stdout
    assert "default instance allocator: halloc" in info


def test_input_message_has_every_field(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "-B", "maxmem=32,minmem=32", "--tags", "web",
           *CHECKS, "msg1")
    try:
        vc.Run("gnt-node", "modify", "--drained=yes", NODE3)
        text = vc.Run("gnt-debug", "iallocator", "--dir", "in", "-t",
                      "file", "--disks", "12", "--mem", "16",
                      "newinst").stdout
    finally:
        vc.Run("gnt-node", "modify", "--drained=no", NODE3)
        _Remove(vc, "msg1")
    data = json.loads(text)
    assert set(data) == {"version", "cluster_name", "cluster_tags",
                         "enabled_hypervisors", "ipolicy", "nodegroups",
                         "nodes", "instances", "request"}
    assert data["version"] == 2
    assert data["cluster_name"] == vc.cluster_name
    for group in data["nodegroups"].values():
        assert set(group) == {"name", "alloc_policy", "networks",
                              "ipolicy", "tags"}
    static = {"tags", "primary_ip", "secondary_ip", "offline", "drained",
              "master_candidate", "group", "master_capable", "vm_capable",
              "ndparams"}
    dynamic = {"total_memory", "reserved_memory", "free_memory",
               "total_disk", "free_disk", "total_spindles", "free_spindles",
               "total_cpus", "reserved_cpus", "i_pri_memory",
               "i_pri_up_memory"}
    assert set(data["nodes"]) == {NODE1, NODE2, NODE3}
    assert set(data["nodes"][NODE2]) == static | dynamic
    # A drained node gets no runtime data
    assert set(data["nodes"][NODE3]) == static
    assert data["nodes"][NODE2]["i_pri_memory"] == 32
    assert data["nodes"][NODE2]["total_disk"] > 0
    inst = data["instances"]["msg1"]
    assert set(inst) == {"tags", "admin_state", "vcpus", "memory",
                         "spindle_use", "os", "nodes", "nics", "disks",
                         "disk_template", "disks_active", "hypervisor",
                         "disk_space_total"}
    assert inst["nodes"] == [NODE2] and inst["tags"] == ["web"]
    assert set(inst["nics"][0]) >= {"mac", "ip", "mode", "link"}
    req = data["request"]
    assert set(req) == {"type", "name", "disk_template", "group_name",
                        "tags", "os", "vcpus", "memory", "spindle_use",
                        "disks", "disk_space_total", "nics",
                        "required_nodes", "hypervisor"}
    assert (req["type"], req["required_nodes"], req["disk_space_total"],
            req["memory"]) == ("allocate", 1, 12, 16)


@pytest.mark.parametrize("mode,extra", [
    ("relocate", ()), ("allocate-secondary", ()),
    ("multi-allocate", ("--count", "2")),
    ("node-evacuate", ("--evac-mode", "primary-only")),
    ("change-group", ("--target-groups", "default")),
])
def test_input_message_request_types(vc, mode, extra):
    name = "x" if mode in ("relocate", "allocate-secondary") else "a,b"
    if mode == "relocate":
        out = Fail(vc, "gnt-debug", "iallocator", "--mode", mode, name)
        assert "not known" in out
        return
    data = json.loads(vc.Run("gnt-debug", "iallocator", "--mode", mode,
                             *extra, name).stdout)
    assert data["request"]["type"] == mode
    if mode == "multi-allocate":
        assert len(data["request"]["instances"]) == 2
    elif mode == "node-evacuate":
        assert data["request"]["evac_mode"] == "primary-only"
    elif mode == "change-group":
        assert data["request"]["target_groups"] == ["default"]


def test_script_allocator_output_and_params(vc):
    vc.Run("gnt-cluster", "modify", "--default-iallocator-params",
           "verbose=1")
    try:
        out = vc.Run("gnt-debug", "iallocator", "--dir", "out", "-I",
                     "testalloc", "-t", "file", "--disks", "10",
                     "newinst").stdout
    finally:
        vc.Run("gnt-cluster", "modify", "--default-iallocator-params", "")
    assert json.loads(out)["success"] is True
    assert _LastInput(vc)["argv"] == ["--verbose=1"]


@pytest.mark.parametrize("behaviour,message", [
    ("crash", "exited with exit code 3, output 'allocator exploded: no"
     " coffee'"),
    ("garbage", "Can't parse the results of iallocator 'testalloc'"),
    ("hang", "timed out after 3"),
    ("unknown", "iallocator 'testalloc' returned an invalid result: node"
     " ghost.example.test does not exist"),
])
def test_broken_allocator_is_a_clear_error(vc, behaviour, message):
    _Behave(vc, behaviour)
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "file", "--disk",
                   "0:size=4M", "-o", "tinyimage", "-I", "testalloc",
                   *CHECKS, "broken1")
    finally:
        _Behave(vc, "ok")
    assert message in out, out
    assert "testalloc" in out
    assert Config(vc)["instances"] == {}
    assert Config(vc).get("disks", {}) == {}


def test_missing_allocator(vc):
    out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
               "tinyimage", "-I", "nosuchalloc", *CHECKS, "missing1")
    assert "iallocator module 'nosuchalloc' not found in the search path" \
        in out, out


def test_add_without_node_fills_nodes(vc):
    vc.Run("gnt-cluster", "modify", "--default-iallocator", "testalloc")
    names = ["fill%d" % idx for idx in range(3)]
    try:
        for name in names:
            vc.Run("gnt-instance", "add", "-t", "file", "--disk",
                   "0:size=4M", "-o", "tinyimage", "-B",
                   "maxmem=32,minmem=32", "--no-start", *CHECKS, name)
        assert sorted(PrimaryNode(vc, name) for name in names) == \
            [NODE1, NODE2, NODE3]
        out = vc.Run("gnt-instance", "add", "-t", "diskless", "-o",
                     "tinyimage", "--no-start", "--explain", *CHECKS,
                     "explained").stdout
        assert "has the least primary memory" in out, out
        names.append("explained")
        assert Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                    "tinyimage", "-n", NODE2, "-I", "testalloc", *CHECKS,
                    "both") != ""
    finally:
        vc.Run("gnt-cluster", "modify", "--default-iallocator", "halloc")
        _Remove(vc, *names)


def test_concurrent_creations_with_opportunistic_locking(vc):
    _Behave(vc, "sleep1.5")
    names = ["opp1", "opp2"]
    try:
        procs = [subprocess.Popen(
            ["gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
             "-I", "testalloc", "--opportunistic-locking", "--no-start",
             *CHECKS, name], env=vc.env, cwd=vc.base, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for name in names]
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outputs
        # Each allocation saw only the nodes it could lock
        assert PrimaryNode(vc, "opp1") != PrimaryNode(vc, "opp2")
    finally:
        _Behave(vc, "ok")
        _Remove(vc, *[name for name in names
                      if name in {inst["name"] for inst
                                  in Config(vc)["instances"].values()}])
