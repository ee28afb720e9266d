"""ganeti-maintd's status page: its state as HTML, for a person to read.

Served at ``/status.html``, and at ``/`` to clients preferring HTML to
JSON (browsers); API clients keep getting ``[1]`` there. The page shows
the nodes with their last self-diagnose report, the open incidents and
how far their repair got, the current round and the last ones, every job
maintd submitted for them with its status (asked from the master daemon
when the page is rendered), and the balancing settings. It is plain
HTML: no script, a meta refresh reloads it at the poll interval, and
every value from the cluster (names, the diagnose commands' opaque
details, the repair commands' output) is escaped.
"""

import html
import logging
import time
from typing import Any, Callable

from ganeti import errors, luxi, serializer
from ganeti.maintd import state as mstate

PAGE_PATH = "/status.html"
CONTENT_TYPE = "text/html; charset=utf-8"
_JSON_TYPE = "application/json"
_HTML_TYPE = "text/html"
# The page is reloaded at the poll interval, within these bounds
_MIN_REFRESH = 2
_MAX_REFRESH = 60
# Jobs asked from the master daemon at most (the newest)
_MAX_JOBS = 200
# Answer quickly if the master daemon does not
_LUXI_TIMEOUT = 5.0

_STYLE = """
body { font-family: sans-serif; margin: 1em 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: left;
         vertical-align: top; }
th { background: #eee; }
td.Ok, td.success, td.completed { background: #dfd; }
td.live-repair, td.running, td.waiting, td.queued, td.noted,
td.pending { background: #ffd; }
td.evacuate, td.evacuate-failover, td.error, td.failed,
td.canceled { background: #fdd; }
pre { margin: 0; white-space: pre-wrap; }
dl { display: grid; grid-template-columns: max-content auto;
     gap: 0.2em 1em; }
dt { font-weight: bold; }
dd { margin: 0; }
"""


