"""Disk template ``ext``: volumes managed by an ExtStorage provider.

A provider is a directory named after it in the ExtStorage search path
(pathutils.ES_SEARCH_PATH), holding the executables ``create``,
``attach``, ``detach``, ``remove``, ``grow``, ``setinfo`` and ``verify``
and the text file ``parameters.list`` (``name description`` per line).
An ext disk's logical_id is ``[provider, volume name]``; its parameters
other than ``provider`` and ``access`` are the provider's and reach the
scripts as ``EXTP_<NAME>``.

Each script runs in the provider's directory with the node daemon's
environment plus ``VOL_NAME``, ``VOL_CNAME`` and ``VOL_UUID`` (the disk's
name and uuid), ``VOL_SIZE`` (MiB; create and grow), ``VOL_NEW_SIZE``
(grow), ``VOL_METADATA`` (setinfo) and the ``EXTP_*`` variables. Its
output is kept in a log file in pathutils.LOG_ES_DIR; a failing script
fails the operation with the end of that log. ``attach`` prints the
device path on its first line and optional user-space URIs on the next
ones. Besides block devices, a regular file is accepted as device path,
so that a provider may serve image files to the hypervisor.
"""

import logging
import os
import re
import stat
import time
from typing import Any, NamedTuple

from ganeti import constants, errors, pathutils
from ganeti.storage import base
from ganeti.utils import io, process

_PROVIDER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_PARAM_RE = re.compile(r"^[A-Za-z0-9_]+$")
# Disk parameters of the ext template that are Ganeti's, not the provider's
_GANETI_PARAMS = frozenset(["provider", "access"])
_LOG_TAIL_LINES = 20
_MIB = 1024 * 1024


class ExtStorageProvider(NamedTuple):
    """A provider found on this node."""
    name: str
    path: str
    supported_parameters: dict[str, str]


def _ReadParameters(filename: str) -> dict[str, str]:
    """parameters.list as {name: description}."""
    result = {}
    for line in io.ReadFile(filename).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pname, _, description = line.partition(" ")
        result[pname] = description.strip()
    return result


def FindProvider(name: str,
                 search_path: list[str] | None = None) -> ExtStorageProvider:
    """Find and check a provider in the search path (by default
    pathutils.ES_SEARCH_PATH).

    Raises BlockDeviceError naming the provider and what is wrong with it.
    """
    if search_path is None:
        search_path = pathutils.ES_SEARCH_PATH
    if not isinstance(name, str) or not _PROVIDER_RE.match(name):
        base.ThrowError("Invalid ExtStorage provider name %r", name)
    for search_dir in search_path:
        path = os.path.join(search_dir, name)
        if os.path.isdir(path):
            break
    else:
        base.ThrowError("ExtStorage provider '%s' not found in the search"
                        " path (%s)", name, ", ".join(search_path))
    for script in sorted(constants.ES_SCRIPTS):
        script_path = os.path.join(path, script)
        try:
            mode = os.stat(script_path).st_mode
        except OSError:
            base.ThrowError("ExtStorage provider '%s' (%s) has no '%s'"
                            " script", name, path, script)
        if not stat.S_ISREG(mode) or not mode & stat.S_IXUSR:
            base.ThrowError("The '%s' script of ExtStorage provider '%s' is"
                            " not an executable file", script, name)
    try:
        params = _ReadParameters(os.path.join(path,
                                              constants.ES_PARAMETERS_FILE))
    except OSError as err:
        base.ThrowError("Cannot read %s of ExtStorage provider '%s': %s",
                        constants.ES_PARAMETERS_FILE, name, err.strerror)
    return ExtStorageProvider(name, path, params)


