"""LUs verifying the cluster: configuration, certificates and nodes.

OpClusterVerify only submits the jobs doing the work: one checking the
cluster-wide configuration (OpClusterVerifyConfig) and one per node group
(OpClusterVerifyGroup, in cluster_verify_group), which asks every node of
the group for versions, time and file checksums and compares the answers
with each other and with the master's own state. Findings go to the job
log in Ganeti's format; an LU's result is False when it found an error.
"""

import datetime
import time
from typing import Any, Callable

from ganeti import (constants, errors, locking, opcodes, pathutils,
                    utils, vcluster)
from ganeti.cmdlib.base import NoHooksLU, ResultWithJobs
from ganeti.utils import x509


def FormatFinding(ecode: tuple[str, str, str], item: str | None, msg: str,
                  severity: str, error_codes: bool) -> str:
    """One finding as Ganeti prints it in the job log.

    With ``error_codes`` the machine-readable form
    ``severity:code:kind:item:message`` (an item-less finding shows
    "None", as in Ganeti), else ``severity: kind item: message``.
    """
    kind, code, _ = ecode
    if error_codes:
        text = "%s:%s:%s:%s:%s" % (severity, code, kind, item, msg)
    else:
        text = "%s: %s%s: %s" % (severity, kind, " %s" % item if item else "",
                                 msg)
    return "  - %s" % text


def CheckSkippedChecks(checks: list[str]) -> None:
    """Refuse checks in skip_checks that can't be skipped."""
    unknown = sorted(set(checks) - constants.VERIFY_OPTIONAL_CHECKS)
    if unknown:
        raise errors.OpPrereqError(
            "Unknown or mandatory verification check(s): %s (optional: %s)"
            % (", ".join(unknown),
               ", ".join(sorted(constants.VERIFY_OPTIONAL_CHECKS))),
            errors.ECODE_INVAL)


def CheckIgnoredCodes(codes: list[str]) -> None:
    """Refuse unknown codes in ignore_errors (they would hide nothing)."""
    unknown = sorted(set(codes) - constants.CV_ALL_ECODES_STRINGS)
    if unknown:
        raise errors.OpPrereqError(
            "Unknown verification error code(s): %s (known: %s)" %
            (", ".join(unknown),
             ", ".join(sorted(constants.CV_ALL_ECODES_STRINGS))),
            errors.ECODE_INVAL)


def _FormatTime(value: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(value))


def VerifyCertificate(filename: str,
                      now: float | None = None) -> tuple[str | None, str]:
    """Check one of the cluster certificate files.

    Returns ``(severity, message)``: an error when the file can't be read
    or parsed, the certificate has expired or expires within
    SSL_CERT_EXPIRATION_ERROR days, a warning when it is not yet valid or
    expires within SSL_CERT_EXPIRATION_WARN days, else severity None (the
    message, shown only when simulating errors, says when it expires).
    The other nodes' clocks may be ahead by NODE_MAX_CLOCK_SKEW, so the
    check looks that far into the future.
    """
    vpath = vcluster.MakeVirtualPath(filename)
    try:
        pem = utils.ReadFile(filename, binary=True)
    except OSError as err:
        return constants.CV_ERROR, "Can't read '%s': %s" % (vpath, err)
    try:
        cert = x509.LoadCertificate(pem)
    except errors.X509CertError as err:
        return constants.CV_ERROR, ("Failed to load X509 certificate %s: %s"
                                    % (vpath, err.args[-1]))
    if now is None:
        now = time.time()
    now += constants.NODE_MAX_CLOCK_SKEW
    not_before = cert.not_valid_before_utc.timestamp()
    not_after = cert.not_valid_after_utc.timestamp()
    severity = None
    if not_after < now:
        severity = constants.CV_ERROR
        msg = "Certificate is expired (valid from %s to %s)" % (
            _FormatTime(not_before), _FormatTime(not_after))
    elif not_before > now:
        severity = constants.CV_WARNING
        msg = "Certificate not yet valid (valid from %s)" % \
            _FormatTime(not_before)
    else:
        remaining = datetime.timedelta(seconds=not_after - now).days
        msg = "Certificate expires in about %d days" % remaining
        if remaining <= constants.SSL_CERT_EXPIRATION_ERROR:
            severity = constants.CV_ERROR
        elif remaining <= constants.SSL_CERT_EXPIRATION_WARN:
            severity = constants.CV_WARNING
    return severity, "While verifying %s: %s" % (vpath, msg)


def CandidatePoolProblems(cfg: Any) -> list[str]:
    """Problems of the master candidate pool, in Ganeti's words.

    Ganeti's config.VerifyConfig reports these; the pool may fall short
    when nodes went offline or were drained while no other node could be
    promoted.
    """
    problems = []
    nodes = cfg.GetAllNodesInfo()
    master = nodes.get(cfg.GetMasterNode())
    if master is not None and not master.master_candidate:
        problems.append("Master node is not a master candidate")
    current, wanted, _ = cfg.GetMasterCandidateStats()
    if current < wanted:
        problems.append("Not enough master candidates: actual %d, target %d"
                        % (current, wanted))
    for node in sorted(nodes.values(), key=lambda n: n.name):
        if [node.master_candidate, node.drained, node.offline].count(True) > 1:
            problems.append("Node %s state is invalid: master_candidate=%s,"
                            " drain=%s, offline=%s" %
                            (node.name, node.master_candidate, node.drained,
                             node.offline))
    return problems


