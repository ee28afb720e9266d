"""Ganeti maintenance daemon: repairs what the nodes' self-diagnose reports.

It runs on the master only (decided as for ganeti-masterd: the
configuration and the nodes' vote, or ``--no-voting --yes-do-it``) and
exits with code 11 elsewhere. One thread polls the nodes' signed
diagnose reports and runs the repair rounds (ganeti.maintd.engine); the
HTTP server answers from the shared state, as design-maintd's external
reporting protocol says: ``/`` the protocol versions, ``/1/status`` the
incidents, ``/1/jobs`` the current round's jobs, ``/1/evacuated`` the
nodes evacuated for an incident; ``/status.html`` (and ``/`` for
browsers) the status page (ganeti.maintd.status_page).
"""

import logging
import optparse
import threading
from typing import Any

from ganeti import constants, daemon, errors, netutils, serializer, ssconf
from ganeti import http as ghttp
from ganeti.http import server
from ganeti.maintd import engine, state as mstate, status_page
from ganeti.server import masterd

API_VERSION = 1
DEFAULT_MAX_CLIENTS = 20


class MaintdHandler:
    """The HTTP request handler (see the module doc)."""

    def __init__(self, maint_state: mstate.State,
                 page: status_page.StatusPage | None = None):
        self._state = maint_state
        self._page = page

    def _Answer(self, path: str) -> Any:
        if path == "/":
            return [API_VERSION]
        if path == "/1/status":
            return self._state.Status()
        if path == "/1/jobs":
            return self._state.Jobs()
        if path == "/1/evacuated":
            return self._state.Evacuated()
        raise ghttp.HttpNotFound("Resource not found: %s" % path)

    def __call__(self, method: str, target: str, headers,
                 body: bytes) -> tuple[int, dict[str, str], bytes]:
        path = ghttp.ReadOnlyPath(method, target)
        if self._page is not None and \
                status_page.WantsPage(path, headers.get("Accept")):
            return (200, {ghttp.HTTP_CONTENT_TYPE: status_page.CONTENT_TYPE},
                    self._page.Render())
        return (200, dict(ghttp.JSON_HEADERS),
                serializer.DumpJsonBytes(self._Answer(path)))


def CheckMaintd(options: optparse.Values, args: list[str]) -> None:
    """Start only on the master (exit code 11 elsewhere), as masterd."""
    daemon.CheckServerArgs(options, args)
    try:
        master, myself = ssconf.GetMasterAndMyself()
    except errors.ConfigurationError as err:
        raise errors.NotMasterError("This node is not part of a cluster:"
                                    " %s" % err) from err
    if master != myself:
        raise errors.NotMasterError("This is not the master node (the master"
                                    " is %s)" % master)
    masterd.CheckMasterd(options, args)


def PrepMaintd(options: optparse.Values, _args: list[str]
               ) -> tuple[server.HttpServer, engine.Engine]:
    """Bind the socket (the state is read from the configuration by the
    engine's first poll)."""
    maint_state = mstate.State()
    maint = engine.Engine(maint_state)
    store = ssconf.SimpleStore()
    page = status_page.StatusPage(maint_state, maint,
                                  cluster_name=store.GetClusterName)
    http_server = server.HttpServer(
        options.bind_address, options.port, MaintdHandler(maint_state, page),
        mode=server.MODE_THREAD, max_clients=options.max_clients,
        max_pending_per_address=options.max_clients)
    return http_server, maint


def _RunEngine(maint: engine.Engine, stop_event: threading.Event) -> None:
    while not stop_event.is_set():
        maint.Step()
        stop_event.wait(maint.PollInterval())


def ExecMaintd(_options: optparse.Values, _args: list[str],
               prep: tuple[server.HttpServer, engine.Engine],
               stop_event: threading.Event) -> None:
    """Poll, repair and serve until SIGTERM."""
    http_server, maint = prep
    worker = threading.Thread(target=_RunEngine, args=(maint, stop_event),
                              name="maintenance", daemon=True)
    worker.start()
    address, port = http_server.server_address
    logging.info("Serving the maintenance state on %s port %d", address,
                 port)
    http_server.start()
    stop_event.wait()
    http_server.shutdown()
    worker.join(30)


def BuildParser() -> optparse.OptionParser:
    """ganeti-maintd's options (its man page is generated from them)."""
    parser = optparse.OptionParser(
        description="The Ganeti maintenance daemon runs on the master node."
        " It polls the signed self-diagnose reports of the nodes'"
        " ganeti-mond, notes each new report asking for a repair as an"
        " incident, evacuates and offlines the nodes that need it or runs"
        " their white-listed repair command (live-repair), tagging them"
        " maintd:repairready:ID, or maintd:repairfailed:ID when a job"
        " failed (an incident canceled with gnt-cluster repair-cancel is"
        " left alone), and serves its state over plain HTTP as JSON on the"
        " master address: / (the protocol versions), /1/status (the"
        " incidents), /1/jobs and /1/evacuated, and a status page for"
        " browsers at /status.html (and at / for clients preferring"
        " HTML). Its state is kept in the"
        " cluster configuration, so the maintenance daemon of a new master"
        " carries on after a master failover; rounds start at most every"
        " maintenance interval (gnt-cluster modify --maintenance-interval)."
        " Removing the repairready"
        " tag of a node that no longer reports the problem forgets the"
        " incident and brings the node back online. With gnt-cluster modify"
        " --maintd-harep yes it also repairs instances as harep does (the"
        " ganeti:watcher:autorepair tags); with --auto-balance-cluster yes"
        " it balances the nodes the round's evacuations and repairs leave"
        " alone. It starts only if most"
        " nodes agree that this node is the master (see --no-voting) and"
        " exits with code 11 on other nodes.",
        usage="%prog [-f] [-d] [-b ADDRESS] [-p PORT] [--max-clients N]"
        " [--no-voting [--yes-do-it]]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("--max-clients", dest="max_clients", type="int",
                      default=DEFAULT_MAX_CLIENTS, metavar="N",
                      help="Number of connections served at once"
                      " (default: %default)")
    parser.add_option("--no-voting", dest="no_voting", action="store_true",
                      default=False,
                      help="Do not check that the nodes agree on this node"
                      " being the master")
    parser.add_option("--yes-do-it", dest="yes_do_it", action="store_true",
                      default=False,
                      help="Confirm --no-voting (non-interactive)")
    daemon.AddDaemonOptions(
        parser, default_port=netutils.GetDaemonPort(constants.MAINTD))
    return parser


def main() -> None:
    """Entry point of ganeti-maintd; it listens on the master address
    unless told otherwise."""
    parser = BuildParser()
    try:
        parser.set_defaults(bind_address=ssconf.SimpleStore().GetMasterIP())
    except errors.ConfigurationError:
        pass
    daemon.GenericMain(constants.MAINTD, parser, CheckMaintd, PrepMaintd,
                       ExecMaintd)