def Diagnose() -> list[list]:
    """Every entry of each search path directory, checked as a provider:
    ``[name, path, valid, why not, [[parameter, description], ...]]``
    (Ganeti's DiagnoseExtStorage)."""
    result = []
    for search_dir in pathutils.ES_SEARCH_PATH:
        try:
            names = sorted(name for name in os.listdir(search_dir)
                           if not name.startswith("."))
        except OSError as err:
            logging.info("Cannot list ExtStorage directory %s: %s",
                         search_dir, err.strerror)
            continue
        for name in names:
            path = os.path.join(search_dir, name)
            try:
                provider = FindProvider(name, [search_dir])
            except errors.BlockDeviceError as err:
                result.append([name, path, False, str(err), []])
            else:
                result.append([name, path, True, "", [
                    [pname, description] for pname, description
                    in provider.supported_parameters.items()]])
    return result


def ProviderParams(params: dict) -> dict[str, str]:
    """The disk parameters meant for the provider, as strings."""
    return {key: str(value) for key, value in params.items()
            if key not in _GANETI_PARAMS}


def GetEnvironment(vol_name: str, ext_params: dict[str, str],
                   size: int | None = None, new_size: int | None = None,
                   metadata: str | None = None, name: str | None = None,
                   uuid: str | None = None) -> dict[str, str]:
    """The ExtStorage interface variables of one script run."""
    env = {"VOL_NAME": vol_name}
    for key, value in (("VOL_SIZE", size), ("VOL_NEW_SIZE", new_size),
                       ("VOL_METADATA", metadata), ("VOL_CNAME", name),
                       ("VOL_UUID", uuid)):
        if value is not None:
            env[key] = str(value)
    for key, value in ext_params.items():
        if not _PARAM_RE.match(key):
            base.ThrowError("Invalid ExtStorage parameter name %r", key)
        env["EXTP_%s" % key.upper()] = value
    return env


def _LogFileName(action: str, provider: str, vol_name: str) -> str:
    safe_vol = re.sub(r"[^A-Za-z0-9_.-]", "_", vol_name)
    now = time.time()
    stamp = "%s.%06d" % (time.strftime("%Y-%m-%d_%H_%M_%S", time.gmtime(now)),
                         int(now * 1000000) % 1000000)
    return os.path.join(pathutils.LOG_ES_DIR, "%s-%s-%s-%s.log" %
                        (action, provider, safe_vol, stamp))


def RunAction(provider: ExtStorageProvider, action: str,
              env: dict[str, str]) -> str:
    """Run one script of a provider (noded's environment plus ``env``).

    Returns the script's stdout.
    """
    vol_name = env.get("VOL_NAME", "")
    script = os.path.join(provider.path, action)
    try:
        os.makedirs(pathutils.LOG_ES_DIR, mode=0o750, exist_ok=True)
        logfile = _LogFileName(action, provider.name, vol_name)
    except OSError as err:
        base.ThrowError("Cannot create the ExtStorage log directory %s: %s",
                        pathutils.LOG_ES_DIR, err.strerror)
    try:
        result = process.RunCmd([script], env=env, cwd=provider.path,
                                timeout=constants.ES_SCRIPT_TIMEOUT)
    except errors.CommandError as err:
        base.ThrowError("Cannot run the %s script of ExtStorage provider"
                        " '%s': %s", action, provider.name, err)
    log = result.stderr
    if action != constants.ES_ACTION_ATTACH:
        log = result.stdout + log
    io.WriteFile(logfile, data=log, mode=0o640)
    if result.failed:
        tail = "\n".join(log.splitlines()[-_LOG_TAIL_LINES:])
        base.ThrowError("ExtStorage provider '%s': %s script for volume %s"
                        " failed (%s), last lines of the log (%s):\n%s",
                        provider.name, action, vol_name, result.fail_reason,
                        logfile, tail)
    return result.stdout


