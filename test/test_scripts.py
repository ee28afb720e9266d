"""Black-box checks of every command and daemon, like Ganeti's cli tests.

Each program in scripts/ and daemons/ must print its usage on --help
(exit 0), its version on --version, and refuse an unknown subcommand or
argument with exit 1, without contacting any daemon.
"""

import concurrent.futures
import os
import subprocess
import sys

import pytest

import ganeti
from ganeti import constants

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# daemon-util and kvm-ifup are helpers called by other programs (as in
# Ganeti), with their own command syntax; they are not user-facing commands
_EXCLUDED = frozenset(["daemon-util", "kvm-ifup"])


def _Programs() -> list[str]:
    result = []
    for subdir in ("scripts", "daemons"):
        directory = os.path.join(TOP, subdir)
        if not os.path.isdir(directory):
            continue
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and name not in _EXCLUDED and \
                    not name.startswith("."):
                result.append(path)
    return result


def _Run(path: str, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("GANETI_")}
    # Make the package importable as the tests see it, and make sure no
    # real master daemon can be reached by accident
    package_parent = os.path.dirname(os.path.dirname(ganeti.__file__))
    env["PYTHONPATH"] = os.pathsep.join(
        [package_parent] + [p for p in [env.get("PYTHONPATH")] if p])
    env["FORCE_LUXI_SOCKET"] = "/nonexistent/ganeti-test.sock"
    return subprocess.run([sys.executable, path] + list(args), env=env,
                          capture_output=True, text=True, timeout=60,
                          check=False)


PROGRAMS = _Programs()
_GNT_PROGRAMS = [p for p in PROGRAMS if os.path.basename(p).startswith("gnt-")]
_INVOCATIONS = ([(path, arg) for path in PROGRAMS
                 for arg in ("--help", "--version", "UNKNOWN")] +
                [(path, None) for path in _GNT_PROGRAMS])


@pytest.fixture(scope="module")
def runs() -> dict:
    """Every invocation, run concurrently (each one is mostly start-up)."""
    def run(invocation):
        path, arg = invocation
        return invocation, (_Run(path, arg) if arg else _Run(path))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(pool.map(run, _INVOCATIONS))


def test_programs_found():
    names = [os.path.basename(path) for path in PROGRAMS]
    assert "gnt-job" in names
    assert "gnt-debug" in names


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_help(runs, path):
    result = runs[(path, "--help")]
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_version(runs, path):
    result = runs[(path, "--version")]
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(os.path.basename(path) + " ")
    assert constants.RELEASE_VERSION in result.stdout


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_unknown_subcommand(runs, path):
    result = runs[(path, "UNKNOWN")]
    assert result.returncode == 1, (result.stdout, result.stderr)


@pytest.mark.parametrize("path", _GNT_PROGRAMS, ids=os.path.basename)
def test_no_arguments_prints_usage(runs, path):
    result = runs[(path, None)]
    assert result.returncode == 1
    assert result.stdout.startswith("Usage: %s" % os.path.basename(path))
