"""ganeti-maintd's status page on a virtual cluster, in a real browser.

The page is served at /status.html and at / to browsers (API clients
keep their JSON there); headless Chromium renders it, and its DOM shows
the nodes with their diagnose status, an incident with its progress,
the jobs maintd submitted with their status and the finished round;
whatever a diagnose command reports is shown as text, never as markup.
"""

import html.parser
import json
import os
import urllib.request

import pytest

from ganeti import constants, pathutils

from testutils_cluster import WaitFor
from testutils_instance import NODE1, NODE2, NODE3, InstanceCluster

pytestmark = pytest.mark.integration

_DIAG = "diag"
_BROWSER_ACCEPT = ("text/html,application/xhtml+xml,application/xml;q=0.9,"
                   "*/*;q=0.8")
# What a diagnose command may put in its opaque details
_MARKUP = "<script>document.title='owned'</script><b>sdb</b> & \"x\""


@pytest.fixture(scope="module")
def vc():
    """Three nodes running mond (diagnose every second) and maintd with
    no pause between rounds."""
    with InstanceCluster("--enabled-disk-templates=diskless",
                         file_paths=()) as cluster:
        cluster.Run("gnt-cluster", "modify", "--data-collector-interval",
                    "diagnose=1")
        for node in cluster.nodes.values():
            _WriteDiagnose(node, {"status": "Ok", "command": "",
                                  "details": None})
        cluster.Run("gnt-cluster", "modify",
                    "--diagnose-data-collector-filename", _DIAG,
                    "--maintenance-interval", "0")
        for node in cluster.nodes.values():
            node.Run("daemon-util", "start", "ganeti-mond")
        cluster.Run("daemon-util", "start", "ganeti-maintd")
        yield cluster


def _WriteDiagnose(node, result: dict) -> None:
    """The node's white-listed diagnose command prints ``result``."""
    directory = node.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, _DIAG)
    with open(path + ".tmp", "w", encoding="utf-8") as fobj:
        fobj.write("#!/bin/sh\ncat <<'EOF'\n%s\nEOF\n" % json.dumps(result))
    os.chmod(path + ".tmp", 0o755)
    os.rename(path + ".tmp", path)


def _Url(cluster, path: str) -> str:
    return "http://%s:%d%s" % (cluster.cluster_ip,
                               constants.DEFAULT_MAINTD_PORT, path)


def _Get(cluster, path: str, accept: str | None = None
         ) -> tuple[str, bytes]:
    """(content type, body) of a GET to maintd."""
    request = urllib.request.Request(_Url(cluster, path))
    if accept is not None:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.headers["Content-Type"], answer.read()




class _Page(html.parser.HTMLParser):
    """The parts of a page the tests look at: the data rows of the
    tables (their attributes and cell texts by table id), the elements by
    id, the script elements and the meta refresh."""

    def __init__(self, text: str):
        super().__init__()
        self.rows: dict[str, list[tuple[dict, list[str]]]] = {}
        self.ids: dict[str, str] = {}
        self.scripts = 0
        self.refresh: str | None = None
        self.title = ""
        self._table: str | None = None
        self._cells: list[str] | None = None
        self._text: list[str] | None = None
        self._id: str | None = None
        self._in_title = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts += 1
        elif tag == "meta" and attrs.get("http-equiv") == "refresh":
            self.refresh = attrs.get("content")
        elif tag == "title":
            self._in_title = True
        elif tag == "table":
            self._table = attrs.get("id")
        elif tag == "tr" and self._table and "class" in attrs:
            self._cells = []
            self.rows.setdefault(self._table, []).append((attrs,
                                                          self._cells))
        elif tag == "td" and self._cells is not None:
            self._text = []
        if "id" in attrs and tag != "table":
            self._id = attrs["id"]
            self.ids[self._id] = ""

    def handle_endtag(self, tag):
        if tag == "td" and self._text is not None:
            self._cells.append("".join(self._text).strip())
            self._text = None
        elif tag == "tr":
            self._cells = None
        elif tag == "table":
            self._table = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)
        if self._id is not None:
            self.ids[self._id] += data
            self._id = None
        if self._in_title:
            self.title += data

    def Cells(self, table: str, **attrs) -> list[str]:
        """The cells of the one row of ``table`` with these attributes
        (``data_node`` for data-node)."""
        want = {name.replace("_", "-"): value
                for name, value in attrs.items()}
        (cells, ) = [cells for row_attrs, cells in self.rows.get(table, [])
                     if all(row_attrs.get(name) == value
                            for name, value in want.items())]
        return cells


