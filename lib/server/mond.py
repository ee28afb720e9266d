"""Ganeti monitoring daemon: the reports of the node's data collectors.

It runs on every node and answers HTTP GET requests (plain HTTP, JSON)
as Ganeti's ganeti-mond does: ``/`` the protocol versions, ``/1``
null, ``/1/list/collectors`` the active collectors as ``[name,
category, kind]``, ``/1/report/all`` every active collector's report
and ``/1/report/<category>/<collector>`` one of them ("default" stands
for no category); anything else is 404.

Each collector runs in its own thread at its interval and the requests
are answered from the last report, so a request never waits for a
collection (except for the very first of a collector). Which collectors
are active, their intervals and the self-diagnose command come from the
cluster configuration through ssconf (the master pushes it to every
node), re-read when it changes; an instance status collector is there
only for the hypervisors the cluster has enabled.
"""

import logging
import optparse
import os
import threading
from typing import Any, Callable

from ganeti import constants, daemon, errors, netutils, objects, pathutils
from ganeti import http as ghttp
from ganeti import serializer, ssconf
from ganeti.http import server
from ganeti.monitoring import collectors, diagnose, drbd, report

API_VERSION = 1
DEFAULT_MAX_CLIENTS = 20


def _MTime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


class Settings:
    """The collectors' settings from ssconf, reloaded when it changes."""

    def __init__(self, store: ssconf.SimpleStore | None = None,
                 key_file: str = pathutils.CONFD_HMAC_KEY):
        self._store = store or ssconf.SimpleStore()
        self._key_file = key_file
        self._paths = [self._store.KeyToFilename(key) for key in (
            ssconf.SS_DATA_COLLECTORS,
            ssconf.SS_DIAGNOSE_DATA_COLLECTOR_FILENAME,
            ssconf.SS_HYPERVISOR_LIST)]
        self._lock = threading.Lock()
        self._stamp: list[float | None] | None = None
        self._key_stamp: float | None = None
        self._key: bytes | None = None
        self.collectors = objects.FillDataCollectors({})
        self.diagnose_filename = ""
        self.hypervisors: list[str] = []
        # Called after the settings changed
        self.listeners: list[Callable[[], None]] = []

    def Refresh(self) -> None:
        """Re-read the settings if their files changed, and tell the
        listeners then."""
        stamp = [_MTime(path) for path in self._paths]
        with self._lock:
            if stamp == self._stamp:
                return
            self._stamp = stamp
            try:
                self.collectors = objects.FillDataCollectors(
                    self._store.GetDataCollectors())
                self.diagnose_filename = \
                    self._store.GetDiagnoseDataCollectorFilename()
            except errors.ConfigurationError as err:
                logging.error("Keeping the previous collector settings: %s",
                              err)
            try:
                self.hypervisors = self._store.GetHypervisorList()
            except errors.ConfigurationError:
                self.hypervisors = []
            logging.info("Collector settings: %s; diagnose command %r;"
                         " hypervisors %s", self.collectors,
                         self.diagnose_filename, self.hypervisors)
        for listener in self.listeners:
            listener()

    def IsActive(self, name: str) -> bool:
        hv_name = collectors.INSTANCE_STATUS_HYPERVISORS.get(name)
        if hv_name is not None and hv_name not in self.hypervisors:
            return False
        return self.collectors[name][constants.DATA_COLLECTOR_STATE_ACTIVE]

    def Interval(self, name: str) -> float:
        """Seconds between two collections."""
        return self.collectors[name][
            constants.DATA_COLLECTOR_PARAMETER_INTERVAL] / 1e6

    def HmacKey(self) -> bytes | None:
        """The cluster's HMAC key, None (and logged) if it is unusable."""
        stamp = _MTime(self._key_file)
        with self._lock:
            if stamp != self._key_stamp:
                self._key_stamp = stamp
                try:
                    self._key = report.ReadHmacKey(self._key_file)
                except (OSError, errors.ConfigurationError) as err:
                    logging.error("Diagnose reports go unsigned, no usable"
                                  " HMAC key: %s", err)
                    self._key = None
            return self._key


class CollectorRunner:
    """One collector's thread and its last report."""

    def __init__(self, collector: collectors.DataCollector,
                 settings: Settings, stop_event: threading.Event):
        self.collector = collector
        self._settings = settings
        self._stop = stop_event
        self._wake = threading.Event()
        self._collect_lock = threading.Lock()
        self._report: dict[str, Any] | None = None
        self.thread = threading.Thread(target=self._Run, daemon=True,
                                       name=collector.NAME)

    def _Collect(self) -> dict[str, Any]:
        name = self.collector.NAME
        try:
            result = self.collector.Report(self._settings.Interval(name))
        except Exception as err:  # pylint: disable=broad-except
            logging.exception("Data collector %s failed", name)
            result = report.BuildReport(
                name, self.collector.CATEGORY, self.collector.KIND,
                {"error": "%s: %s" % (err.__class__.__name__, err)},
                self.collector.FORMAT_VERSION)
        self._report = result
        return result

    def Get(self) -> dict[str, Any]:
        """The last report (collected now if there is none yet)."""
        current = self._report
        if current is not None:
            return current
        with self._collect_lock:
            return self._report or self._Collect()

    def Wake(self) -> None:
        self._wake.set()

    def _Run(self) -> None:
        name = self.collector.NAME
        while not self._stop.is_set():
            self._settings.Refresh()
            if self._settings.IsActive(name):
                with self._collect_lock:
                    self._Collect()
            self._wake.wait(self._settings.Interval(name))
            self._wake.clear()


