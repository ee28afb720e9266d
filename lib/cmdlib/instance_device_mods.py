"""The disk and NIC changes of gnt-instance modify (LUInstanceSetParams):
their forms, how a device is found (index, -1, name or UUID) and the
checks their parameters need on their own.

Disks and NICs are stacks: a device is added or removed at the end of its
list only, so that no device changes its index.
"""

from typing import Any

from ganeti import constants, errors, netutils, objects


# Ganeti's limits on the devices of one instance
MAX_DISKS = 16
MAX_NICS = 8

_DISK_ADD_KEYS = frozenset(["size", "mode", "name", "adopt",
                            "provider"]) | constants.IDISK_LVM_PARAMS
_DISK_MODIFY_KEYS = frozenset(["mode", "name"])
_NIC_KEYS = frozenset(["mac", "ip", "mode", "link", "vlan", "name",
                       "network"])
_NIC_PARAM_KEYS = (objects.NIC_MODE, objects.NIC_LINK, objects.NIC_VLAN)

DeviceMod = tuple[str, Any, dict]


def UpgradeDeviceMods(kind: str, mods: list) -> list[DeviceMod]:
    """Device changes as ``[(operation, index or name, params), ...]``.

    Ganeti's legacy form ``[(add|remove|index, params), ...]`` allows one
    addition or removal, at the end of the list, per operation.
    """
    if not mods or len(mods[0]) == 3:
        return [(op, ident, dict(params)) for op, ident, params in mods]
    result = []
    addremove = 0
    for op_or_idx, params in mods:
        if op_or_idx in (constants.DDM_ADD, constants.DDM_REMOVE):
            addremove += 1
            if addremove > 1:
                raise errors.OpPrereqError("Only one %s add or remove"
                                           " operation is supported at a"
                                           " time" % kind,
                                           errors.ECODE_INVAL)
            result.append((op_or_idx, -1, dict(params)))
        else:
            result.append((constants.DDM_MODIFY, op_or_idx, dict(params)))
    return result


def _ParseIndex(identifier: Any) -> int | None:
    if isinstance(identifier, bool):
        return None
    try:
        return int(identifier)
    except (TypeError, ValueError):
        return None


def _AddIndex(kind: str, identifier: Any, items: list) -> int:
    """Where an added device goes: only at the end (index n or -1)."""
    idx = _ParseIndex(identifier)
    if idx is None:
        raise errors.OpPrereqError("Only positive integer or -1 is accepted"
                                   " as identifier for %s: %s" %
                                   (kind, identifier), errors.ECODE_INVAL)
    if idx not in (-1, len(items)):
        raise errors.OpPrereqError(
            "Can't add a %s at index %s: %ss can only be added at the end"
            " of the list (index %d or -1)" % (kind, identifier, kind,
                                                len(items)),
            errors.ECODE_INVAL)
    return len(items)


def _FindItem(kind: str, identifier: Any, items: list) -> int:
    """Index of an existing device given by index (-1: the last), name or
    UUID."""
    idx = _ParseIndex(identifier)
    if idx is None:
        for pos, item in enumerate(items):
            if identifier in (item.name, item.uuid):
                return pos
        raise errors.OpPrereqError("Cannot find %s with identifier %s" %
                                   (kind, identifier), errors.ECODE_NOENT)
    if idx < -1:
        raise errors.OpPrereqError("Not accepting negative indices other"
                                   " than -1", errors.ECODE_INVAL)
    if idx == -1:
        idx = len(items) - 1
    if not 0 <= idx < len(items):
        raise errors.OpPrereqError("Got %s index %s, but there are only %s" %
                                   (kind, identifier, len(items)),
                                   errors.ECODE_INVAL)
    return idx


def _CheckLast(kind: str, idx: int, items: list) -> None:
    if idx != len(items) - 1:
        raise errors.OpPrereqError(
            "Can't remove %s %d: only the last %s (index %d) can be"
            " removed" % (kind, idx, kind, len(items) - 1),
            errors.ECODE_INVAL)


def _DeviceName(value: Any) -> str | None:
    """A device name as given; "none" (or nothing) means no name."""
    if value is None or (isinstance(value, str) and
                         value.lower() == constants.VALUE_NONE):
        return None
    if not isinstance(value, str) or not value:
        raise errors.OpPrereqError("Invalid device name %r" % (value, ),
                                   errors.ECODE_INVAL)
    return value


def _ValidateDeviceNames(kind: str, items: list) -> None:
    """Names must be unique among an instance's disks (or NICs) and not
    look like indices."""
    seen: set[str] = set()
    for item in items:
        if item.name is None:
            continue
        if _ParseIndex(item.name) is not None:
            raise errors.OpPrereqError("Invalid name '%s'. Purely numeric %s"
                                       " names are not allowed." %
                                       (item.name, kind), errors.ECODE_INVAL)
        if item.name in seen:
            raise errors.OpPrereqError("%s name '%s' already used" %
                                       (kind, item.name),
                                       errors.ECODE_NOTUNIQUE)
        seen.add(item.name)


def _CheckNicParams(op: str, params: dict) -> None:
    """Check (and normalise in place) the parameters of a NIC change that
    need nothing but themselves."""
    unknown = sorted(set(params) - _NIC_KEYS)
    if unknown:
        raise errors.OpPrereqError("Unknown NIC parameter(s): %s" %
                                   ", ".join(unknown), errors.ECODE_INVAL)
    if "name" in params:
        params["name"] = _DeviceName(params["name"])
    if "ip" in params:
        ip = params["ip"]
        if ip is None or (isinstance(ip, str) and
                          ip.lower() == constants.VALUE_NONE):
            params["ip"] = None
        elif isinstance(ip, str) and ip.lower() == constants.NIC_IP_POOL:
            params["ip"] = constants.NIC_IP_POOL
        elif not isinstance(ip, str) or not netutils.IsValidIP(ip):
            raise errors.OpPrereqError("Invalid IP address '%s'" % (ip, ),
                                       errors.ECODE_INVAL)
    if "network" in params and (
            params["network"] is None or
            str(params["network"]).lower() == constants.VALUE_NONE):
        params["network"] = None
    if "mac" in params:
        mac = params["mac"]
        if mac is None:
            raise errors.OpPrereqError("Cannot unset the NIC MAC address",
                                       errors.ECODE_INVAL)
        mac = str(mac).lower()
        if mac not in (constants.VALUE_AUTO, constants.VALUE_GENERATE) and \
                not objects.NIC._FIELD_CHECKS["mac"](mac):
            raise errors.OpPrereqError("Invalid MAC address specified: %s" %
                                       params["mac"], errors.ECODE_INVAL)
        if op == constants.DDM_MODIFY and mac == constants.VALUE_AUTO:
            raise errors.OpPrereqError("'auto' is not a valid MAC address"
                                       " when modifying an existing NIC",
                                       errors.ECODE_INVAL)
        params["mac"] = mac


def _DiskSize(value: Any) -> int:
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise errors.OpPrereqError("Invalid disk size '%s'" % (value, ),
                                   errors.ECODE_INVAL) from None
    if isinstance(value, bool) or size <= 0:
        raise errors.OpPrereqError("Invalid disk size '%s'" % (value, ),
                                   errors.ECODE_INVAL)
    return size


def _DiskMode(value: Any) -> str:
    if value not in objects.DISK_ACCESS_SET:
        raise errors.OpPrereqError("Invalid disk access mode '%s'" %
                                   (value, ), errors.ECODE_INVAL)
    return value
