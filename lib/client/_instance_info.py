"""gnt-instance info: an instance's configuration and, unless --static,
its runtime state (the disks' status on their nodes), laid out as
Ganeti's; with --roman, integers in roman numerals as Ganeti's."""

from typing import Any

from ganeti import cli, constants, opcodes
from ganeti.cli_opts import ALL_OPT, PRIORITY_OPT, ROMAN_OPT, cli_option
from ganeti.utils.text import FormatUnit, TryToRoman

STATIC_OPT = cli_option("-s", "--static", dest="static", default=False,
                        action="store_true",
                        help="Only show configuration data, not runtime"
                        " data")

INFO_OPTS = [STATIC_OPT, ALL_OPT, ROMAN_OPT, PRIORITY_OPT]


def _Int(value: Any, roman: bool) -> str:
    return str(TryToRoman(value, roman))


def _FormatDiskStatus(dev_type: str, status: list | None,
                      roman: bool) -> str:
    """One node's status 7-tuple of a disk, as Ganeti words it."""
    if not status:
        return "not active"
    path, major, minor, syncp, estt, degr, ldisk_status = status
    txt = "%s (%s:%s)" % (path,
                          "N/A" if major is None else _Int(major, roman),
                          "N/A" if minor is None else _Int(minor, roman))
    if dev_type == constants.DT_DRBD8:
        if syncp is not None:
            sync_text = "*RECOVERING* %5.2f%%," % syncp
            sync_text += (" ETA %ss" % _Int(int(estt), roman) if estt
                          else " ETA unknown")
        else:
            sync_text = "in sync"
        if ldisk_status == constants.LDS_FAULTY:
            ldisk_text = " *MISSING DISK*"
        elif ldisk_status == constants.LDS_UNKNOWN:
            ldisk_text = " *UNCERTAIN STATE*"
        else:
            ldisk_text = ""
        txt += " %s, status %s%s" % (sync_text,
                                     "*DEGRADED*" if degr else "ok",
                                     ldisk_text)
    return txt


def _FormatDisk(idx: int, dev: dict, roman: bool) -> list:
    """Ganeti's block of one disk: size, logical id, status per node."""
    size = dev["size"]
    data: list[tuple[str, Any]] = [
        (dev["iv_name"] or "disk %s" % _Int(idx, roman), "%s, size %s" % (
            dev["dev_type"],
            FormatUnit(size, "h", roman) if isinstance(size, int)
            else size))]
    if dev["spindles"] is not None:
        data.append(("spindles", dev["spindles"]))
    data.append(("access mode", dev["mode"]))
    drbd_info = dev["drbd_info"]
    if drbd_info:
        data.extend([
            ("nodeA", "%s, minor=%s" % (
                drbd_info["primary_node"],
                _Int(drbd_info["primary_minor"], roman))),
            ("nodeB", "%s, minor=%s" % (
                drbd_info["secondary_node"],
                _Int(drbd_info["secondary_minor"], roman))),
            ("port", _Int(drbd_info["port"], roman))])
    elif dev["logical_id"] is not None:
        data.append(("logical_id", str(dev["logical_id"])))
    for key, title in (("pstatus", "on primary"),
                       ("sstatus", "on secondary")):
        if dev[key]:
            data.append((title, _FormatDiskStatus(dev["dev_type"], dev[key],
                                                  roman)))
    data.append(("name", dev["name"]))
    data.append(("UUID", dev["uuid"]))
    return data


def _FormatNic(idx: int, nic: list, roman: bool) -> list:
    name, uuid, ip, mac, mode, link, vlan, _, netinfo = nic
    return [("nic/%s" % _Int(idx, roman), ""), ("MAC", str(mac)),
            ("IP", str(ip)), ("mode", str(mode)), ("link", str(link)),
            ("vlan", _Int(vlan, roman)),
            ("network", str(netinfo["name"] if netinfo else None)),
            ("UUID", str(uuid)), ("name", str(name))]


def _FormatInstanceInfo(inst: dict, roman: bool) -> list[tuple[str, Any]]:
    """One instance of OpInstanceQueryData's result, as Ganeti shows it."""
    state = "configured to be %s" % inst["config_state"]
    if inst["run_state"]:
        state += ", actual state is %s" % inst["run_state"]
    secondaries = ", ".join(
        "%s (group %s, group UUID %s)" % row for row in zip(
            inst["snodes"], inst["snodes_group_names"],
            inst["snodes_group_uuids"]))
    nodes = [[("primary", inst["pnode"]),
              ("group", "%s (UUID %s)" % (inst["pnode_group_name"],
                                         inst["pnode_group_uuid"]))],
             [("secondaries", secondaries)]]
    return [
        ("Instance name", inst["name"]),
        ("UUID", inst["uuid"]),
        ("Serial number", _Int(inst["serial_no"], roman)),
        ("Creation time", cli.FormatTime(inst["ctime"])),
        ("Modification time", cli.FormatTime(inst["mtime"])),
        ("State", state),
        ("Nodes", nodes),
        ("Operating system", inst["os"]),
        ("Operating system parameters",
         cli.FormatParamsDictInfo(inst["os_instance"], inst["os_actual"],
                                  roman)),
        ("Allocated network port", _Int(inst["network_port"], roman)),
        ("Hypervisor", inst["hypervisor"]),
        ("Hypervisor parameters",
         cli.FormatParamsDictInfo(inst["hv_instance"], inst["hv_actual"],
                                  roman)),
        ("Back-end parameters",
         cli.FormatParamsDictInfo(inst["be_instance"], inst["be_actual"],
                                  roman)),
        ("NICs", [_FormatNic(idx, nic, roman)
                  for idx, nic in enumerate(inst["nics"])]),
        ("Disk template", inst["disk_template"]),
        ("Disks", [_FormatDisk(idx, dev, roman)
                   for idx, dev in enumerate(inst["disks"])]),
    ]


def ShowInstanceConfig(opts: Any, args: list[str]) -> int:
    """Show the configuration and, unless --static, the runtime state
    (disk status per node included) of instances."""
    if not args and not opts.show_all:
        cli.ToStderr("No instance selected. Please pass in --all if you"
                     " want to query all instances.")
        return constants.EXIT_FAILURE
    if args and opts.show_all:
        cli.ToStderr("Cannot use --all if you specify instance names.")
        return constants.EXIT_FAILURE
    op = opcodes.OpInstanceQueryData(instances=args, static=opts.static,
                                     use_locking=not opts.static)
    result = cli.SubmitOpCode(op, opts=opts)
    if not result:
        cli.ToStdout("No instances.")
        return constants.EXIT_FAILURE
    cli.PrintGenericInfo([_FormatInstanceInfo(inst, opts.roman_integers)
                          for inst in result.values()])
    return constants.EXIT_SUCCESS
