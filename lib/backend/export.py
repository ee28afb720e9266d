"""Instance exports (gnt-backup) and node-to-node disk transfers.
"""

import configparser
import logging
import os
import shutil
import time
from io import StringIO
from typing import Any

from ganeti import constants, impexp, objects, pathutils, vcluster
from ganeti.impexp import node as impexp_node
from ganeti.utils import io
from ganeti.backend.common import Fail, LocalPath
from ganeti.backend.osdef import (OSEnvironment, CheckDebug,
                                  CheckInstanceDict, DiskPath,
                                  InstanceLogName, InstanceOS)


# One directory per exported instance in pathutils.EXPORT_DIR: its
# description (constants.EXPORT_CONF_FILE, Ganeti's config.ini) and one
# dump per disk, named after the disk's UUID. The data transfers
# (ganeti.impexp) write the dumps into pathutils.ExportTempDir, which
# finalize_export completes and renames into place.

def _ExportName(name: Any) -> str:
    """An export (instance) name, usable as a directory name."""
    if not isinstance(name, str) or not name or "/" in name or \
            "\0" in name or name.startswith("."):
        Fail("Invalid export name %r", name)
    return name


def export_list() -> list[str]:
    """Names of the complete exports on this node, sorted."""
    try:
        names = io.ListVisibleFiles(pathutils.EXPORT_DIR)
    except FileNotFoundError:
        Fail("No exports directory")
    except OSError as err:
        Fail("Cannot list the exports directory: %s", err.strerror)
    return sorted(name for name in names
                  if os.path.isdir(os.path.join(pathutils.EXPORT_DIR, name)))


