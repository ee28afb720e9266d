"""Tests of gnt-job against a scripted master daemon.

The master is a real LUXI server (testutils_luxi) whose jobs are the job
queue's own QueuedJob objects, queried with the real query engine, so the
command sees the same data and field definitions as from ganeti-masterd.
"""

import pytest

from ganeti import cli, constants, errors, luxi, query, queryfields
from ganeti.client import gnt_job
from ganeti.jqueue import jobs as jqueue_jobs

import testutils_luxi

pytestmark = pytest.mark.integration

_T0 = [1700000000, 250000]
_T1 = [1700000001, 500000]
_T2 = [1700000003, 0]


def _Op(duration, status, result=None, log=(), stamps=(None, None, None)):
    return {"input": {"OP_ID": "OP_TEST_DELAY", "duration": duration,
                      "on_nodes": ["n1", "n2"]},
            "status": status, "result": result, "log": list(log),
            "priority": 0, "start_timestamp": stamps[0],
            "exec_timestamp": stamps[1], "end_timestamp": stamps[2]}


def _Job(job_id, ops, received=_T0, start=None, end=None):
    return jqueue_jobs.QueuedJob.Restore(None, {
        "id": job_id, "ops": ops, "received_timestamp": received,
        "start_timestamp": start, "end_timestamp": end})


class _Queue:
    """LUXI handler over a few jobs."""

    def __init__(self):
        self.jobs = {
            1: _Job(1, [_Op(1.0, "success",
                            log=[[1, _T1, "message", "slept 1s"]],
                            stamps=(_T1, _T1, _T2))],
                    start=_T1, end=_T2),
            2: _Job(2, [_Op(2.0, "running", stamps=(_T1, _T1, None))],
                    start=_T1),
            3: _Job(3, [_Op(3.0, "queued")]),
            4: _Job(4, [_Op(4.0, "error",
                            result=["OpExecError", ["boom"]])],
                    start=_T1, end=_T2),
        }
        self.calls = []

    def __call__(self, method, args):
        self.calls.append((method, args))
        if method == luxi.REQ_QUERY:
            what, fields, qfilter = args
            assert what == constants.QR_JOB
            return query.Query(queryfields.FIELDS[constants.QR_JOB],
                               [self.jobs[i] for i in sorted(self.jobs)],
                               fields, qfilter)
        if method == luxi.REQ_QUERY_FIELDS:
            return query.QueryFields(queryfields.FIELDS[constants.QR_JOB],
                                     args[1])
        if method == luxi.REQ_CANCEL_JOB:
            job_id, _ = args
            if job_id not in self.jobs:
                return [False, "Job %s not found" % job_id]
            return [True, "Job %s will be canceled" % job_id]
        if method == luxi.REQ_ARCHIVE_JOB:
            return args[0] in self.jobs
        if method == luxi.REQ_AUTO_ARCHIVE_JOBS:
            return [2, 1]
        if method == luxi.REQ_CHANGE_JOB_PRIORITY:
            return [True, "Priority of job %s changed" % args[0]]
        if method == luxi.REQ_WAIT_FOR_JOB_CHANGE:
            job_id, fields, _, prev_serial, _ = args
            job = self.jobs.get(job_id)
            if job is None:
                raise errors.JobLost("Job %s not found" % job_id)
            return [job.GetInfo(fields), job.GetLogEntries(prev_serial or 0)]
        if method == luxi.REQ_QUERY_JOBS:
            return [self.jobs[i].GetInfo(args[1]) for i in args[0]]
        raise errors.GenericError("Unexpected method %s" % method)


@pytest.fixture
def queue(tmp_path, monkeypatch):
    with testutils_luxi.ServeAsMaster(str(tmp_path), _Queue(),
                                      monkeypatch) as handler:
        yield handler


def _Run(*argv):
    return cli.GenericMain(gnt_job.commands, aliases=gnt_job.aliases,
                           argv=["gnt-job"] + list(argv))


