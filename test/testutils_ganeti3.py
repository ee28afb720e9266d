"""Ganeti 3.0.2's own ``gnt-*`` programs, run against our clusters.

The Debian package ``ganeti-3.0`` (and the Python modules its clients
import that the venv lacks) is fetched with ``apt-get download`` into a
cache directory and unpacked there with ``dpkg-deb -x``, never installed:
an installed Ganeti would start its own daemons on our ports. Its
programs then run with the venv's Python, its ``ganeti`` package first on
the path, and a node's ``GANETI_ROOTDIR``/``GANETI_HOSTNAME``: Ganeti's
vcluster convention is ours, so they find the node's ssconf and the
master's LUXI socket below the node root. Ganeti's ``hail`` (package
``ganeti-htools-3.0``) is fetched and unpacked the same way, into a tree
of its own (UnpackHail).
"""

import fcntl
import glob
import json
import os
import subprocess
import sys

from testutils_cluster import VirtualNode

CACHE = os.environ.get("GANETI3_TEST_CACHE", "/tmp/ganeti3-client-cache")
GANETI_PACKAGE = "ganeti-3.0"
# What Ganeti 3.0's client modules import that the venv does not have
# (the Debian builds match the venv's Python 3.11)
DEPENDENCIES = ("python3-bitarray", "python3-pyparsing", "python3-psutil")
_SHARE = os.path.join("usr", "share", "ganeti", "3.0")
HAIL_PACKAGES = ("ganeti-htools-3.0", "libpcre3")
HAIL_PATH = os.path.join("usr", "lib", "ganeti", "3.0", "usr", "lib",
                         "ganeti", "iallocators", "hail")
# The other htools (hbal, hspace, hinfo, hscan, hcheck, ...): the same
# multi-call program under their own names
HTOOLS_BINDIR = os.path.join("usr", "lib", "ganeti", "3.0", "usr", "bin")
_DIST_PACKAGES = os.path.join("usr", "lib", "python3", "dist-packages")


class Unavailable(Exception):
    """Why Ganeti 3.0's programs cannot be had on this machine."""


def _Download(package: str) -> str:
    """The package's .deb in the cache, downloaded if needed; as root,
    with the package lists updated once if the first try fails."""
    pattern = os.path.join(CACHE, "%s_*.deb" % package)
    failure = ""
    for update in [False, True] if os.geteuid() == 0 else [False]:
        if glob.glob(pattern):
            break
        try:
            if update:
                subprocess.run(["apt-get", "update", "-q"],
                               capture_output=True, check=False)
            result = subprocess.run(["apt-get", "download", package],
                                    cwd=CACHE, capture_output=True,
                                    text=True, check=False)
        except FileNotFoundError as err:
            raise Unavailable("cannot run apt-get: %s" % err) from err
        failure = result.stderr.strip()[-300:]
    debs = sorted(glob.glob(pattern))
    if not debs:
        raise Unavailable("cannot download %s: %s" % (package, failure))
    return debs[-1]


def _PythonPath(tree: str) -> str:
    """Ganeti's package first, then the modules its clients import."""
    return os.pathsep.join([os.path.join(tree, _SHARE),
                            os.path.join(tree, _DIST_PACKAGES)])