class _VerifyErrors:
    """Reporting of findings, shared by the verifying LUs.

    Expects ``self.op`` (error_codes, ignore_errors, debug_simulate_errors)
    and, during Exec, ``self._feedback_fn``; sets ``self.bad`` when an
    error (not a warning) was reported.
    """

    op: Any
    bad = False
    _feedback_fn: Callable[[str], None]

    def _Error(self, ecode: tuple[str, str, str], item: str | None,
               msg: str, *args: Any, code: str = constants.CV_ERROR) -> None:
        """Report a finding; codes in ignore_errors become warnings."""
        if ecode[1] in self.op.ignore_errors:
            code = constants.CV_WARNING
        if args:
            msg = msg % args
        self._feedback_fn(FormatFinding(ecode, item, msg, code,
                                        self.op.error_codes))
        if code == constants.CV_ERROR:
            self.bad = True

    def _ErrorIf(self, cond: Any, ecode: tuple[str, str, str],
                 item: str | None, msg: str, *args: Any,
                 code: str = constants.CV_ERROR) -> None:
        """Report a finding if ``cond`` holds (always when simulating)."""
        if bool(cond) or self.op.debug_simulate_errors:
            self._Error(ecode, item, msg, *args, code=code)


def _SetVerifyParams(op: opcodes.OpCode, source: Any) -> None:
    op.debug_simulate_errors = source.debug_simulate_errors
    op.error_codes = source.error_codes
    op.verbose = source.verbose


class LUClusterVerify(NoHooksLU):
    """Submit the jobs verifying the cluster.

    Without a group, the configuration job comes first and every group
    job depends on it, so the output keeps Ganeti's order.
    """

    REQ_BGL = False

    def CheckArguments(self) -> None:
        CheckIgnoredCodes(self.op.ignore_errors)
        CheckSkippedChecks(self.op.skip_checks)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        jobs: list[list[opcodes.OpCode]] = []
        if self.op.group_name:
            groups = [self.op.group_name]
        else:
            groups = list(self.cfg.GetAllNodeGroupsInfo())
            config_op = opcodes.OpClusterVerifyConfig(
                ignore_errors=self.op.ignore_errors)
            _SetVerifyParams(config_op, self.op)
            jobs.append([config_op])
        for group in groups:
            op = opcodes.OpClusterVerifyGroup(
                group_name=group, ignore_errors=self.op.ignore_errors,
                skip_checks=self.op.skip_checks,
                verify_clutter=self.op.verify_clutter)
            if not self.op.group_name:
                # Relative to this job: the configuration job is the first
                op.depends = [[-len(jobs), []]]
            _SetVerifyParams(op, self.op)
            jobs.append([op])
        return ResultWithJobs(jobs)


class LUClusterVerifyConfig(NoHooksLU, _VerifyErrors):
    """Verify the cluster-wide configuration and the certificates."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        CheckIgnoredCodes(self.op.ignore_errors)

    def ExpandNames(self) -> None:
        # Shared locks on everything: no operation is half done meanwhile
        self.needed_locks = dict.fromkeys(locking.LEVELS[1:],
                                          locking.ALL_SET)
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)

    def Exec(self, feedback_fn: Callable[[str], None]) -> bool:
        self.bad = False
        self._feedback_fn = feedback_fn

        feedback_fn("* Verifying cluster config")
        for msg in self.cfg.VerifyConfig() + CandidatePoolProblems(self.cfg):
            self._ErrorIf(True, constants.CV_ECLUSTERCFG, None, msg)

        feedback_fn("* Verifying cluster certificate files")
        for filename in (pathutils.NODED_CERT_FILE, pathutils.RAPI_CERT_FILE):
            severity, msg = VerifyCertificate(filename)
            self._ErrorIf(severity, constants.CV_ECLUSTERCERT, None, msg,
                          code=severity or constants.CV_ERROR)

        feedback_fn("* Verifying all nodes belong to an existing group")
        groups = self.cfg.GetAllNodeGroupsInfo()
        nodes = self.cfg.GetAllNodesInfo()
        instances = self.cfg.GetAllInstancesInfo().values()
        dangling = sorted((node for node in nodes.values()
                           if node.group not in groups),
                          key=lambda node: node.name)
        dangling_text = ", ".join(
            "%s (%s)" % (node.name, ", ".join(sorted(
                inst.name for inst in instances
                if inst.primary_node == node.uuid)))
            for node in dangling)
        self._ErrorIf(dangling, constants.CV_ECLUSTERDANGLINGNODES, None,
                      "the following nodes (and their instances) belong to a"
                      " non existing group: %s", dangling_text)
        homeless = sorted(inst.name for inst in instances
                          if inst.primary_node not in nodes)
        self._ErrorIf(homeless, constants.CV_ECLUSTERDANGLINGINST, None,
                      "the following instances have a non-existing"
                      " primary-node: %s", ", ".join(homeless))
        return not self.bad
