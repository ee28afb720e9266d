"""The instances' dynamic utilisation, as hbal reads it.

Two sources, both giving per instance (cpu, memory, disk, network) load
for the ``*_load_cv`` components of the score (``metrics``):

* a utilisation file (hbal's ``-U``): one line per instance,
  ``name cpu_util mem_util disk_util net_util``; the numbers should be
  normalised to [0, 1] and consistent across instances; an unknown
  instance name aborts (``model.Cluster``);
* the nodes' monitoring daemons (``--mond``: their ``/1/report/all``,
  fetched by the caller, or those reports from a file with
  ``--mond-data``: a JSON array of ``{"node": name, "reports": [report,
  ...]}``). As in hbal only the ``cpu-avg-load``
  collector is used: a node's busy CPU fraction is shared among its
  primary instances in proportion to their vCPUs (the instances' own
  CPU use is not known); the other metrics keep hbal's default (one per
  instance, ``model.BASE_UTIL``): as in hbal's MonD backend, the data
  replaces the CPU metric only. The data is used only when every online
  node holding primaries reported it.

Instances neither source names get hbal's default utilisation of one
per metric (``model.BASE_UTIL``); MonD's data names every instance on an
online node.
"""

import logging
import math
from typing import Any

from ganeti import constants, errors, serializer
from ganeti.htools.model import BASE_UTIL

# The columns of a utilisation file line
UTIL_FIELDS = ("cpu_util", "mem_util", "disk_util", "net_util")


def ParseUtilisation(text: str) -> dict[str, tuple[float, ...]]:
    """Instance name -> utilisation, from a ``-U`` file's text (empty
    lines are skipped)."""
    result: dict[str, tuple[float, ...]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 1 + len(UTIL_FIELDS):
            raise errors.ParameterError(
                "Invalid utilisation data at line %d: expected 'name %s',"
                " got %r" % (number, " ".join(UTIL_FIELDS), line))
        name = fields[0]
        try:
            values = tuple(float(value) for value in fields[1:])
        except ValueError:
            raise errors.ParameterError(
                "Invalid utilisation data at line %d: not a number in %r" %
                (number, line))
        if not all(math.isfinite(value) and value >= 0 for value in values):
            raise errors.ParameterError(
                "Invalid utilisation data at line %d: values must be finite"
                " and not negative: %r" % (number, line))
        if name in result:
            raise errors.ParameterError(
                "Invalid utilisation data at line %d: instance %s given"
                " twice" % (number, name))
        result[name] = values
    return result


def ReadUtilisation(path: str) -> dict[str, tuple[float, ...]]:
    """``ParseUtilisation`` of a file."""
    try:
        with open(path, encoding="utf-8") as fobj:
            text = fobj.read()
    except (OSError, UnicodeDecodeError) as err:
        raise errors.ParameterError("Cannot read the utilisation file %s: %s"
                                    % (path, err))
    return ParseUtilisation(text)


def ParseMondData(text: str) -> dict[str, list[Any]]:
    """Node name -> reports, from a ``--mond-data`` file's text."""
    try:
        data = serializer.LoadJson(text)
    except ValueError as err:
        raise errors.ParameterError("Can't parse MonD data: %s" % err)
    if not isinstance(data, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("node"), str)
            and isinstance(entry.get("reports"), list) for entry in data):
        raise errors.ParameterError("Can't parse MonD data: expected an"
                                    " array of objects with 'node' and"
                                    " 'reports'")
    return {entry["node"]: entry["reports"] for entry in data}


def ReadMondData(path: str) -> dict[str, list[Any]]:
    """``ParseMondData`` of a file."""
    try:
        with open(path, encoding="utf-8") as fobj:
            text = fobj.read()
    except (OSError, UnicodeDecodeError) as err:
        raise errors.ParameterError("Cannot read the MonD data file %s: %s"
                                    % (path, err))
    return ParseMondData(text)


def _CpuFraction(reports: list[Any]) -> float | None:
    """The node's busy CPU fraction from its cpu-avg-load report."""
    for rep in reports:
        if not isinstance(rep, dict) or \
                rep.get("name") != constants.DATA_COLLECTOR_CPU_LOAD:
            continue
        data = rep.get("data")
        if not isinstance(data, dict):
            return None
        total, number = data.get("cpu_total"), data.get("cpu_number")
        if isinstance(total, (int, float)) and \
                isinstance(number, int) and number > 0:
            return max(float(total), 0.0) / number
        return None
    return None


def UtilisationFromMond(message: dict, reports: dict[str, list[Any]]
                        ) -> dict[str, tuple[float, ...]] | None:
    """The instances' utilisation from the nodes' mond reports (see the
    module's docstring), None when an online node with primaries has no
    usable cpu-avg-load report."""
    nodes = message.get("nodes") or {}
    primaries: dict[str, list[tuple[str, int]]] = {}
    for name, data in (message.get("instances") or {}).items():
        inodes = data.get("nodes") or []
        if inodes:
            primaries.setdefault(inodes[0], []).append(
                (name, int(data.get("vcpus", 1))))
    result: dict[str, tuple[float, ...]] = {}
    for node, insts in sorted(primaries.items()):
        info = nodes.get(node) or {}
        if info.get("offline") or info.get("drained"):
            continue
        fraction = _CpuFraction(reports.get(node) or [])
        if fraction is None:
            logging.warning("No CPU load from the monitoring daemon of node"
                            " %s: not using MonD data", node)
            return None
        vcpus = sum(count for _, count in insts) or 1
        for name, count in insts:
            result[name] = (fraction * count / vcpus,) + BASE_UTIL[1:]
    return result
