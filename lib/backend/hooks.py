"""Hooks, run-parts directories and the iallocator runner.
"""

import os
import re
import signal
import subprocess
import tempfile
import time

from ganeti import constants, errors, pathutils
from ganeti.utils import process
from ganeti.backend.common import Fail, LocalPath


# Ganeti's run-parts rule for hook script names (so "x.sh" is skipped)
_HOOK_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
# How long a killed hook script gets to release its output pipe
_HOOK_KILL_WAIT = 5.0


def _RunHookScript(path: str, env: dict[str, str],
                   timeout: float) -> tuple[int, str]:
    """Run one hook script; (HKR_SUCCESS or HKR_FAIL, its output).

    The script runs in a session of its own so that a timeout kills what
    it started too: a leftover child would hold the output pipe open and
    keep the master waiting.
    """
    try:
        proc = subprocess.Popen([path], env=env, cwd="/",
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, close_fds=True,
                                start_new_session=True)
    except OSError as err:
        return constants.HKR_FAIL, "Hook script execution error: %s" % err
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            output, _ = proc.communicate(timeout=_HOOK_KILL_WAIT)
        except subprocess.TimeoutExpired:
            # Something left the session and kept the pipe: drop the output
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()
            output = b""
        text = output.decode("utf-8", "replace").strip()
        note = "(timed out after %g seconds)" % round(timeout, 1)
        return constants.HKR_FAIL, "%s\n%s" % (text, note) if text else note
    text = output.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        return constants.HKR_FAIL, text
    return constants.HKR_SUCCESS, text


def RunHooks(hpath: str, phase: str, env: dict[str, str],
             base_dir: str | None = None,
             script_timeout: float = constants.HOOKS_SCRIPT_TIMEOUT,
             phase_timeout: float = constants.HOOKS_PHASE_TIMEOUT
             ) -> list[list]:
    """Run the scripts of ``<base_dir>/<hpath>-<phase>.d`` in name order.

    Returns ``[script, HKR_*, output]`` per visible directory entry,
    ``script`` being ``<hpath>-<phase>.d/<name>``: entries whose name
    breaks the run-parts rule and non-executable files are skipped, a
    missing directory means no hooks. Scripts get ``env`` and nothing
    else, so they see the same environment whoever started noded. Once
    ``phase_timeout`` is used up the remaining scripts fail unrun, so the
    answer reaches the master before its RPC times out.
    """
    if base_dir is None:
        base_dir = pathutils.HOOKS_BASE_DIR
    subdir = "%s-%s.d" % (hpath, phase)
    try:
        return [["%s/%s" % (subdir, name), status, output]
                for name, status, output in RunParts(
                    os.path.join(base_dir, subdir), env, script_timeout,
                    phase_timeout)]
    except OSError as err:
        Fail("Can't list hooks directory %s: %s",
              os.path.join(base_dir, subdir), err.strerror)


def RunParts(dir_name: str, env: dict[str, str],
             script_timeout: float = constants.HOOKS_SCRIPT_TIMEOUT,
             phase_timeout: float = constants.HOOKS_PHASE_TIMEOUT
             ) -> list[tuple[str, int, str]]:
    """Run a directory's executables in name order (run-parts).

    Returns ``(name, HKR_*, output)`` per visible entry; see RunHooks for
    the rules. A missing directory runs nothing; another listing error
    raises OSError. The hooks and the watcher's directory share them.
    """
    try:
        names = sorted(name for name in os.listdir(dir_name)
                       if not name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
    deadline = time.monotonic() + phase_timeout
    results = []
    for name in names:
        path = os.path.join(dir_name, name)
        if not (_HOOK_NAME_RE.match(name) and os.path.isfile(path) and
                os.access(path, os.X_OK)):
            results.append((name, constants.HKR_SKIP, ""))
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results.append((name, constants.HKR_FAIL,
                            "Not run: the hooks of this phase took longer"
                            " than %g seconds" % phase_timeout))
            continue
        status, output = _RunHookScript(path, env,
                                        min(script_timeout, remaining))
        results.append((name, status, output))
    return results


def iallocator_runner(name: str, idata: str, ial_params: dict,
                      timeout: float) -> str:
    """Run an instance allocator on its input message; its stdout.

    The program is looked up by name (no path) in the allocator search
    path and gets the message as a file, then the parameters as
    ``--key=value`` (``--key`` for a None value), as Ganeti runs it.
    """
    if not isinstance(name, str) or not name or "/" in name or \
            name in (".", ".."):
        Fail("Invalid iallocator name %r", name)
    if not isinstance(ial_params, dict) or not isinstance(idata, str):
        Fail("iallocator_runner expects a string and a dict")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or timeout <= 0:
        Fail("Invalid iallocator timeout %r", timeout)
    program = None
    for directory in pathutils.IALLOCATOR_SEARCH_PATH:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            program = path
            break
    if program is None:
        Fail("iallocator module '%s' not found in the search path (%s)",
              name, ":".join(pathutils.IALLOCATOR_SEARCH_PATH))
    args = ["--%s" % key if value is None else "--%s=%s" % (key, value)
            for key, value in sorted(ial_params.items())]
    fd, input_file = tempfile.mkstemp(prefix="ganeti-iallocator.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fobj:
            fobj.write(idata)
        try:
            result = process.RunCmd([program, input_file] + args,
                                    timeout=timeout)
        except errors.CommandError as err:
            Fail("iallocator module '%s' can't be run: %s", name, err)
    finally:
        os.unlink(input_file)
    if result.failed:
        Fail("iallocator module '%s' failed: %s, output '%s'", name,
              result.fail_reason, (result.stdout + result.stderr).strip())
    return result.stdout


def hooks_runner(hpath: str, phase: str, env: dict) -> list[list]:
    """Run this node's hook scripts of one phase of an operation.

    ``GANETI_DATA_DIR`` arrives as a virtual path and is localized, so on
    a virtual cluster the scripts find this node's data directory.
    """
    if not isinstance(hpath, str) or not _HOOK_NAME_RE.match(hpath):
        Fail("Invalid hooks path %r", hpath)
    if phase not in constants.HOOKS_PHASES:
        Fail("Unknown hooks phase %r", phase)
    if not (isinstance(env, dict) and
            all(isinstance(key, str) and isinstance(value, str) and
                key and "=" not in key and "\0" not in key + value
                for key, value in env.items())):
        Fail("Invalid hooks environment, expected a dict of strings")
    env = dict(env)
    if "GANETI_DATA_DIR" in env:
        env["GANETI_DATA_DIR"] = LocalPath(env["GANETI_DATA_DIR"])
    return RunHooks(hpath, phase, env)