def _ReadExportConfig(path: str) -> configparser.RawConfigParser:
    config = configparser.RawConfigParser()
    try:
        with open(os.path.join(path, constants.EXPORT_CONF_FILE),
                  encoding="utf-8") as fobj:
            config.read_file(fobj)
    except FileNotFoundError:
        Fail("No export found in %s", vcluster.MakeVirtualPath(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as err:
        Fail("Cannot read the export in %s: %s",
              vcluster.MakeVirtualPath(path), err)
    if not (config.has_section(constants.INISECT_EXP) and
            config.has_section(constants.INISECT_INS)):
        Fail("Export info file doesn't have the required fields")
    return config


def _DumpConfig(config: configparser.RawConfigParser) -> str:
    buf = StringIO()
    config.write(buf)
    return buf.getvalue()


def export_info(path: str) -> str:
    """The description (config.ini text) of the export in ``path``.

    ``path`` must be an export directory (directly below the exports
    directory): imports read only what exports wrote.
    """
    local = LocalPath(path)
    if os.path.dirname(local) != os.path.normpath(pathutils.EXPORT_DIR):
        Fail("Refusing to read %s: not an export directory of %s", path,
              vcluster.MakeVirtualPath(pathutils.EXPORT_DIR))
    _ExportName(os.path.basename(local))
    return _DumpConfig(_ReadExportConfig(local))


def export_remove(export: str) -> None:
    """Remove an export (its whole directory) from this node."""
    target = os.path.join(pathutils.EXPORT_DIR, _ExportName(export))
    try:
        shutil.rmtree(target)
    except OSError as err:
        Fail("Error while removing the export: %s", err)
    logging.info("Removed the export %s", export)


def export_discard(instance_name: str) -> None:
    """Remove an unfinished export of an instance (none is fine)."""
    target = pathutils.ExportTempDir(_ExportName(instance_name))
    try:
        shutil.rmtree(target)
    except FileNotFoundError:
        return
    except OSError as err:
        Fail("Cannot remove the unfinished export %s: %s",
              vcluster.MakeVirtualPath(target), err)
    logging.info("Discarded the unfinished export of %s", instance_name)


# The OS export script writes the disk to its stdout, which is compressed
# into the dump; the import script reads the decompressed dump from its
# stdin. Their stderr goes to an OS log, as for the other OS scripts.
_OS_EXPORT_SHELL = 'set -o pipefail; cd "$1" && "$2" 2>>"$3" | gzip -c -%d'
_OS_IMPORT_SHELL = 'set -o pipefail; cd "$1" && gzip -d -c | "$2" 2>>"$3"'
_OS_RAW_SHELL = 'cd "$1" && exec "$2" 2>>"$3"'


def os_transfer_command(instance: dict, mode: str, idx: int,
                        compression: str, debug: int) -> dict[str, Any]:
    """How a data transfer runs the OS export or import script of a disk.

    Returns the ``{"argv", "env"}`` of an impexp.IEIO_COMMAND source
    (export) or destination (import) for disk ``idx`` of ``instance`` (an
    OS RPC instance dict, disks with ``dev_path``), which only this node
    can run: the script, its environment and the device are this node's.
    ``compression`` is that of the dump (impexp.IEC_*): the export script's
    output is compressed with it, the import script's input decompressed.
    """
    CheckInstanceDict(instance)
    if mode not in impexp.IEM_ALL:
        Fail("Invalid transfer mode %r", mode)
    if compression not in impexp.IEC_ALL:
        Fail("Unsupported compression %r (supported: %s)", compression,
              ", ".join(sorted(impexp.IEC_ALL)))
    disks = instance.get("disks") or []
    if isinstance(idx, bool) or not isinstance(idx, int) or \
            not 0 <= idx < len(disks):
        Fail("Invalid disk index %r for instance %s", idx, instance["name"])
    inst_os = InstanceOS(instance)
    export = mode == impexp.IEM_EXPORT
    script = inst_os.export_script if export else inst_os.import_script
    if script is None:
        Fail("OS %s does not support %sing instances (it has no %s"
              " script)", inst_os.name, mode,
              constants.OS_SCRIPT_EXPORT if export
              else constants.OS_SCRIPT_IMPORT)
    env = OSEnvironment(instance, inst_os, CheckDebug(debug))
    prefix = "EXPORT" if export else "IMPORT"
    device = DiskPath(disks[idx])
    env.update({prefix + "_INDEX": "%d" % idx, prefix + "_DEVICE": device,
                prefix + "_DISK_PATH": device})
    if compression == impexp.IEC_NONE:
        shell = _OS_RAW_SHELL
    elif export:
        shell = _OS_EXPORT_SHELL % impexp.GZIP_LEVELS[compression]
    else:
        shell = _OS_IMPORT_SHELL
    io.EnsureDirs([(pathutils.LOG_OS_DIR, 0o750)])
    logfile = InstanceLogName(mode, instance["os"], instance["name"])
    return {"argv": ["/bin/bash", "-c", shell, "ganeti-os-" + mode,
                     inst_os.path, script, logfile],
            "env": env}


def _ExportConfig(instance: dict, disks: list[dict], compression: str,
                  timestamp: int) -> configparser.RawConfigParser:
    """Ganeti's config.ini for an instance and its exported disks.

    Values are written as Ganeti writes them (``None`` for a missing
    NIC address), so exports stay interchangeable with Ganeti's.
    """
    beparams = instance.get("beparams") or {}
    config = configparser.RawConfigParser()
    config.add_section(constants.INISECT_EXP)
    for key, value in (("version", constants.EXPORT_VERSION),
                       ("timestamp", timestamp),
                       ("source", instance["primary_node"]),
                       ("os", instance["os"]),
                       ("compression", compression)):
        config.set(constants.INISECT_EXP, key, str(value))
    sect = constants.INISECT_INS
    config.add_section(sect)
    config.set(sect, "name", instance["name"])
    for key, param in (("maxmem", objects.BE_MAXMEM),
                       ("minmem", objects.BE_MINMEM),
                       ("memory", objects.BE_MAXMEM),
                       ("vcpus", objects.BE_VCPUS)):
        config.set(sect, key, "%d" % beparams[param])
    config.set(sect, "disk_template",
               disks[0]["dev_type"] if disks else constants.DT_DISKLESS)
    config.set(sect, "hypervisor", instance["hypervisor"])
    config.set(sect, "tags", " ".join(instance.get("tags") or []))
    nics = instance.get("nics") or []
    for idx, nic in enumerate(nics):
        for key in ("mac", "ip", "network", "name"):
            config.set(sect, "nic%d_%s" % (idx, key), str(nic.get(key)))
        nicparams = nic.get("nicparams") or {}
        for key in sorted(objects.NIC_PARAMETERS):
            config.set(sect, "nic%d_%s" % (idx, key),
                       str(nicparams.get(key)))
    config.set(sect, "nic_count", "%d" % len(nics))
    for idx, disk in enumerate(disks):
        config.set(sect, "disk%d_ivname" % idx, str(disk.get("iv_name")))
        config.set(sect, "disk%d_dump" % idx, disk["uuid"])
        config.set(sect, "disk%d_size" % idx, "%d" % disk["size"])
        config.set(sect, "disk%d_name" % idx, str(disk.get("name")))
    config.set(sect, "disk_count", "%d" % len(disks))
    for section, values, skip in (
            (constants.INISECT_HYP, instance.get("hvparams"),
             objects.HVC_GLOBALS),
            (constants.INISECT_BEP, beparams, frozenset()),
            (constants.INISECT_OSP, instance.get("osparams"), frozenset()),
            (constants.INISECT_OSP_PRIVATE,
             instance.get("osparams_private"), frozenset())):
        config.add_section(section)
        for key, value in sorted((values or {}).items()):
            if key not in skip:
                config.set(section, key, str(value))
    return config


def finalize_export(instance: dict, disks: list, compression: str) -> None:
    """Complete the export of an instance whose disks were transferred.

    ``instance`` is the instance with filled parameters (public and
    private OS parameters apart), ``disks`` its disk dicts in order, whose
    dumps (``<uuid>``, holding the data as ``compression`` says) must be
    in the instance's unfinished export. The description is written and
    the export replaces the instance's previous one on this node.
    """
    if not isinstance(instance, dict) or not all(
            isinstance(instance.get(key), str) and instance[key]
            for key in ("name", "hypervisor", "primary_node")) or \
            not isinstance(instance.get("os"), str):
        Fail("Invalid instance to export: name, os, hypervisor and"
              " primary_node are required")
    name = _ExportName(instance["name"])
    if not isinstance(compression, str) or not compression:
        Fail("Invalid compression %r", compression)
    if not isinstance(disks, list) or not all(
            isinstance(disk, dict) and isinstance(disk.get("size"), int) and
            isinstance(disk.get("dev_type"), str) for disk in disks):
        Fail("Invalid disks %r, expected a list of disk dictionaries",
              disks)
    tmpdir = pathutils.ExportTempDir(name)
    for disk in disks:
        dump = os.path.join(tmpdir, _ExportName(disk.get("uuid")))
        if not os.path.isfile(dump):
            Fail("The dump of disk %s of %s is missing from %s",
                  disk.get("iv_name") or disk["uuid"], name,
                  vcluster.MakeVirtualPath(tmpdir))
    try:
        text = _DumpConfig(_ExportConfig(instance, disks, compression,
                                         int(time.time())))
    except (KeyError, TypeError, ValueError) as err:
        Fail("Invalid instance %s for an export: %r", name, err)
    io.EnsureDirs([(tmpdir, 0o750)])
    io.WriteFile(os.path.join(tmpdir, constants.EXPORT_CONF_FILE), data=text)
    final = os.path.join(pathutils.EXPORT_DIR, name)
    shutil.rmtree(final, ignore_errors=True)
    try:
        os.rename(tmpdir, final)
    except OSError as err:
        Fail("Cannot move the export of %s into place: %s", name,
              err.strerror)
    io.FsyncDirectory(pathutils.EXPORT_DIR)
    logging.info("Finalized the export of %s (%d disk(s))", name,
                 len(disks))



# Node-to-node transfers (see ganeti.impexp) --------------------------------
# Each end runs in a process of its own; ganeti.impexp.node starts and
# controls it and checks the arguments.

def import_start(opts: dict, instance_name: str, component: str,
                 dest: list, address: str) -> dict[str, Any]:
    """Receive one stream into ``dest``; {name, address, port}."""
    return impexp_node.StartImport(opts, instance_name, component, dest,
                                   address)


def export_start(opts: dict, host: str, port: int, instance_name: str,
                 component: str, source: list) -> str:
    """Send ``source`` to the import at ``host``/``port``; its name."""
    return impexp_node.StartExport(opts, host, port, instance_name,
                                   component, source)


def impexp_status(names: list[str]) -> list[dict[str, Any] | None]:
    """The status of each named transfer (None if unknown)."""
    return impexp_node.GetStatus(names)


def impexp_abort(name: str) -> None:
    """Stop a transfer and discard the file its import wrote."""
    impexp_node.Abort(name)


def impexp_cleanup(name: str) -> None:
    """Forget a transfer, stopping it if it still runs (the data of a
    successful import stays)."""
    impexp_node.Cleanup(name)
