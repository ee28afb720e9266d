"""Fixtures shared by several test modules.

Fixtures that modules set up differently take their settings from a
module-level marker (``pytestmark``), registered below:

* ``noded_cluster``: a virtual cluster of real noded processes
  (testutils_node.TestCluster); ``noded_runner``: an RPC runner for it.
* ``kvm_cluster``: a started virtual cluster with kvm enabled and its
  parameters booting the test guest (testutils_kvm).
* ``guest_env``: one KVM hypervisor object in a short root.
* ``two_node_cluster``: a started two-node virtual cluster (node2
  joined); ``mond_cluster``: the same running ganeti-mond.
* ``ganeti3_tree``: Ganeti 3.0's programs, unpacked (testutils_ganeti3);
  ``hail_program``: its ``hail`` allocator; ``htools_programs``: its
  hbal, hspace, hinfo and the other htools.
* ``small_tmpfs``: mounts small tmpfs file systems (full-disk tests).
* ``placement_cfg``: a one-node configuration (a ConfigWriter) for the
  Placement state.
* ``headless_browser``: Chromium without a display, loading real pages
  (skips the test where it is not installed).
"""

import errno
import fcntl
import os
import random
import shutil
import subprocess

import pytest

from ganeti.hypervisor import hv_kvm

import testutils_ganeti3
import testutils_node
from testutils_cluster import SMALL_IPOLICY_BOUNDS, VirtualCluster
from testutils_config import MakeConfig
from testutils_instance import FILE_VDIR, NODE2, InstanceCluster
from testutils_kvm import (GuestHvParams, GuestRoot, KillClusterGuests,
                           KillGuests, RequireGuest)

_NOT_UNIT = ("integration", "kvm", "netns")

_FIXTURE_MARKERS = (
    "noded_cluster(nodes=2, prepare=None, setup=None): settings of the"
    " noded_cluster fixture: node count; prepare(cluster) runs before"
    " noded starts, setup(cluster) after",
    "kvm_cluster(init_args=(), file_paths=(FILE_VDIR, ), setup=None,"
    " hvparams=None):"
    " settings of the kvm_cluster fixture: extra gnt-cluster init"
    " arguments, file storage allow-list, setup(cluster) run before the kvm"
    " parameters are set, hvparams(cluster) their extra values",
)


def pytest_addoption(parser):
    """Options of the crash test (test_crash): CI runs the fixed defaults,
    longer runs pick another seed or more rounds."""
    parser.addoption("--seed", type=int, default=12,
                     help="random seed of the crash test's kill points")
    parser.addoption("--rounds", type=int, default=2,
                     help="kill rounds of each crash test scenario")


@pytest.fixture
def crash_rng(request):
    """The crash test's random generator (--seed) and rounds (--rounds)."""
    return (random.Random(request.config.getoption("seed")),
            request.config.getoption("rounds"))


def pytest_configure(config):
    for line in _FIXTURE_MARKERS:
        config.addinivalue_line("markers", line)


# Modules run slowest kind first: the workers take whole modules in
# collection order (--dist loadfile), so a KVM module collected last
# would leave the other workers idle at the end
_RUN_ORDER = ("kvm", "netns", "integration")


def _RunRank(item) -> int:
    for rank, name in enumerate(_RUN_ORDER):
        if item.get_closest_marker(name):
            return rank
    return len(_RUN_ORDER)


def pytest_collection_modifyitems(items):
    """Mark as ``unit`` every test its module does not mark otherwise, so
    that ``-m unit`` selects the in-process tests; order the modules by
    _RUN_ORDER (a stable sort: each module's tests stay in order)."""
    for item in items:
        if not any(item.get_closest_marker(name) for name in _NOT_UNIT):
            item.add_marker(pytest.mark.unit)
    ranks = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        ranks[module] = min(ranks.get(module, len(_RUN_ORDER)),
                            _RunRank(item))
    items.sort(key=lambda item: ranks[item.nodeid.split("::", 1)[0]])