def Unpack() -> str:
    """The directory the packages are unpacked into (done once, also
    across concurrent test workers), checked to import with our Python.
    """
    tree = os.path.join(CACHE, "root")
    _Extract(tree)
    # Debian builds its C modules (bitarray, psutil) for its own Python
    result = subprocess.run(
        [sys.executable, "-c", "import ganeti.client.gnt_instance"],
        env=dict(os.environ, PYTHONPATH=_PythonPath(tree)),
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise Unavailable("Ganeti 3.0's clients do not import with %s: %s"
                          % (sys.executable,
                             (result.stderr.strip().splitlines() or
                              ["exit code %d" % result.returncode])[-1]))
    return tree


def _Extract(tree: str,
             packages: tuple[str, ...] = (GANETI_PACKAGE, ) + DEPENDENCIES
             ) -> None:
    """Unpack the packages into ``tree`` unless done before."""
    done = os.path.join(CACHE, ".unpacked-%s" % os.path.basename(tree))
    if os.path.exists(done):
        return
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w", encoding="ascii") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(done):
            for package in packages:
                try:
                    subprocess.run(["dpkg-deb", "-x", _Download(package),
                                    tree], check=True)
                except FileNotFoundError as err:
                    raise Unavailable("cannot unpack %s: %s" %
                                      (package, err)) from err
            with open(done, "w", encoding="ascii"):
                pass


def UnpackHail() -> tuple[str, dict[str, str]]:
    """Ganeti 3.0's ``hail`` (package ganeti-htools-3.0, a multi-call
    ``htools`` program picking its personality by the name it is run
    under) and the environment it needs: libpcre3, which Debian 12 no
    longer installs by default, unpacked beside it and found through
    LD_LIBRARY_PATH. Checked to run."""
    return UnpackHtools(HAIL_PATH)


def UnpackHtools(path: str) -> tuple[str, dict[str, str]]:
    """One of Ganeti 3.0's htools (``path`` in package ganeti-htools-3.0,
    e.g. ``os.path.join(HTOOLS_BINDIR, "hspace")``) and the environment
    it needs (see UnpackHail). Checked to run."""
    tree = os.path.join(CACHE, "hail-root")
    _Extract(tree, HAIL_PACKAGES)
    program = os.path.join(tree, path)
    env = {"LD_LIBRARY_PATH": os.path.join(tree, "lib", "x86_64-linux-gnu")}
    try:
        result = subprocess.run([program, "--version"], capture_output=True,
                                env=dict(os.environ, **env), text=True,
                                check=False)
    except OSError as err:
        raise Unavailable("cannot run %s: %s" % (program, err)) from err
    if result.returncode != 0:
        raise Unavailable("%s does not run: %s" %
                          (program, result.stderr.strip()[-300:]))
    return program, env


class Ganeti3:
    """Runs Ganeti 3.0's programs as one node of a virtual cluster."""

    def __init__(self, node: VirtualNode, tree: str):
        """``tree``: where Unpack() put the packages."""
        self.node = node
        self.bindir = os.path.join(tree, _SHARE)
        self.env = dict(node.env, PYTHONPATH=_PythonPath(tree))

    def Run(self, program: str, *args: str, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """Run one of Ganeti's gnt-* programs; with ``check``, fail on a
        non-zero exit code with the program's output."""
        argv = [sys.executable, os.path.join(self.bindir, program)] + \
            list(args)
        result = subprocess.run(argv, env=self.env, cwd=self.node.cluster.base,
                                capture_output=True, text=True,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError("Ganeti 3.0's %s %s failed (%d):\n"
                                 "stdout: %s\nstderr: %s" %
                                 (program, " ".join(args), result.returncode,
                                  result.stdout, result.stderr))
        return result


def FieldDefinitions(tree: str) -> dict[str, dict[str, list[str]]]:
    """Ganeti 3.0's query fields, read from its own ganeti.query:
    ``{resource: {name: [title, kind]}}``."""
    script = ("import json, sys\n"
              "from ganeti import query\n"
              "json.dump({res: {name: [fdef.title, fdef.kind]\n"
              "                 for name, (fdef, _, _, _) in table.items()}\n"
              "           for res, table in query.ALL_FIELDS.items()},\n"
              "          sys.stdout)\n")
    result = subprocess.run([sys.executable, "-c", script],
                            env=dict(os.environ, PYTHONPATH=_PythonPath(tree)),
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _ISpec(spec: dict) -> str:
    return ",".join(str(spec[key]) for key in (
        "memory-size", "cpu-count", "disk-size", "disk-count", "nic-count",
        "spindle-use"))


def _IPolicyLine(owner: str, policy: dict) -> str:
    minmax = ";".join("%s;%s" % (_ISpec(pair["min"]), _ISpec(pair["max"]))
                      for pair in policy["minmax"])
    return "|".join([owner, _ISpec(policy["std"]), minmax,
                     ",".join(policy["disk-templates"]),
                     str(policy["vcpu-ratio"]), str(policy["spindle-ratio"])])


def HtoolsTextData(message: dict) -> str:
    """An iallocator input message as the htools' text data (``-t``;
    htools(1)), so that Ganeti 3.0's hbal and hspace read the cluster our
    model reads from the message. Its instances run unless their admin
    state is not "up"; every group has the cluster's instance policy."""
    groups = message["nodegroups"]
    lines = ["%s|%s|%s||" % (group["name"], uuid, group["alloc_policy"])
             for uuid, group in groups.items()]
    lines.append("")
    for name, node in message["nodes"].items():
        nd = node.get("ndparams") or {}
        lines.append("|".join(str(value) for value in [
            name, node["total_memory"], node["reserved_memory"],
            node["free_memory"], node["total_disk"], node["free_disk"],
            node["total_cpus"], "Y" if node.get("offline") else "N",
            node["group"], nd.get("spindle_count", 1),
            ",".join(node.get("tags") or []),
            "Y" if nd.get("exclusive_storage") else "N",
            # free spindles count with exclusive storage only, as read
            # over LUXI
            node.get("free_spindles", 0) if nd.get("exclusive_storage")
            else 0, node.get("reserved_cpus", 0),
            nd.get("cpu_speed", 1.0)]))
    lines.append("")
    for name, inst in message["instances"].items():
        nodes = inst["nodes"]
        lines.append("|".join(str(value) for value in [
            name, inst["memory"], inst["disk_space_total"], inst["vcpus"],
            "running" if inst.get("admin_state", "up") == "up"
            else "ADMIN_down", "Y", nodes[0],
            nodes[1] if len(nodes) > 1 else "", inst["disk_template"],
            ",".join(inst.get("tags") or []), inst.get("spindle_use", 1),
            "-", "N"]))
    lines.append("")
    lines += message.get("cluster_tags") or []
    lines.append("")
    policy = message["ipolicy"]
    lines.append(_IPolicyLine("", policy))
    lines += [_IPolicyLine(group["name"], policy) for group in groups.values()]
    return "\n".join(lines) + "\n"
