"""OS definitions (OS API 20, ganeti-os-interface): finding and
validating them and running their scripts for instances.
"""

import logging
import os
import re
import subprocess
import time
from typing import Any

from ganeti import constants, errors, objects, pathutils, vcluster
from ganeti.utils import io
from ganeti.backend.common import Fail


# Files of an OS definition besides its scripts
_OS_TEXT_FILES = (constants.OS_API_FILE, constants.OS_VARIANTS_FILE,
                  constants.OS_PARAMETERS_FILE)
# The optional scripts; an OS lacking one can't do the matching operation
_OS_OPTIONAL_SCRIPTS = frozenset([constants.OS_SCRIPT_EXPORT,
                                  constants.OS_SCRIPT_IMPORT,
                                  constants.OS_SCRIPT_RENAME,
                                  constants.OS_SCRIPT_CREATE_UNTRUSTED])
# PATH of the scripts' (otherwise empty) environment, as for hooks
_OS_SCRIPT_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
_OS_NAME_RE = re.compile(r"^[\w.+-]+$")
# Order in which an OS's scripts are checked (the first problem is reported)
_OS_SCRIPT_ORDER = (constants.OS_SCRIPT_CREATE, constants.OS_SCRIPT_VERIFY,
                    constants.OS_SCRIPT_IMPORT, constants.OS_SCRIPT_EXPORT,
                    constants.OS_SCRIPT_RENAME,
                    constants.OS_SCRIPT_CREATE_UNTRUSTED)


def _ReadOSList(path: str) -> list[str]:
    """Non-empty, non-comment lines of an OS definition's list file."""
    lines = []
    for line in io.ReadFile(path).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _OSApiVersions(os_dir: str) -> list[int] | str:
    """The API versions an OS declares, or why they can't be read."""
    path = os.path.join(os_dir, constants.OS_API_FILE)
    vpath = vcluster.MakeVirtualPath(path)
    try:
        lines = _ReadOSList(path)
    except FileNotFoundError:
        return "API version file '%s' not found" % vpath
    except OSError as err:
        return "Error while reading the API version file at %s: %s" % \
            (vpath, err.strerror)
    try:
        versions = sorted({int(line) for line in lines}, reverse=True)
    except ValueError:
        return "API version(s) can't be converted to integer: %s" % \
            ", ".join(lines)
    if not versions:
        return "API version file '%s' is empty" % vpath
    return versions


def _OSSearchPath() -> list[str]:
    return list(pathutils.OS_SEARCH_PATH)


def _TryOSFromDisk(name: str, base_dir: str | None = None
                   ) -> tuple[bool, objects.OS | str]:
    """Load the OS definition ``name`` (without variant) from disk.

    Returns ``(True, OS)``, or ``(False, reason)`` when the OS is missing
    or invalid; diagnose reports the reason.
    """
    if not _OS_NAME_RE.match(name) or name in (".", ".."):
        return False, "Invalid OS name %r" % name
    if base_dir is None:
        for top in _OSSearchPath():
            if os.path.isdir(os.path.join(top, name)):
                base_dir = top
                break
        else:
            return False, "Directory for OS %s not found in search path" % \
                name
    os_dir = os.path.join(base_dir, name)
    vdir = vcluster.MakeVirtualPath(os_dir)
    versions = _OSApiVersions(os_dir)
    if isinstance(versions, str):
        return False, versions
    if not constants.OS_API_VERSIONS.intersection(versions):
        return False, "API version mismatch for path '%s': found %s, want" \
            " %s." % (vdir, versions, sorted(constants.OS_API_VERSIONS))
    scripts: dict[str, str | None] = {}
    for script in _OS_SCRIPT_ORDER:
        if script == constants.OS_SCRIPT_VERIFY and \
                max(versions) < constants.OS_API_VERSION:
            scripts[script] = None
            continue
        path = os.path.join(os_dir, script)
        if not os.path.exists(path):
            if script in _OS_OPTIONAL_SCRIPTS:
                scripts[script] = None
                continue
            return False, "Script '%s' not found in OS dir %s" % (script,
                                                                  vdir)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            return False, "Script '%s' under path '%s' is not an executable" \
                " regular file" % (script, vdir)
        scripts[script] = path
    try:
        variants = _ReadOSList(os.path.join(os_dir,
                                            constants.OS_VARIANTS_FILE))
    except FileNotFoundError:
        variants = []
    except OSError as err:
        return False, "Error while reading the OS variants file at %s: %s" % \
            (vdir, err.strerror)
    parameters = []
    if max(versions) >= constants.OS_API_VERSION:
        params_file = os.path.join(os_dir, constants.OS_PARAMETERS_FILE)
        try:
            lines = _ReadOSList(params_file)
        except FileNotFoundError:
            return False, "Parameters file '%s' not found" % \
                vcluster.MakeVirtualPath(params_file)
        except OSError as err:
            return False, "Error while reading the OS parameters file at" \
                " %s: %s" % (vcluster.MakeVirtualPath(params_file),
                             err.strerror)
        for line in lines:
            param, _, doc = line.partition(" ")
            if "\t" in param:
                param, _, rest = line.partition("\t")
                doc = rest
            parameters.append([param.strip(), doc.strip()])
    os_obj = objects.OS(
        name=name, path=os_dir, api_versions=versions,
        create_script=scripts[constants.OS_SCRIPT_CREATE],
        create_script_untrusted=scripts[constants.OS_SCRIPT_CREATE_UNTRUSTED],
        export_script=scripts[constants.OS_SCRIPT_EXPORT],
        import_script=scripts[constants.OS_SCRIPT_IMPORT],
        rename_script=scripts[constants.OS_SCRIPT_RENAME],
        verify_script=scripts[constants.OS_SCRIPT_VERIFY],
        supported_variants=variants, supported_parameters=parameters)
    return True, os_obj