@pytest.fixture
def placement_cfg(tmp_path):
    """A real one-node configuration holding a Placement state, as the
    master daemon does (placement.store.ConfigSource)."""
    return MakeConfig(str(tmp_path))


@pytest.fixture
def local_cluster_lock():
    """Serialise the tests of tools/local-cluster across test workers:
    every local cluster uses the addresses 127.0.80.x."""
    with open("/tmp/ganeti-local-cluster-tests.lock", "w",
              encoding="ascii") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def loop_device(tmp_path):
    """A 4 MiB loop device (skips the test where none can be made)."""
    image = str(tmp_path / "loop.img")
    with open(image, "wb") as fobj:
        fobj.truncate(4 * 1024 * 1024)
    try:
        result = subprocess.run(["losetup", "-f", "--show", image],
                                capture_output=True, text=True, check=False)
    except FileNotFoundError:
        pytest.skip("losetup is not installed")
    if result.returncode != 0:
        pytest.skip("cannot create loop devices here: %s" %
                    result.stderr.strip())
    device = result.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


class SmallTmpfs:
    """A small tmpfs mounted over a directory, whose space can be used up."""

    def __init__(self, path: str):
        self.path = path
        self._filler = os.path.join(path, ".filler")

    def Fill(self) -> None:
        """Use up every free block (until writes fail with ENOSPC)."""
        with open(self._filler, "ab", buffering=0) as fobj:
            try:
                while True:
                    fobj.write(b"\0" * 4096)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise

    def Free(self) -> None:
        os.unlink(self._filler)


@pytest.fixture
def small_tmpfs():
    """``mount(path, size)`` mounts a tmpfs over ``path``, unmounted at the
    end; skips the test where mounting is not allowed."""
    mounted: list[str] = []

    def mount(path: str, size: str = "512k") -> SmallTmpfs:
        os.makedirs(path, exist_ok=True)
        try:
            result = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size,
                 "tmpfs", path], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            pytest.skip("mount is not installed")
        if result.returncode != 0:
            pytest.skip("cannot mount a tmpfs here: %s" %
                        result.stderr.strip())
        mounted.append(path)
        return SmallTmpfs(path)

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", path], check=False)


def _MarkerKwargs(request, name):
    """The keyword arguments of the requesting module's ``name`` marker."""
    marker = request.node.get_closest_marker(name)
    return marker.kwargs if marker is not None else {}


@pytest.fixture(scope="module")
def noded_cluster(request):
    """A TestCluster whose nodes all run noded, per the module's
    ``noded_cluster`` marker; every noded stopped at the end."""
    settings = _MarkerKwargs(request, "noded_cluster")
    with testutils_node.TestCluster(settings.get("nodes", 2)) as cluster:
        if settings.get("prepare"):
            settings["prepare"](cluster)
        cluster.StartNoded()
        if settings.get("setup"):
            settings["setup"](cluster)
        yield cluster


@pytest.fixture
def noded_runner(noded_cluster):
    """An RpcRunner for noded_cluster, closed after the test."""
    runner = noded_cluster.Runner()
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def kvm_cluster(request):
    """A two-node InstanceCluster (node1, node2) with kvm and fake
    enabled and the kvm parameters booting the test guest, per the
    module's ``kvm_cluster`` marker; every guest killed at the end.

    Skips where QEMU or the guest kernel is missing.
    """
    settings = _MarkerKwargs(request, "kvm_cluster")
    vmlinux, initrd = RequireGuest()
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--enabled-hypervisors=kvm,fake",
                         *settings.get("init_args", ()), nodes=(NODE2, ),
                         file_paths=settings.get("file_paths",
                                                 (FILE_VDIR, ))
                         ) as cluster:
        try:
            if settings.get("setup"):
                settings["setup"](cluster)
            extra = settings["hvparams"](cluster) \
                if settings.get("hvparams") else {}
            params = GuestHvParams(vmlinux, initrd, **extra)
            cluster.Run("gnt-cluster", "modify", "-H", "kvm:" + ",".join(
                "%s=%s" % item for item in sorted(params.items())))
            yield cluster
        finally:
            KillClusterGuests(cluster)


