"""The data collectors of ganeti-mond, other than the self-diagnose one.

Each collector reads what the node itself knows (/proc, the
hypervisor's runtime state) and returns the ``data`` of its report;
names, categories, kinds and data formats are Ganeti's where Ganeti has
the collector (cpu-avg-load, diskstats, inst-status-xen as
inst-status-<hypervisor>). ``Collect`` is called once per collection
interval, by one thread per collector.
"""

import collections
import os
import time
from typing import Any

from ganeti import constants, errors, hypervisor
from ganeti.hypervisor import hv_base
from ganeti.monitoring import report

_PROC_STAT = "/proc/stat"
_PROC_DISKSTATS = "/proc/diskstats"
_PROC_UPTIME = "/proc/uptime"
# cpu-avg-load: samples kept, and the window the average is taken over
# (Ganeti's cpuavgloadBufferSize and cpuavgloadWindowSize)
CPU_BUFFER_SIZE = 150
CPU_WINDOW = 600.0
# The /proc/diskstats columns after major, minor and name, as Ganeti
# names them
_DISKSTATS_FIELDS = ("readsNum", "mergedReads", "secRead", "timeRead",
                     "writes", "mergedWrites", "secWritten", "timeWrite",
                     "ios", "timeIO", "wIOmillis")


class DataCollector:
    """A collector: its identity and how it collects."""

    NAME = ""
    CATEGORY: str | None = None
    KIND = report.KIND_PERFORMANCE
    FORMAT_VERSION = 1

    def Collect(self, interval: float) -> Any:
        """The data of a new report (``interval``: seconds until the next
        collection, the longest a collection may take)."""
        raise NotImplementedError

    def Report(self, interval: float) -> dict[str, Any]:
        """A new report of this collector."""
        return report.BuildReport(self.NAME, self.CATEGORY, self.KIND,
                                  self.Collect(interval),
                                  self.FORMAT_VERSION)


def _CpuBusyTicks(path: str = _PROC_STAT) -> list[int]:
    """Busy clock ticks of all CPUs together, then of each CPU (Ganeti
    counts all but idle as busy, guest time included)."""
    result = []
    with open(path, encoding="ascii") as fobj:
        for line in fobj:
            fields = line.split()
            if not fields or not fields[0].startswith("cpu"):
                continue
            values = [int(value) for value in fields[1:11]]
            values += [0] * (10 - len(values))
            # user nice system idle iowait irq softirq steal guest guest_nice
            result.append(sum(values) - values[3])
    return result


class CpuAvgLoad(DataCollector):
    """Average CPU load over the last CPU_WINDOW seconds: per CPU the
    fraction of time it was busy, in total the number of CPUs busy."""

    NAME = constants.DATA_COLLECTOR_CPU_LOAD

    def __init__(self, path: str = _PROC_STAT):
        self._path = path
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._samples: collections.deque[tuple[float, list[int]]] = \
            collections.deque(maxlen=CPU_BUFFER_SIZE)
        # A first sample, so that the first report has a load to show
        self._samples.append((time.monotonic(), _CpuBusyTicks(path)))

    def Collect(self, interval: float) -> Any:
        now = time.monotonic()
        self._samples.append((now, _CpuBusyTicks(self._path)))
        window = [sample for sample in self._samples
                  if sample[0] >= now - CPU_WINDOW]
        (first_time, first), (last_time, last) = window[0], window[-1]
        elapsed = (last_time - first_time) * self._ticks
        if elapsed <= 0:
            return {"error": "Time covered by data is not sufficient."
                    " The window considered is %d s" % CPU_WINDOW}
        loads = [(new - old) / elapsed for new, old in zip(last, first)]
        return {"cpu_number": len(loads) - 1, "cpus": loads[1:],
                "cpu_total": loads[0]}


class DiskStats(DataCollector):
    """The block devices' I/O counters (/proc/diskstats)."""

    NAME = constants.DATA_COLLECTOR_DISK_STATS
    CATEGORY = report.CATEGORY_STORAGE

    def __init__(self, path: str = _PROC_DISKSTATS):
        self._path = path

    def Collect(self, interval: float) -> Any:
        result = []
        with open(self._path, encoding="ascii") as fobj:
            for line in fobj:
                fields = line.split()
                if len(fields) < 3 + len(_DISKSTATS_FIELDS):
                    continue
                entry: dict[str, Any] = {"major": int(fields[0]),
                                         "minor": int(fields[1]),
                                         "name": fields[2]}
                entry.update(zip(_DISKSTATS_FIELDS,
                                 (int(value) for value in fields[3:])))
                result.append(entry)
        return result


class NodeLoad(DataCollector):
    """Memory (MiB), CPUs, load averages and uptime of the node."""

    NAME = constants.DATA_COLLECTOR_NODE_LOAD
    CATEGORY = report.CATEGORY_NODE

    def Collect(self, interval: float) -> Any:
        data: dict[str, Any] = dict(hv_base.GetLinuxNodeInfo())
        data["load_average"] = list(os.getloadavg())
        with open(_PROC_UPTIME, encoding="ascii") as fobj:
            data["uptime"] = float(fobj.read().split()[0])
        return data


_HV_STATES = {constants.HV_INSTANCE_RUNNING: "running",
              constants.HV_INSTANCE_SHUTDOWN: "shutdown"}


class InstanceStatus(DataCollector):
    """The instances the node's hypervisor runs, with their state.

    An instance whose guest shut itself down while its hypervisor process
    stays is reported as such, with the status "unknown" (a user's
    shutdown or a crash: only the cluster knows whether it should run);
    a hypervisor that cannot be asked makes the whole report "unknown".
    """

    CATEGORY = report.CATEGORY_INSTANCE
    KIND = report.KIND_STATUS

    def __init__(self, hv_name: str):
        self.NAME = "inst-status-%s" % hv_name
        self.hv_name = hv_name
        self._hv: hv_base.BaseHypervisor | None = None

    def Collect(self, interval: float) -> Any:
        try:
            if self._hv is None:
                self._hv = hypervisor.GetHypervisor(self.hv_name)
            infos = self._hv.GetAllInstancesInfo()
        except (errors.GenericError, OSError) as err:
            return {"instances": [],
                    "status": {"code": report.STATUS_UNKNOWN,
                               "message": "Cannot list the %s instances: %s"
                               % (self.hv_name, err)}}
        instances = []
        worst = report.STATUS_OK
        for name, inst_id, memory, vcpus, state, cpu_time in infos:
            running = state == constants.HV_INSTANCE_RUNNING
            if not running:
                worst = report.STATUS_UNKNOWN
            instances.append({
                "name": name, "id": inst_id, "memory": memory,
                "vcpus": vcpus, "cpu_time": cpu_time,
                "actualState": _HV_STATES.get(state, "unknown"),
                "status": {"code": (report.STATUS_OK if running
                                    else report.STATUS_UNKNOWN),
                           "message": "" if running else
                           "The guest is not running"},
            })
        return {"instances": instances,
                "status": {"code": worst,
                           "message": "" if worst == report.STATUS_OK else
                           "Some instances are not running"}}


# Instance status collector name -> hypervisor
INSTANCE_STATUS_HYPERVISORS = {
    constants.DATA_COLLECTOR_INST_STATUS_KVM: constants.HT_KVM,
    constants.DATA_COLLECTOR_INST_STATUS_FAKE: constants.HT_FAKE,
}