def _Category(collector: collectors.DataCollector) -> str:
    return collector.CATEGORY or report.CATEGORY_DEFAULT


class MondHandler:
    """The HTTP request handler of ganeti-mond (see the module doc)."""

    def __init__(self, settings: Settings, runners: list[CollectorRunner]):
        self._settings = settings
        self._runners = sorted(runners, key=lambda run: run.collector.NAME)

    def _Active(self) -> list[CollectorRunner]:
        return [runner for runner in self._runners
                if self._settings.IsActive(runner.collector.NAME)]

    def _Answer(self, path: str) -> Any:
        if path == "/":
            return [API_VERSION]
        if path == "/%d" % API_VERSION:
            return None
        parts = path.split("/")[1:]
        if parts == ["1", "list", "collectors"]:
            return [[run.collector.NAME, _Category(run.collector),
                     run.collector.KIND] for run in self._Active()]
        if parts == ["1", "report", "all"]:
            return [runner.Get() for runner in self._Active()]
        if len(parts) == 4 and parts[:2] == ["1", "report"]:
            category, name = parts[2:]
            for runner in self._Active():
                collector = runner.collector
                if collector.NAME == name and \
                        category in (_Category(collector), name):
                    return runner.Get()
            raise ghttp.HttpNotFound("No active collector %s in category %s"
                                     % (name, category))
        raise ghttp.HttpNotFound("Resource not found: %s" % path)

    def __call__(self, method: str, target: str, headers,
                 body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = ghttp.ReadOnlyPath(method, target)
        self._settings.Refresh()
        return (200, dict(ghttp.JSON_HEADERS),
                serializer.DumpJsonBytes(self._Answer(path)))


def MakeCollectors(settings: Settings) -> list[collectors.DataCollector]:
    """Every collector this daemon has (active or not)."""
    result: list[collectors.DataCollector] = [
        collectors.CpuAvgLoad(), collectors.DiskStats(),
        collectors.NodeLoad(), drbd.Drbd(),
        diagnose.Diagnose(lambda: settings.diagnose_filename,
                          settings.HmacKey),
    ]
    result += [collectors.InstanceStatus(hv_name) for hv_name
               in sorted(collectors.INSTANCE_STATUS_HYPERVISORS.values())]
    return result


def CheckMond(options: optparse.Values, args: list[str]) -> None:
    """No arguments; mond serves with whatever configuration the node has.
    """
    daemon.CheckServerArgs(options, args)


def PrepMond(options: optparse.Values, _args: list[str]
             ) -> tuple[server.HttpServer, list[CollectorRunner],
                        threading.Event]:
    """Read the settings, make the collectors and bind the socket."""
    settings = Settings()
    settings.Refresh()
    stop = threading.Event()
    runners = [CollectorRunner(collector, settings, stop)
               for collector in MakeCollectors(settings)]
    # A new interval or a collector activated takes effect at once
    settings.listeners = [runner.Wake for runner in runners]
    http_server = server.HttpServer(
        options.bind_address, options.port, MondHandler(settings, runners),
        mode=server.MODE_THREAD, max_clients=options.max_clients,
        max_pending_per_address=options.max_clients)
    return http_server, runners, stop


def ExecMond(_options: optparse.Values, _args: list[str],
             prep: tuple[server.HttpServer, list[CollectorRunner],
                         threading.Event],
             stop_event: threading.Event) -> None:
    """Collect and serve until SIGTERM."""
    http_server, runners, stop = prep
    for runner in runners:
        runner.thread.start()
    address, port = http_server.server_address
    logging.info("Serving the monitoring reports on %s port %d", address,
                 port)
    http_server.start()
    stop_event.wait()
    http_server.shutdown()
    stop.set()
    for runner in runners:
        runner.Wake()


def BuildParser() -> optparse.OptionParser:
    """ganeti-mond's options (its man page is generated from them)."""
    parser = optparse.OptionParser(
        description="The Ganeti monitoring daemon runs on every node: it"
        " runs the data collectors (CPU load, disk statistics, node load,"
        " instance status, mirrored disks, self-diagnose) at the intervals"
        " the cluster configuration sets and serves their reports over"
        " plain HTTP as"
        " JSON: / (the protocol versions), /1/list/collectors,"
        " /1/report/all and /1/report/CATEGORY/COLLECTOR. The"
        " self-diagnose report, on which ganeti-maintd acts, is signed"
        " with the cluster's HMAC key.",
        usage="%prog [-f] [-d] [-b ADDRESS] [-p PORT] [--max-clients N]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("--max-clients", dest="max_clients", type="int",
                      default=DEFAULT_MAX_CLIENTS, metavar="N",
                      help="Number of connections served at once"
                      " (default: %default)")
    daemon.AddDaemonOptions(
        parser, default_port=netutils.GetDaemonPort(constants.MOND))
    return parser


def main() -> None:
    """Entry point of ganeti-mond."""
    daemon.GenericMain(constants.MOND, BuildParser(), CheckMond, PrepMond,
                       ExecMond)