@pytest.fixture(scope="session")
def ganeti3_tree():
    """Where Ganeti 3.0's package and its clients' Python modules are
    unpacked (testutils_ganeti3); skips where apt cannot fetch them."""
    try:
        return testutils_ganeti3.Unpack()
    except testutils_ganeti3.Unavailable as err:
        pytest.skip("Ganeti 3.0's programs are not available: %s" % err)


@pytest.fixture(scope="session")
def hail_program():
    """Ganeti 3.0's ``hail`` and the environment it runs in
    (testutils_ganeti3.UnpackHail); skips where apt cannot fetch it or
    it does not run here."""
    try:
        return testutils_ganeti3.UnpackHail()
    except testutils_ganeti3.Unavailable as err:
        pytest.skip("Ganeti 3.0's hail is not available: %s" % err)


@pytest.fixture(scope="session")
def htools_programs():
    """Ganeti 3.0's htools (hbal, hspace, hinfo, ...): a function giving
    a program's path, and the environment they run in
    (testutils_ganeti3.UnpackHtools); skips where apt cannot fetch them
    or they do not run here."""
    try:
        hbal, env = testutils_ganeti3.UnpackHtools(os.path.join(
            testutils_ganeti3.HTOOLS_BINDIR, "hbal"))
    except testutils_ganeti3.Unavailable as err:
        pytest.skip("Ganeti 3.0's htools are not available: %s" % err)
    return (lambda name: os.path.join(os.path.dirname(hbal), name)), env


@pytest.fixture
def guest_env():
    """A KVM hypervisor in a short root; every QEMU killed at the end."""
    vmlinux, initrd = RequireGuest()
    root = GuestRoot()
    kvm = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "kvm"))
    try:
        yield kvm, root, vmlinux, initrd
    finally:
        KillGuests(kvm)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def two_node_cluster():
    """A started VirtualCluster, node1 the master and node2 joined, as
    ``gnt-cluster init`` and ``gnt-node add`` leave them."""
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.AddNode(NODE2)
        yield cluster
    finally:
        cluster.Cleanup()


@pytest.fixture(scope="module")
def mond_cluster(two_node_cluster):
    """two_node_cluster running ganeti-mond on both nodes, the
    self-diagnose collected every second and the fake instances' status
    every half second."""
    two_node_cluster.Run("gnt-cluster", "modify",
                         "--data-collector-interval",
                         "diagnose=1,inst-status-fake=0.5")
    for node in two_node_cluster.nodes.values():
        node.Run("daemon-util", "start", "ganeti-mond")
    return two_node_cluster


class HeadlessBrowser:
    """Chromium in headless mode, one process per page load, with a
    profile of its own (root needs --no-sandbox)."""

    def __init__(self, program: str, profile: str):
        self._cmd = [program, "--headless", "--no-sandbox", "--disable-gpu",
                     "--no-first-run", "--user-data-dir=%s" % profile,
                     "--window-size=1280,1024"]

    def _Run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(self._cmd + list(args), capture_output=True,
                              text=True, timeout=120, check=True)

    def DumpDom(self, url: str) -> str:
        """The DOM of the loaded page, serialized."""
        return self._Run("--dump-dom", url).stdout

    def Screenshot(self, url: str, path: str) -> None:
        """A PNG of the loaded page."""
        self._Run("--screenshot=%s" % path, url)


@pytest.fixture
def headless_browser(tmp_path):
    """A HeadlessBrowser; tools/run-tests installs chromium where apt can
    run."""
    program = shutil.which("chromium")
    if program is None:
        pytest.skip("chromium is not installed (package chromium)")
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    return HeadlessBrowser(program, str(profile))