def test_page_for_browsers_json_for_the_api(vc):
    content_type, body = _Get(vc, "/status.html")
    assert content_type == "text/html; charset=utf-8"
    assert body.startswith(b"<!DOCTYPE html>")
    content_type, body = _Get(vc, "/", _BROWSER_ACCEPT)
    assert content_type == "text/html; charset=utf-8"
    # API clients: no Accept, */*, or JSON preferred
    for accept in (None, "*/*", "application/json",
                   "text/html;q=0.5, application/json"):
        content_type, body = _Get(vc, "/", accept)
        assert content_type == "application/json", accept
        assert json.loads(body) == [1]


def test_status_page_in_the_browser(vc, headless_browser, tmp_path):
    page = _Page(headless_browser.DumpDom(_Url(vc, "/")))
    assert page.title == "Ganeti maintenance daemon: %s" % vc.cluster_name
    assert page.scripts == 0
    assert page.refresh == "2"
    WaitFor(lambda: len(_Page(_Get(vc, "/status.html")[1].decode())
                      .rows.get("nodes", [])) == 3, 30, "the first poll")
    page = _Page(headless_browser.DumpDom(_Url(vc, "/")))
    for name in (NODE1, NODE2, NODE3):
        assert page.Cells("nodes", data_node=name)[:3] == [name, "no", "Ok"]
    assert page.ids["incidents-none"] == "No open incident."
    assert page.ids["balancing"] == "off"
    assert page.ids["maintenance-interval"] == "0 s"

    _WriteDiagnose(vc.nodes[NODE3], {"status": "evacuate", "command": "",
                                     "details": {"disk": _MARKUP}})
    (incident, ) = WaitFor(
        lambda: [inc for inc in json.loads(_Get(vc, "/1/status")[1])
                 if inc["repair-status"] == "completed"], 120,
        "the evacuation to complete")
    WaitFor(lambda: json.loads(_Get(vc, "/1/jobs")[1]) == [], 60,
          "the round's end")
    page = _Page(headless_browser.DumpDom(_Url(vc, "/")))
    # The markup of the details is text: no script ran, none is there
    assert page.scripts == 0
    assert page.title == "Ganeti maintenance daemon: %s" % vc.cluster_name
    details = json.dumps({"disk": _MARKUP}, separators=(",", ":"))
    node_cells = page.Cells("nodes", data_node=NODE3)
    assert node_cells == [NODE3, "yes", "evacuate", details, incident["id"]]
    cells = page.Cells("incidents", data_incident=incident["id"])
    assert cells[:5] == [incident["id"], NODE3, "evacuate", "completed",
                         "evacuated"]
    assert cells[5] == ", ".join("%d (success)" % job
                                 for job in incident["jobs"])
    assert cells[6] == incident["tag"]
    assert cells[7] == details
    for job in incident["jobs"]:
        status, summary, purpose = page.Cells("jobs", data_job=str(job))[1:]
        assert status == "success"
        assert summary
        assert purpose == "incident %s" % incident["id"]
    assert page.ids["current-round-none"] == "No round is running."
    (row, ) = page.rows["last-rounds"]
    assert row[0]["data-kind"] == "repair"
    assert row[1][3] == incident["id"]
    screenshot = tmp_path / "status.png"
    headless_browser.Screenshot(_Url(vc, "/status.html"), str(screenshot))
    with open(screenshot, "rb") as fobj:
        assert fobj.read(8) == b"\x89PNG\r\n\x1a\n"
