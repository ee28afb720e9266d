"""Tests of gnt-debug against a scripted master daemon (testutils_luxi)."""

import pytest

from ganeti import cli, constants, errors, luxi, opcodes, serializer
from ganeti.client import gnt_debug

import testutils_luxi

pytestmark = pytest.mark.integration


class _Master:
    """Accepts jobs, which succeed at once, and answers lock queries."""

    def __init__(self):
        self.jobs = []
        self.locks = {"fields": [
            {"name": "name", "title": "Name", "kind": "text", "doc": ""},
            {"name": "mode", "title": "Mode", "kind": "other", "doc": ""},
            {"name": "owner", "title": "Owner", "kind": "other", "doc": ""},
            {"name": "pending", "title": "Pending", "kind": "other",
             "doc": ""}],
            "data": [
                [[0, "cluster/BGL"], [0, "shared"], [0, ["job1", "job2"]],
                 [0, [["exclusive", ["job3", "job4"]],
                      ["shared", ["job5"]]]]],
                [[0, "node/node1"], [0, None], [0, []], [0, []]],
            ]}

    def __call__(self, method, args):
        if method == luxi.REQ_SUBMIT_JOB:
            self.jobs.append(args[0])
            return len(self.jobs)
        if method == luxi.REQ_SUBMIT_MANY_JOBS:
            self.jobs.extend(args[0])
            return [[True, len(self.jobs) - i]
                    for i in reversed(range(len(args[0])))]
        if method == luxi.REQ_WAIT_FOR_JOB_CHANGE:
            return [["success"], []]
        if method == luxi.REQ_QUERY_JOBS:
            return [["success", ["success"] * len(self.jobs[i - 1]),
                     [None] * len(self.jobs[i - 1])] for i in args[0]]
        if method == luxi.REQ_QUERY:
            what, fields, _ = args
            assert what == constants.QR_LOCK
            names = [fdef["name"] for fdef in self.locks["fields"]]
            idx = [names.index(field) for field in fields]
            return {"fields": [self.locks["fields"][i] for i in idx],
                    "data": [[row[i] for i in idx]
                             for row in self.locks["data"]]}
        raise errors.GenericError("Unexpected method %s" % method)


@pytest.fixture
def master(tmp_path, monkeypatch):
    with testutils_luxi.ServeAsMaster(str(tmp_path), _Master(),
                                      monkeypatch) as handler:
        yield handler


def _Run(*argv):
    return cli.GenericMain(gnt_debug.commands, argv=["gnt-debug"] + list(argv))


def test_delay_defaults(master):
    assert _Run("delay", "1.5") == 0
    ((op, ), ) = master.jobs
    assert op["OP_ID"] == "OP_TEST_DELAY"
    assert (op["duration"], op["on_master"], op["on_nodes"], op["repeat"],
            op["interruptible"], op["no_locks"]) == \
        (1.5, True, [], 0, False, False)
    assert op["reason"][-1][:2] == ["gnt:client:gnt-debug", "delay"]
    opcodes.OpCode.LoadOpCode(op).Validate(False)


def test_delay_options(master):
    assert _Run("delay", "--no-master", "-n", "node1", "-n", "node2",
                "-r", "3", "--interruptible", "-l", "--priority", "low",
                "2") == 0
    ((op, ), ) = master.jobs
    assert (op["on_master"], op["on_nodes"], op["repeat"],
            op["interruptible"], op["no_locks"], op["priority"]) == \
        (False, ["node1", "node2"], 3, True, True, constants.OP_PRIO_LOW)
    assert _Run("delay", "--on-master", "1") == 0
    assert master.jobs[-1][0]["on_master"] is True


def test_delay_submit_only(master, capsys):
    assert _Run("delay", "--submit", "--print-jobid", "10") == 0
    out = capsys.readouterr()
    assert out.out == "1\n"
    assert out.err == "JobID: 1\n"


def test_delay_bad_arguments(master, capsys):
    assert _Run("delay", "soon") == 1
    assert "Invalid duration 'soon'" in capsys.readouterr().err
    assert _Run("delay", "-r", "-2", "1") == 2
    assert _Run("delay") == 1
    assert not master.jobs


def test_submit_job(master, tmp_path, capsys):
    ops = [{"OP_ID": "OP_TEST_DELAY", "duration": 0.1},
           {"OP_ID": "OP_TEST_DELAY", "duration": 0.2, "on_master": False}]
    fname = tmp_path / "ops.json"
    fname.write_text(serializer.DumpJson(ops))
    assert _Run("submit-job", "-v", "--job-repeat", "2", "--op-repeat", "2",
                str(fname)) == 0
    assert len(master.jobs) == 2
    assert [op["duration"] for op in master.jobs[0]] == [0.1, 0.2, 0.1, 0.2]
    assert all(op["reason"] for job in master.jobs for op in job)
    assert not any(op.get("dry_run") for job in master.jobs for op in job)
    assert "Submitted jobs 1, 2" in capsys.readouterr().out
    assert _Run("submit-job", "--dry-run", str(fname)) == 0
    assert all(op["dry_run"] for op in master.jobs[-1])


def test_submit_job_bad_file(master, tmp_path, capsys):
    fname = tmp_path / "bad.json"
    fname.write_text('{"OP_ID": "OP_TEST_DELAY"}')
    assert _Run("submit-job", str(fname)) == 1
    assert "must contain a list of opcode" in capsys.readouterr().err
    assert _Run("submit-job", str(tmp_path / "missing.json")) == 1
    assert not master.jobs


def test_locks(master, capsys):
    assert _Run("locks") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Name        Mode   Owner     Pending",
        "cluster/BGL shared job1,job2 exclusive:job3,job4, shared:job5",
        "node/node1  -      -         -",
    ]
    assert _Run("locks", "--no-headers", "--separator=|", "-o",
                "name,owner") == 0
    assert capsys.readouterr().out.splitlines() == [
        "cluster/BGL|job1,job2", "node/node1|-"]


# Against a real master daemon ------------------------------------------------

def test_test_jobqueue(two_node_cluster):
    """All of Ganeti's job queue checks pass against our master daemon."""
    out = two_node_cluster.Run("gnt-debug", "test-jobqueue").stdout
    for line in ("Testing job submission",
                 "Job submission tests were successful",
                 "Job dependency tests were successful",
                 "Testing job success", "Testing multiple successful opcodes",
                 "Testing job failure", "Testing partial job failure",
                 "Job queue test successful"):
        assert line + "\n" in out, line


def test_test_osparams(two_node_cluster):
    """The secret OS parameters reach the LU (which shows them), but not
    the job as stored or queried."""
    result = two_node_cluster.Run("gnt-debug", "test-osparams",
                                  "--os-parameters-secret",
                                  "pw=sesame,user=ali", "--print-jobid")
    job_id, log = result.stdout.split("\n", 1)
    assert log.rstrip().endswith(
        "Secret OS parameters: {'pw': 'sesame', 'user': 'ali'}")
    ((ops, ), ) = two_node_cluster.Luxi().QueryJobs([int(job_id)], ["ops"])
    assert ops[0]["osparams_secret"] == {"pw": constants.REDACTED,
                                         "user": constants.REDACTED}
    result = two_node_cluster.Run("gnt-debug", "test-osparams", check=False)
    assert result.returncode == constants.EXIT_FAILURE
    assert "Opcode needs secret parameters" in result.stderr
