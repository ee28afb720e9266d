"""Our hbal and hspace against Ganeti 3.0's, on the same live cluster.

Ganeti's own htools (Debian's ganeti-htools-3.0, fetched and unpacked by
the ``htools_programs`` fixture) read the cluster over LUXI from our
masterd (``-L<socket>``); ours read it as the built-in allocator sees it.
On a three-node virtual cluster of fixed node sizes (the fake
hypervisor's ``.node-size``: the host's free memory changes from moment
to moment) with instances of different sizes, running and stopped, both
must print the same initial score and the same hspace report, human and
``--machine-readable``.
"""

import os
import re
import subprocess

import pytest

from ganeti import pathutils

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, NODE1, NODE2, NODE3, InstanceCluster,
                                RemoveInstances)

pytestmark = pytest.mark.integration

# total MiB, node's own MiB, CPUs
NODE_SIZES = {NODE1: (16384, 1024, 4), NODE2: (8192, 512, 2),
              NODE3: (12288, 1024, 4)}
# name, node, memory, vcpus, started
INSTANCES = (("big1", NODE1, 4096, 2, True), ("small1", NODE1, 256, 1, True),
             ("mid2", NODE2, 1024, 1, True),
             ("stopped3", NODE3, 2048, 2, False))


@pytest.fixture(scope="module")
def vc(htools_programs):
    """Diskless instances (disk figures are the host's, which change) on
    three nodes of different sizes."""
    with InstanceCluster("--enabled-disk-templates=diskless",
                         "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         file_paths=()) as cluster:
        for name, size in NODE_SIZES.items():
            path = cluster.nodes[name].NodePath(os.path.join(
                pathutils.FAKE_HV_DIR, ".node-size"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="ascii") as fobj:
                fobj.write("%d %d %d\n" % size)
        for name, node, memory, vcpus, started in INSTANCES:
            cluster.Run("gnt-instance", "add", "-t", "diskless", "-n", node,
                        "--no-install", "-B",
                        "memory=%d,vcpus=%d" % (memory, vcpus),
                        *([] if started else ["--no-start"]), *CHECKS, name,
                        timeout=120)
        cluster.htools = htools_programs
        yield cluster


def _Ganeti(cluster, program, *args):
    """Ganeti 3.0's program on the cluster's master socket."""
    path, env = cluster.htools
    result = subprocess.run([path(program), "-L%s" % cluster.master_socket,
                             *args], capture_output=True, text=True,
                            env=dict(os.environ, **env), timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _Ours(cluster, program, *args):
    return cluster.Run(program, "-L", *args).stdout


def _Score(text):
    return float(re.search(r"^Initial score: ([0-9.]+)$", text,
                           re.M).group(1))


def _Keys(text):
    return dict(line.split("=", 1) for line in text.splitlines())


def test_live_node_memory_adds_up(vc):
    """mtotal = mnode + mfree + the running instances' memory, as the
    htools check: the fake hypervisor's figures, not the host's."""
    out = vc.Run("gnt-node", "list", "--no-headers", "--units=m",
                 "--separator=|", "-o", "name,mtotal,mnode,mfree,ctotal")
    used = {NODE1: 4096 + 256, NODE2: 1024, NODE3: 0}
    for line in out.stdout.splitlines():
        name, total, node, free, cpus = line.split("|")
        size = NODE_SIZES[name]
        assert (int(total), int(node), int(cpus)) == \
            (size[0], size[1], size[2]), line
        assert int(free) == size[0] - size[1] - used[name], line


def test_hbal_initial_score(vc):
    theirs = _Ganeti(vc, "hbal")
    # -L<path> names the socket, as for Ganeti's
    ours = vc.Run("hbal", "-L%s" % vc.master_socket).stdout
    assert _Score(ours) == pytest.approx(_Score(theirs), abs=2e-8), \
        (theirs, ours)
    # Ganeti's load components count every instance (no load data)
    assert _Score(ours) > 1.0, ours


# The policy's maximum spec (SMALL_IPOLICY_BOUNDS: 2 TB of memory) would
# take Ganeti's hspace hours to shrink: the tiered spec is given
TIERED = ("--tiered-alloc", "1024,4g,2")


def _Standard(lines):
    return lines[lines.index("Standard (fixed-size) instance spec is:"):]


def test_hspace_human(vc):
    theirs = _Ganeti(vc, "hspace", *TIERED).splitlines()
    ours = _Ours(vc, "hspace", *TIERED).splitlines()
    assert ours == theirs, (theirs, ours)
    # the tiered run's first tier
    assert ours[6].startswith("  -   2 instances of spec MEM 4096, DSK"
                              " 1024, CPU 2"), ours


@pytest.mark.parametrize("args", [
    (),
    ("--no-capacity-checks", ),
    ("-l", "3"),
    ("--standard-alloc", "0,1g,2"),
])
def test_hspace_machine_readable(vc, args):
    theirs = _Keys(_Ganeti(vc, "hspace", "--machine-readable", *TIERED,
                           *args))
    ours = _Keys(_Ours(vc, "hspace", "--machine-readable=yes", *TIERED,
                       *args))
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert ours[key] == value, key
    assert ours["HTS_OK"] == "1"


def test_capacity_is_hspace(vc):
    """gnt-cluster capacity: hspace with the standard spec in
    --memory/--disk/--vcpus."""
    ours = vc.Run("gnt-cluster", "capacity", "--memory", "1G", "--vcpus",
                  "1", *TIERED).stdout.splitlines()
    theirs = _Ganeti(vc, "hspace", "--standard-alloc", "1024,1024,1",
                     *TIERED).splitlines()
    assert _Standard(ours) == _Standard(theirs), (theirs, ours)
    assert "Normal (fixed-size) allocation results:" in ours


def test_after_adding_an_instance(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE3,
           "--no-install", "-B", "memory=3072,vcpus=3", *CHECKS, "late3",
           timeout=120)
    try:
        theirs = _Keys(_Ganeti(vc, "hspace", "--machine-readable",
                               *TIERED))
        ours = _Keys(_Ours(vc, "hspace", "--machine-readable", *TIERED))
        assert ours == theirs
        assert _Score(_Ours(vc, "hbal")) == pytest.approx(
            _Score(_Ganeti(vc, "hbal")), abs=2e-8)
    finally:
        RemoveInstances(vc, "late3")


def _Both(cluster, program, *args):
    """Ours and Ganeti 3.0's program on the cluster, whatever their exit
    codes: (ours, theirs) CompletedProcesses."""
    path, env = cluster.htools
    theirs = subprocess.run([path(program), "-L%s" % cluster.master_socket,
                             *args], capture_output=True, text=True,
                            env=dict(os.environ, **env), timeout=60,
                            check=False)
    return cluster.Run(program, "-L", *args, check=False), theirs


def _Block(text, title):
    """The table -p or --print-instances printed under ``title``."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_hbal_print_nodes_and_instances(vc):
    ours, theirs = _Both(vc, "hbal", "-p", "--print-instances")
    assert ours.returncode == theirs.returncode == 0, (ours, theirs)
    for title in ("Initial instance map:", "Initial cluster status:"):
        assert _Block(ours.stderr, title) == _Block(theirs.stderr, title), \
            (title, theirs.stderr, ours.stderr)
    rows = _Block(ours.stderr, "Initial cluster status:")
    assert rows[0].split()[:3] == ["F", "Name", "t_mem"]
    assert len(rows) == 1 + len(NODE_SIZES)
    assert "Final cluster status:" in ours.stderr


def test_hbal_offline_node(vc):
    """-O with a node's short name: offline for the computation (F "-",
    left out of the score); an unknown name is Ganeti's error."""
    short = NODE3.split(".")[0]
    ours, theirs = _Both(vc, "hbal", "-O", short, "-pstatus,name,pcnt")
    assert ours.returncode == theirs.returncode == 0, (ours, theirs)
    title = "Initial cluster status:"
    assert _Block(ours.stderr, title) == _Block(theirs.stderr, title)
    assert [row.split()[1] for row in _Block(ours.stderr, title)
            if row.startswith(" - ")] == [NODE3]
    assert _Score(ours.stdout) == pytest.approx(_Score(theirs.stdout),
                                                abs=2e-8)
    ours, theirs = _Both(vc, "hbal", "-O", "nodeX")
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr == theirs.stderr == \
        "Error: wrong node name(s) set as offline: nodeX\n\n"


def test_hspace_print_nodes(vc):
    ours, theirs = _Both(vc, "hspace", "-p", *TIERED)
    assert ours.returncode == theirs.returncode == 0, (ours, theirs)
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr, (theirs.stderr, ours.stderr)
    assert ours.stderr.count(" status:\n") == 3