def OSFromDisk(name: str, base_dir: str | None = None) -> objects.OS:
    """The OS definition ``name`` (variant ignored); fails if invalid."""
    _, result = _TryOSFromDisk(objects.OS.GetName(name), base_dir)
    if not isinstance(result, objects.OS):
        Fail("%s", result)
    return result


def DiagnoseOS(top_dirs: list[str] | None = None) -> list[list]:
    """Every OS directory in the search path, valid or not.

    Each entry is ``[name, path, status, diagnose, variants, parameters,
    api_versions, trusted]`` (Ganeti's order); an invalid OS has status
    False, the reason as diagnose and empty lists. An OS found in several
    directories is reported once per directory, the first one winning.
    """
    result = []
    for top in top_dirs if top_dirs is not None else _OSSearchPath():
        try:
            names = sorted(os.listdir(top))
        except FileNotFoundError:
            continue
        except OSError as err:
            logging.warning("Can't list the OS directory %s: %s", top, err)
            continue
        for name in names:
            if not os.path.isdir(os.path.join(top, name)):
                continue
            _, os_obj = _TryOSFromDisk(name, base_dir=top)
            path = vcluster.MakeVirtualPath(os.path.join(top, name))
            if isinstance(os_obj, objects.OS):
                result.append([name, path, True, "",
                               os_obj.supported_variants,
                               os_obj.supported_parameters,
                               os_obj.api_versions, os_obj.is_trusted])
            else:
                result.append([name, path, False, os_obj, [], [], [], True])
    return result


def os_diagnose() -> list[list]:
    """The OS definitions of this node (see DiagnoseOS)."""
    return DiagnoseOS()


def OSCoreEnv(os_name: str, inst_os: objects.OS, os_params: dict,
              debug: int = 0) -> dict[str, str]:
    """The environment common to every script of an OS.

    ``os_name`` is the full ``name+variant``; ``os_params`` the filled OS
    parameters (public and private), each exported as ``OSP_<NAME>``.
    """
    result = {
        "PATH": _OS_SCRIPT_PATH,
        "OS_API_VERSION": "%d" % max(constants.OS_API_VERSIONS.intersection(
            inst_os.api_versions)),
        "OS_NAME": inst_os.name,
        "DEBUG_LEVEL": "%d" % debug,
    }
    variant = objects.OS.GetVariant(os_name)
    if variant or inst_os.supported_variants:
        result["OS_VARIANT"] = variant or inst_os.supported_variants[0]
    for name, value in (os_params or {}).items():
        result["OSP_%s" % name.upper().replace("-", "_")] = str(value)
    return result


def DiskPath(disk: dict) -> str:
    """The local path of an instance disk sent by the master.

    The master sends each disk with ``dev_path``, the path that
    blockdev_assemble answered on this very node: device paths are
    node-local and only ever go back to the node that made them.
    """
    path = disk.get("dev_path")
    if not isinstance(path, str) or not os.path.isabs(path) or \
            "\0" in path:
        Fail("Disk %s has no valid device path: %r",
              disk.get("uuid") or disk, path)
    return os.path.normpath(path)


def _DiskBackendType(disk: dict) -> str:
    if disk.get("dev_type") in (constants.DT_FILE, constants.DT_SHARED_FILE):
        driver = (disk.get("logical_id") or ["loop"])[0]
        return "file:%s" % driver
    return "block"