def _Quality(accept: str, media_type: str) -> float:
    """How much an Accept header wants ``media_type`` (RFC 9110's q, the
    most specific matching range deciding)."""
    best, best_specificity = 0.0, -1
    major = media_type.split("/")[0]
    for item in accept.split(","):
        fields = [field.strip() for field in item.split(";")]
        media_range = fields[0].lower()
        if media_range == media_type:
            specificity = 2
        elif media_range == major + "/*":
            specificity = 1
        elif media_range == "*/*":
            specificity = 0
        else:
            continue
        quality = 1.0
        for param in fields[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if specificity > best_specificity:
            best, best_specificity = quality, specificity
    return best


def WantsPage(path: str, accept: str | None) -> bool:
    """Whether a GET of ``path`` gets the page: always at PAGE_PATH; at
    ``/`` when the client prefers HTML to JSON (a browser does, an API
    client sending no Accept header or ``*/*`` does not)."""
    if path == PAGE_PATH:
        return True
    if path != "/" or not accept:
        return False
    return _Quality(accept, _HTML_TYPE) > _Quality(accept, _JSON_TYPE)


def _E(value: Any) -> str:
    """Any value as escaped text (JSON for lists and objects)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = serializer.DumpJson(value)
    return html.escape(value, quote=True)


def _Time(stamp: float | None) -> str:
    if not stamp:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _Table(table_id: str, headers: list[str],
           rows: list[tuple[dict[str, str], list[tuple[str, str]]]],
           empty: str) -> str:
    """A table; each row is (its attributes, [(cell class, escaped
    cell)])."""
    if not rows:
        return '<p id="%s-none">%s</p>' % (table_id, _E(empty))
    lines = ['<table id="%s">' % table_id, "<tr>%s</tr>" % "".join(
        "<th>%s</th>" % _E(name) for name in headers)]
    for attrs, cells in rows:
        lines.append("<tr%s>%s</tr>" % (
            "".join(' %s="%s"' % (name, _E(value))
                    for name, value in attrs.items()),
            "".join('<td class="%s">%s</td>' % (_E(cls), text)
                    if cls else "<td>%s</td>" % text
                    for cls, text in cells)))
    lines.append("</table>")
    return "\n".join(lines)


class StatusPage:
    """Renders the page from the daemon's state and its engine's settings.

    ``engine`` is the maintd engine (its ``maintenance_interval``,
    ``balance``, ``balance_threshold`` and ``PollInterval``);
    ``job_info`` maps job ids to (status, summary), by default through a
    new LUXI client per page (the engine's thread has its own).
    """

    def __init__(self, maint_state: mstate.State, engine: Any,
                 cluster_name: Callable[[], str] | None = None,
                 job_info: Callable[[list[int]],
                                    dict[int, tuple[str, str]]] | None = None):
        self._state = maint_state
        self._engine = engine
        self._cluster_name = cluster_name or (lambda: "")
        self._job_info = job_info or _LuxiJobInfo

    def Render(self) -> bytes:
        """The page, as of now."""
        with self._state.lock:
            incidents = [dict(inc) for inc in self._state.incidents.values()]
            current = dict(self._state.round) if self._state.round else None
            last_rounds = [dict(rnd) for rnd in self._state.last_rounds]
            nodes = [dict(node) for node in self._state.nodes]
            last_poll = self._state.last_poll
        rounds = ([current] if current else []) + last_rounds
        job_ids = sorted({int(job) for source in incidents + rounds
                          for job in source.get("jobs", [])},
                         reverse=True)[:_MAX_JOBS]
        jobs = self._job_info(job_ids) if job_ids else {}
        try:
            refresh = int(min(_MAX_REFRESH, max(_MIN_REFRESH,
                                                self._engine.PollInterval())))
        except errors.GenericError:
            refresh = _MIN_REFRESH
        title = "Ganeti maintenance daemon"
        try:
            name = self._cluster_name()
        except errors.GenericError:
            name = ""
        if name:
            title += ": " + name
        body = [
            "<h1>%s</h1>" % _E(title),
            self._Summary(last_poll, current),
            "<h2>Nodes</h2>", self._Nodes(nodes, incidents),
            "<h2>Incidents</h2>", self._Incidents(incidents, jobs),
            "<h2>Current round</h2>",
            self._Rounds("current-round", [current] if current else [],
                         jobs, "No round is running."),
            "<h2>Last rounds</h2>",
            self._Rounds("last-rounds", last_rounds, jobs,
                         "No round finished yet."),
            "<h2>Jobs</h2>", self._Jobs(job_ids, jobs, incidents, rounds),
        ]
        page = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
            "<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"refresh\" content=\"%d\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n%s\n"
            "</body>\n</html>\n" % (refresh, _E(title), _STYLE,
                                    "\n".join(body)))
        return page.encode("utf-8")

    def _Summary(self, last_poll: float, current: dict | None) -> str:
        engine = self._engine
        items = [
            ("last-poll", "Last poll of the nodes",
             _Time(last_poll) or "not yet"),
            ("maintenance-interval", "Maintenance interval",
             "%g s" % engine.maintenance_interval),
            ("balancing", "Auto-balancing",
             "on" if engine.balance else "off"),
            ("balance-threshold", "Balancing threshold",
             "%g" % engine.balance_threshold),
            ("round", "Current round",
             "started %s" % _Time(current["started"]) if current
             else "none"),
        ]
        return '<dl id="summary">%s</dl>' % "".join(
            '<dt>%s</dt><dd id="%s">%s</dd>' % (_E(label), item_id,
                                                _E(value))
            for item_id, label, value in items)

    @staticmethod
    def _Nodes(nodes: list[dict], incidents: list[dict]) -> str:
        open_by_node: dict[str, list[str]] = {}
        for inc in incidents:
            open_by_node.setdefault(inc["node"], []).append(inc["id"])
        rows = []
        for node in sorted(nodes, key=lambda node: node["name"]):
            report = node.get("diagnose")
            if report is not None:
                status = report.get("status", "")
                details = _E(report.get("details"))
            else:
                status = "offline" if node["offline"] else "no report"
                details = ""
            rows.append(({"class": "node", "data-node": node["name"]}, [
                ("", _E(node["name"])),
                ("", "yes" if node["offline"] else "no"),
                (status, _E(status)),
                ("", "<pre>%s</pre>" % details if details else ""),
                ("", _E(", ".join(open_by_node.get(node["uuid"], [])))),
            ]))
        return _Table("nodes", ["Node", "Offline", "Diagnose", "Details",
                                "Incidents"], rows,
                      "No node polled yet.")

    @staticmethod
    def _Incidents(incidents: list[dict],
                   jobs: dict[int, tuple[str, str]]) -> str:
        rows = []
        for inc in sorted(incidents, key=lambda inc: (inc["node-name"],
                                                      inc["id"])):
            original = inc["original"]
            job_text = ", ".join(
                "%d (%s)" % (job, jobs.get(job, ("unknown", ""))[0])
                for job in inc["jobs"])
            rows.append(({"class": "incident", "data-incident": inc["id"]}, [
                ("", _E(inc["id"])),
                ("", _E(inc["node-name"])),
                (original.get("status", ""), _E(original.get("status"))),
                (inc["repair-status"], _E(inc["repair-status"])),
                ("", _E(inc.get("phase") or "")),
                ("", _E(job_text)),
                ("", _E(inc["tag"])),
                ("", "<pre>%s</pre>" % _E(original.get("details"))),
                ("", "<pre>%s</pre>" % _E(inc.get("repair-output", ""))),
            ]))
        return _Table("incidents", [
            "Id", "Node", "Reported", "Repair status", "Phase", "Jobs",
            "Tag", "Details", "Repair output"], rows, "No open incident.")

    @staticmethod
    def _Rounds(table_id: str, rounds: list[dict],
                jobs: dict[int, tuple[str, str]], empty: str) -> str:
        rows = []
        for rnd in rounds:
            kind = "balancing" if rnd.get("balancing") else "repair"
            rows.append(({"class": "round", "data-kind": kind}, [
                ("", _E(_Time(rnd.get("started")))),
                ("", _E(_Time(rnd.get("finished")))),
                ("", _E(kind)),
                ("", _E(", ".join(rnd.get("incidents", [])))),
                ("", _E(", ".join(
                    "%d (%s)" % (job, jobs.get(job, ("unknown", ""))[0])
                    for job in rnd.get("jobs", [])))),
            ]))
        return _Table(table_id, ["Started", "Finished", "Kind", "Incidents",
                                 "Jobs"], rows, empty)

    @staticmethod
    def _Jobs(job_ids: list[int], jobs: dict[int, tuple[str, str]],
              incidents: list[dict], rounds: list[dict]) -> str:
        purpose: dict[int, str] = {}
        for rnd in rounds:
            for job in rnd.get("balancing") or []:
                purpose[int(job)] = "balancing"
        for inc in incidents:
            for job in inc["jobs"]:
                purpose[int(job)] = "incident %s" % inc["id"]
        rows = []
        for job in job_ids:
            status, summary = jobs.get(job, ("unknown", ""))
            rows.append(({"class": "job", "data-job": str(job)}, [
                ("", str(job)),
                (status, _E(status)),
                ("", _E(summary)),
                ("", _E(purpose.get(job, ""))),
            ]))
        return _Table("jobs", ["Job", "Status", "Summary", "For"], rows,
                      "No job submitted.")


def _LuxiJobInfo(job_ids: list[int]) -> dict[int, tuple[str, str]]:
    """Job id -> (status, summary) from the master daemon; the jobs it
    can't tell about (archived, or no answer) are left out."""
    try:
        with luxi.Client(connect_timeout=_LUXI_TIMEOUT,
                         rw_timeout=_LUXI_TIMEOUT) as client:
            rows = client.QueryJobs(job_ids, ["id", "status", "summary"])
    except (errors.GenericError, OSError) as err:
        logging.warning("No job status for the status page: %s", err)
        return {}
    return {int(job_id): (status, "; ".join(summary or []))
            for job_id, status, summary in filter(None, rows)}