def test_list_default(queue, capsys):
    assert _Run("list") == 0
    assert capsys.readouterr().out.splitlines() == [
        "ID Status  Summary",
        " 1 success TEST_DELAY(1.0)",
        " 2 running TEST_DELAY(2.0)",
        " 3 queued  TEST_DELAY(3.0)",
        " 4 error   TEST_DELAY(4.0)",
    ]


def test_list_fields_separator_and_filters(queue, capsys):
    assert _Run("list", "--no-headers", "--separator=|", "-o",
                "id,status", "2", "4") == 0
    assert capsys.readouterr().out.splitlines() == ["2|running", "4|error"]
    assert _Run("list", "-o", "+priority", "--running") == 0
    assert capsys.readouterr().out.splitlines() == [
        "ID Status  Summary         Priority",
        " 2 running TEST_DELAY(2.0)        0"]
    assert _Run("list", "--finished", "-o", "id", "--no-headers") == 0
    assert capsys.readouterr().out.split() == ["1", "4"]
    assert _Run("list", "--pending", "-o", "id", "--no-headers") == 0
    assert capsys.readouterr().out.split() == ["3"]


def test_list_archived_asks_for_the_archived_field(queue, capsys):
    """The master includes archived jobs when the query asks for the
    "archived" field: --archived adds it (once)."""
    assert _Run("list", "--archived", "--running") == 0
    assert capsys.readouterr().out.splitlines() == [
        "ID Status  Summary         Archived",
        " 2 running TEST_DELAY(2.0) N"]
    assert _Run("list", "--archived", "-o", "id,archived") == 0
    assert queue.calls[-1][1][1] == ["id", "archived"]


def test_list_filter_expression(queue, capsys):
    assert _Run("list", "--no-headers", "-o", "id",
                'status == "running" or id > 3') == 0
    assert capsys.readouterr().out.split() == ["2", "4"]
    assert _Run("list", "--no-headers", "-o", "id", "-F",
                "not archived") == 0
    assert capsys.readouterr().out.split() == ["1", "2", "3", "4"]
    assert _Run("list", "id ==") == 1
    assert "Error while parsing query filter" in capsys.readouterr().err


def test_list_unknown_field(queue, capsys):
    assert _Run("list", "-o", "id,nosuchfield") == \
        constants.EXIT_UNKNOWN_FIELD
    out = capsys.readouterr()
    assert "Warning: Queried for unknown fields nosuchfield" in out.err
    assert out.out.splitlines()[1] == " 1 ??"


def test_list_bad_job_id(queue, capsys):
    assert _Run("list", "abc", "def") == 1
    assert "Invalid job ID passed" in capsys.readouterr().err


def test_list_fields(queue, capsys):
    assert _Run("list-fields", "id", "status") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Name   Type   Title  Description",
        "id     Number ID     Job ID",
        "status Text   Status Job status"]


def test_info(queue, capsys):
    # A job that does not exist is an error, named on stderr
    assert _Run("info", "1", "99") == 1
    out, err = capsys.readouterr()
    assert err == "Job ID 99 not found\n"
    lines = out.splitlines()
    assert lines[0] == "- Job ID: 1"
    assert lines[1] == "  Status: success"
    assert lines[2] == "  Received:         %s" % cli.FormatTimestamp(_T0)
    assert lines[3] == "  Processing start: %s (delta 1.250000s)" % \
        cli.FormatTimestamp(_T1)
    assert lines[4] == "  Processing end:   %s (delta 1.500000s)" % \
        cli.FormatTimestamp(_T2)
    assert lines[5] == "  Total processing time: 2.750000 seconds"
    assert lines[6:] == [
        "  Opcodes:",
        "    - OP_TEST_DELAY",
        "      Status: success",
        "      Processing start: %s" % cli.FormatTimestamp(_T1),
        "      Execution start:  %s" % cli.FormatTimestamp(_T1),
        "      Processing end:   %s" % cli.FormatTimestamp(_T2),
        "      Input fields:",
        "        duration: 1.0",
        "        on_nodes: n1,n2",
        "      No output data",
        "      Execution log:",
        "        1:%s:message slept 1s" % cli.FormatTimestamp(_T1),
    ]
    assert _Run("info", "9999") == 1
    assert capsys.readouterr() == ("", "Job ID 9999 not found\n")
    # Jobs are separated by an empty line, missing ones leave no gap
    assert _Run("info", "99", "1", "4") == 1
    out = capsys.readouterr().out
    assert out.startswith("- Job ID: 1\n")
    assert "\n\n- Job ID: 4\n" in out