def OSEnvironment(instance: dict, inst_os: objects.OS,
                  debug: int = 0) -> dict[str, str]:
    """The environment of an OS script for an instance (OS API 20).

    ``instance`` is the instance as the master sends it: Instance.ToDict()
    with filled ``hvparams``, ``beparams``, ``osparams`` (and
    ``osparams_private``, and for one run ``osparams_secret``), the disk
    objects (with ``dev_path``) in ``disks`` and the NICs with filled
    ``nicparams`` in ``nics``.
    """
    params = dict(instance.get("osparams") or {})
    params.update(instance.get("osparams_private") or {})
    params.update(instance.get("osparams_secret") or {})
    result = OSCoreEnv(instance["os"], inst_os, params, debug)
    hvparams = instance.get("hvparams") or {}
    result.update({
        "INSTANCE_NAME": instance["name"],
        "INSTANCE_OS": instance["os"],
        "HYPERVISOR": instance["hypervisor"],
        "DISK_COUNT": "%d" % len(instance.get("disks") or []),
        "NIC_COUNT": "%d" % len(instance.get("nics") or []),
    })
    for idx, disk in enumerate(instance.get("disks") or []):
        prefix = "DISK_%d_" % idx
        result[prefix + "PATH"] = DiskPath(disk)
        result[prefix + "ACCESS"] = disk.get("mode") or objects.DISK_RDWR
        result[prefix + "SIZE"] = "%d" % disk.get("size", 0)
        result[prefix + "UUID"] = disk.get("uuid") or ""
        if disk.get("name"):
            result[prefix + "NAME"] = disk["name"]
        result[prefix + "BACKEND_TYPE"] = _DiskBackendType(disk)
        if hvparams.get("disk_type"):
            result[prefix + "FRONTEND_TYPE"] = hvparams["disk_type"]
    for idx, nic in enumerate(instance.get("nics") or []):
        prefix = "NIC_%d_" % idx
        nicparams = nic.get("nicparams") or {}
        result[prefix + "MAC"] = nic["mac"]
        result[prefix + "UUID"] = nic.get("uuid") or ""
        if nic.get("name"):
            result[prefix + "NAME"] = nic["name"]
        if nic.get("ip"):
            result[prefix + "IP"] = nic["ip"]
        mode = nicparams.get(objects.NIC_MODE)
        if mode:
            result[prefix + "MODE"] = mode
        link = nicparams.get(objects.NIC_LINK)
        if link:
            result[prefix + "LINK"] = link
            if mode == objects.NIC_MODE_BRIDGED:
                result[prefix + "BRIDGE"] = link
        if nicparams.get(objects.NIC_VLAN):
            result[prefix + "VLAN"] = str(nicparams[objects.NIC_VLAN])
        if hvparams.get("nic_type"):
            result[prefix + "FRONTEND_TYPE"] = hvparams["nic_type"]
        for key, value in (nic.get("netinfo") or {}).items():
            if value is not None:
                result["%sNETWORK_%s" % (prefix, key.upper())] = \
                    " ".join(value) if isinstance(value, list) else str(value)
    for kind, values in (("BE", instance.get("beparams")), ("HV", hvparams)):
        for key, value in (values or {}).items():
            result["INSTANCE_%s_%s" % (kind, key)] = str(value)
    return result


def InstanceLogName(kind: str, os_name: str, instance: str) -> str:
    """Log file of one OS script run: LOG_OS_DIR/kind-os-instance-time.log."""
    stamp = time.strftime("%Y-%m-%d_%H_%M_%S", time.gmtime())
    base = "%s-%s-%s-%s_%06d.log" % (kind, os_name, instance, stamp,
                                     int(time.time() * 1e6) % 1000000)
    return os.path.join(pathutils.LOG_OS_DIR, base.replace("/", "_"))