class ExtStorageDevice(base.BlockDev):
    """A volume of an ExtStorage provider."""

    def __init__(self, unique_id, children, size, params, dyn_params,
                 name=None, uuid=None):
        super().__init__(unique_id, children, size, params, dyn_params,
                         name=name, uuid=uuid)
        provider_name, self.vol_name = self.unique_id
        if not isinstance(self.vol_name, str) or not self.vol_name or \
                "/" in self.vol_name:
            base.ThrowError("Invalid ExtStorage volume name %r",
                            self.vol_name)
        self.provider = FindProvider(provider_name)
        self.ext_params = ProviderParams(self.params)
        self.uris: list[str] = []

    def _Run(self, action: str, **kwargs: Any) -> str:
        env = GetEnvironment(self.vol_name, self.ext_params, name=self.name,
                             uuid=self.uuid, **kwargs)
        return RunAction(self.provider, action, env)

    def Verify(self) -> None:
        """Check the parameters: declared by the provider, then its verify."""
        unknown = sorted(set(self.ext_params) -
                         set(self.provider.supported_parameters))
        if unknown:
            base.ThrowError("ExtStorage provider '%s' does not support the"
                            " parameter(s) %s (supported: %s)",
                            self.provider.name, ", ".join(unknown),
                            ", ".join(sorted(
                                self.provider.supported_parameters)) or
                            "none")
        self._Run(constants.ES_ACTION_VERIFY)

    @classmethod
    def Create(cls, unique_id, children, size, spindles, params, excl_stor,
               dyn_params, name=None, uuid=None) -> "ExtStorageDevice":
        """Verify the parameters, then run the provider's create."""
        if excl_stor:
            base.ThrowError("Exclusive storage is not supported by the %s"
                            " template", constants.DT_EXT)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            base.ThrowError("Invalid size %r, expected MiB", size)
        dev = cls(unique_id, children, size, params, dyn_params, name=name,
                  uuid=uuid)
        dev.Verify()
        dev._Run(constants.ES_ACTION_CREATE, size=size)
        return dev

    def Remove(self) -> None:
        self._Run(constants.ES_ACTION_REMOVE)
        self.dev_path = None
        self.attached = False

    def Attach(self) -> bool:
        """Run attach; usable if it names a block device, file or URI."""
        lines = self._Run(constants.ES_ACTION_ATTACH).splitlines()
        path = lines[0].strip() if lines else ""
        self.uris = [line.strip() for line in lines[1:] if line.strip()]
        self.dev_path = None
        self.attached = False
        if not path:
            if not self.uris:
                logging.error("ExtStorage volume %s: neither a device nor a"
                              " user-space URI is available", self.vol_name)
                return False
            self.attached = True
            return True
        try:
            mode = os.stat(path).st_mode
        except OSError as err:
            logging.error("ExtStorage volume %s: cannot stat %s: %s",
                          self.vol_name, path, err.strerror)
            return False
        if not (stat.S_ISBLK(mode) or stat.S_ISREG(mode)):
            logging.error("ExtStorage volume %s: %s is neither a block device"
                          " nor a file", self.vol_name, path)
            return False
        self.dev_path = path
        self.attached = True
        return True

    def Assemble(self) -> None:
        if not self.Attach():
            base.ThrowError("Cannot attach ExtStorage volume %s of provider"
                            " '%s'", self.vol_name, self.provider.name)

    def Shutdown(self) -> None:
        """Run detach (providers treat a detached volume as success)."""
        self._Run(constants.ES_ACTION_DETACH)
        self.dev_path = None
        self.attached = False

    def Grow(self, amount, dryrun, backingstore, excl_stor) -> None:
        """Run grow with the current and the new size."""
        amount = base.CheckGrowAmount(amount, self.vol_name)
        if dryrun or not backingstore:
            return
        new_size = self.size + amount
        self._Run(constants.ES_ACTION_GROW, size=self.size,
                  new_size=new_size)
        self.size = new_size

    def SetInfo(self, text: str) -> None:
        """Run setinfo with the metadata in VOL_METADATA."""
        self._Run(constants.ES_ACTION_SETINFO, metadata=text)

    def GetUserspaceAccessUri(self, hypervisor: str) -> str | None:
        """The attach URI for the hypervisor (``<hv>:<uri>`` lines first)."""
        for uri in self.uris:
            if uri.startswith(hypervisor + ":"):
                return uri[len(hypervisor) + 1:]
        return None