def test_info_failed_job(queue, capsys):
    assert _Run("show", "4") == 0
    out = capsys.readouterr().out
    assert "      Result:\n        OpExecError\n        [boom]\n" in out
    assert "  Processing start: %s (delta" % cli.FormatTimestamp(_T1) in out


def test_cancel(queue, capsys):
    assert _Run("cancel", "3") == 0
    assert capsys.readouterr().out == "Job 3 will be canceled\n"
    assert queue.calls[-1] == ("CancelJob", [3, False])
    assert _Run("cancel", "3", "77") == 1
    assert capsys.readouterr().out.splitlines()[-1] == "Job 77 not found"


def test_cancel_kill_needs_confirmation(queue, capsys):
    assert _Run("cancel", "--kill", "2") == 1
    assert "--yes-do-it" in capsys.readouterr().err
    assert not queue.calls
    assert _Run("cancel", "--kill", "--yes-do-it", "2") == 0
    assert queue.calls[-1] == ("CancelJob", [2, True])


def test_cancel_by_status(queue, capsys):
    assert _Run("cancel", "--pending", "--force") == 0
    assert [call for call in queue.calls if call[0] == "CancelJob"] == \
        [("CancelJob", [3, False])]
    assert _Run("cancel") == 1
    assert "Either a status filter or job ID(s)" in capsys.readouterr().err
    assert _Run("cancel", "--pending", "3") == 1


def test_archive_and_autoarchive(queue, capsys):
    assert _Run("archive", "1", "4") == 0
    assert _Run("archive", "1", "50") == 1
    assert "Failed to archive job with ID '50'" in capsys.readouterr().err
    assert _Run("autoarchive", "1d") == 0
    assert capsys.readouterr().out == "Archived 2 jobs, 1 unchecked left\n"
    assert queue.calls[-1] == ("AutoArchiveJobs",
                               [86400, constants.LUXI_WFJC_TIMEOUT])
    assert _Run("autoarchive", "all") == 0
    assert queue.calls[-1][1][0] == -1
    assert _Run("autoarchive", "soon") == 1


def test_change_priority(queue, capsys):
    assert _Run("change-priority", "--priority", "high", "3") == 0
    assert queue.calls[-1] == ("ChangeJobPriority",
                               [3, constants.OP_PRIO_HIGH])
    assert capsys.readouterr().out == "Priority of job 3 changed\n"
    assert _Run("change-priority", "3") == 1
    assert "--priority option must be given" in capsys.readouterr().err


def test_watch(queue, capsys):
    assert _Run("watch", "1") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["Output from job 1 follows",
                         "-------------------------"]
    assert lines[2].endswith(" slept 1s")
    assert _Run("watch", "4") == 1
    assert capsys.readouterr().err == \
        "Job 4 failed: Failure: command execution error:\nboom\n"
    assert _Run("watch", "123") == 1
    assert "Job 123 failed: Error checking job status" in \
        capsys.readouterr().err


def test_wait(queue, capsys):
    assert _Run("wait", "1") == 0
    assert capsys.readouterr().out == ""
    assert _Run("wait", "4") == 1