def _LogTail(path: str, lines: int = constants.OS_LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as fobj:
            fobj.seek(0, os.SEEK_END)
            fobj.seek(max(fobj.tell() - 64 * 1024, 0))
            data = fobj.read()
    except OSError as err:
        return "(can't read %s: %s)" % (path, err.strerror)
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def RunOSScript(script: str, env: dict[str, str], kind: str, os_name: str,
                instance: str, cwd: str, args: list[str] | None = None
                ) -> str:
    """Run an OS script, its stdout and stderr going to a new OS log.

    Returns the log file. A failure (non-zero exit, signal, timeout)
    fails the RPC with the reason and the last lines of the log, as
    Ganeti reports it ("OS create script failed (exited with exit code
    1), last lines in the log file: ...").
    """
    io.EnsureDirs([(pathutils.LOG_OS_DIR, 0o750)])
    logfile = InstanceLogName(kind, os_name, instance)
    cmd = [script] + list(args or [])
    with open(logfile, "ab") as log:
        try:
            proc = subprocess.run(cmd, env=env, cwd=cwd,
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=log, close_fds=True,
                                  timeout=constants.OS_SCRIPT_TIMEOUT,
                                  check=False)
        except subprocess.TimeoutExpired:
            reason = "timed out after %d seconds" % constants.OS_SCRIPT_TIMEOUT
        except OSError as err:
            reason = "can't execute %s: %s" % (script, err.strerror)
        else:
            if proc.returncode == 0:
                return logfile
            if proc.returncode < 0:
                reason = "terminated by signal %d" % -proc.returncode
            else:
                reason = "exited with exit code %d" % proc.returncode
    Fail("OS %s script failed (%s), last lines in the log file:\n%s",
          os.path.basename(script), reason, _LogTail(logfile))


def CheckDebug(debug: Any) -> int:
    if isinstance(debug, bool) or not isinstance(debug, int) or debug < 0:
        Fail("Invalid debug level %r", debug)
    return debug


def CheckInstanceDict(instance: Any) -> None:
    if not isinstance(instance, dict) or not all(
            isinstance(instance.get(key), str) and instance[key]
            for key in ("name", "os", "hypervisor")):
        Fail("Invalid instance %r: name, os and hypervisor are required",
              instance)


def InstanceOS(instance: dict) -> objects.OS:
    inst_os = OSFromDisk(instance["os"])
    try:
        inst_os.CheckVariant(instance["os"])
    except errors.OpPrereqError as err:
        Fail("%s", err.args[0])
    return inst_os


def instance_os_add(instance: dict, reinstall: bool, debug: int) -> None:
    """Install the instance's OS on its disks (the OS create script)."""
    CheckInstanceDict(instance)
    inst_os = InstanceOS(instance)
    env = OSEnvironment(instance, inst_os, CheckDebug(debug))
    if reinstall:
        env["INSTANCE_REINSTALL"] = "1"
    RunOSScript(inst_os.create_script, env, "add", instance["os"],
                instance["name"], inst_os.path)


def instance_run_rename(instance: dict, old_name: str, debug: int) -> None:
    """Tell the instance's OS its new name (the OS rename script).

    Refused, before anything runs, when the OS has no rename script.
    """
    CheckInstanceDict(instance)
    if not isinstance(old_name, str) or not old_name:
        Fail("Invalid old instance name %r", old_name)
    inst_os = InstanceOS(instance)
    if inst_os.rename_script is None:
        Fail("OS %s does not support renaming instances (it has no %s"
              " script)", inst_os.name, constants.OS_SCRIPT_RENAME)
    env = OSEnvironment(instance, inst_os, CheckDebug(debug))
    env["OLD_INSTANCE_NAME"] = old_name
    RunOSScript(inst_os.rename_script, env, "rename", instance["os"],
                instance["name"], inst_os.path)


def os_validate(required: bool, name: str, checks: list[str], params: dict,
                force_variant: bool) -> bool:
    """Check an OS (and its parameters) before it is used.

    Returns False when the OS is missing and not ``required``; otherwise
    fails unless the OS is valid, its variant suits it (unless
    ``force_variant``) and its verify script accepts ``params`` (for the
    "parameters" check).
    """
    if not isinstance(name, str) or not name:
        Fail("Invalid OS name %r", name)
    if not isinstance(checks, list) or \
            set(checks) - constants.OS_VALIDATE_CALLS:
        Fail("Unknown OS validation check(s) in %r", checks)
    if not isinstance(params, dict):
        Fail("Invalid OS parameters %r", params)
    _, inst_os = _TryOSFromDisk(objects.OS.GetName(name))
    if not isinstance(inst_os, objects.OS):
        if required:
            Fail("%s", inst_os)
        return False
    if not force_variant:
        try:
            inst_os.CheckVariant(name)
        except errors.OpPrereqError as err:
            Fail("%s", err.args[0])
    if inst_os.verify_script is None:
        return True
    if constants.OS_VALIDATE_PARAMETERS in checks:
        known = {param for param, _ in inst_os.supported_parameters}
        unknown = sorted(set(params) - known)
        if unknown:
            Fail("The following parameters are not supported by the OS"
                  " %s: %s", inst_os.name, ", ".join(unknown))
    env = OSCoreEnv(name, inst_os, params)
    RunOSScript(inst_os.verify_script, env, "verify", name,
                "validate", inst_os.path, args=list(checks))
    return True
