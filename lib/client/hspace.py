"""Capacity calculation: hspace's report of how many more instances fit.

The cluster is read live from the master daemon as the built-in allocator
sees it (see ganeti.client.hbal); the allocations are simulated by
``ganeti.htools.capacity`` as Ganeti's hspace does them, and printed in
its human or ``--machine-readable`` (``HTS_*`` shell variables) format.
``gnt-cluster capacity`` is this same command with --memory/--disk/--vcpus
for the standard spec.
"""

import sys
from optparse import OptionParser
from typing import Any

from ganeti import cli, constants, errors, utils
from ganeti.cli_opts import cli_option
from ganeti.client import hbal
from ganeti.htools import capacity, display
from ganeti.htools.model import Cluster
from ganeti.parameters import families

DISK_TEMPLATE_OPT = cli_option("--disk-template", dest="disk_template",
                               default=None, metavar="TEMPLATE",
                               help="Disk template of the instances (the"
                               " cluster policy's first by default)")
MEMORY_OPT = cli_option("--memory", dest="memory", type="unit",
                        default=None, metavar="SIZE",
                        help="Memory of an instance (default unit MiB)")
DISK_OPT = cli_option("--disk", dest="disk", type="unit", default=None,
                      metavar="SIZE",
                      help="Disk space of an instance (default unit MiB)")
VCPUS_OPT = cli_option("--vcpus", dest="vcpus", type="int", default=None,
                       metavar="N", help="Virtual CPUs of an instance")
STANDARD_ALLOC_OPT = cli_option(
    "--standard-alloc", dest="standard_alloc", default=None,
    metavar="DISK,RAM,CPU",
    help="Instance spec of the standard allocation (disk and memory sizes,"
    " default unit MiB, and virtual CPUs); the policy's standard spec by"
    " default")
TIERED_ALLOC_OPT = cli_option(
    "--tiered-alloc", dest="tiered_alloc", default=None,
    metavar="DISK,RAM,CPU",
    help="Initial instance spec of the tiered allocation; the policy's"
    " maximum spec by default")
SPINDLE_USE_OPT = cli_option("--spindle-use", dest="spindle_use",
                             type="int", default=None, metavar="N",
                             help="Spindle use of the instances (the"
                             " policy's standard spec's by default)")
MACHINE_READABLE_OPT = cli_option(
    "--machine-readable", dest="machine_readable", default=False,
    action="store_true",
    help="Print HTS_* key=value lines (--machine-readable=yes|no too)")
NO_CAPACITY_CHECKS_OPT = cli_option(
    "--no-capacity-checks", dest="capacity", default=True,
    action="store_false",
    help="Only check N+1 redundancy of DRBD instances, not that every"
    " node's instances could be restarted elsewhere")
INDEPENDENT_GROUPS_OPT = cli_option(
    "--independent-groups", dest="independent_groups", default=False,
    action="store_true",
    help="Allocate in the other groups when a group has nodes failing N+1")
ACCEPT_EXISTING_OPT = cli_option(
    "--accept-existing-errors", dest="accept_existing", default=False,
    action="store_true",
    help="Allocate even in groups with nodes failing N+1")
MAX_LENGTH_OPT = cli_option("-l", "--max-length", dest="max_length",
                            type="int", default=-1, metavar="N",
                            help="Stop after N allocations (-1: no limit)")
VERBOSE_OPT = cli_option("-v", "--verbose", dest="verbose", default=0,
                         action="count", help="Accepted for hspace"
                         " compatibility")
QUIET_OPT = cli_option("-q", "--quiet", dest="quiet", default=0,
                       action="count", help="Accepted for hspace"
                       " compatibility")

_HSPACE_OPTS = [DISK_TEMPLATE_OPT, TIERED_ALLOC_OPT, SPINDLE_USE_OPT,
                MACHINE_READABLE_OPT, NO_CAPACITY_CHECKS_OPT,
                INDEPENDENT_GROUPS_OPT, ACCEPT_EXISTING_OPT, MAX_LENGTH_OPT]
CAPACITY_OPTS = [MEMORY_OPT, DISK_OPT, VCPUS_OPT] + _HSPACE_OPTS

# The machine-readable keys of hspace's cluster totals (``statsData``)
_STATS = (
    ("SCORE", lambda st: "%.8f" % st.score),
    ("INST_CNT", lambda st: "%d" % st.instances),
    ("MEM_FREE", lambda st: "%d" % st.f_mem),
    ("MEM_AVAIL", lambda st: "%d" % st.a_mem),
    ("MEM_RESVD", lambda st: "%d" % (st.f_mem - st.a_mem)),
    ("MEM_INST", lambda st: "%d" % st.i_mem),
    ("MEM_OVERHEAD", lambda st: "%d" % (st.x_mem + st.n_mem)),
    ("MEM_EFF", lambda st: display.FormatFloat("%.8f", st.mem_eff)),
    ("DSK_FREE", lambda st: "%d" % st.f_dsk),
    ("DSK_AVAIL", lambda st: "%d" % st.a_dsk),
    ("DSK_RESVD", lambda st: "%d" % (st.f_dsk - st.a_dsk)),
    ("DSK_INST", lambda st: "%d" % st.i_dsk),
    ("DSK_EFF", lambda st: display.FormatFloat("%.8f", st.dsk_eff)),
    ("SPN_FREE", lambda st: "%d" % st.f_spn),
    ("SPN_INST", lambda st: "%d" % st.i_spn),
    ("SPN_EFF", lambda st: display.FormatFloat("%.8f", st.spn_eff)),
    ("CPU_INST", lambda st: "%d" % st.i_cpu),
    ("CPU_EFF", lambda st: display.FormatFloat("%.8f", st.cpu_eff)),
    ("MNODE_MEM_AVAIL", lambda st: "%d" % st.m_mem),
    ("MNODE_DSK_AVAIL", lambda st: "%d" % st.m_dsk),
)


# The report's line before which -p prints the node list a run left
_RESULTS = (("Tiered allocation results:", "Tiered allocation"),
            ("Normal (fixed-size) allocation results:",
             "Standard allocation"))


def _Quoted(value: str) -> str:
    """A shell-safe value as hspace writes it (``ensureQuoted``)."""
    if all(char.isalnum() or char == "." for char in value):
        return value
    return "'%s'" % value


def _Keys(pairs: list[tuple[str, str]]) -> list[str]:
    return ["HTS_%s=%s" % (key.upper(), _Quoted(value))
            for key, value in pairs]


def _Stats(prefix: str, stats: capacity.Stats) -> list[tuple[str, str]]:
    return [("%s_%s" % (prefix, key), fn(stats)) for key, fn in _STATS]


def _SpecFields(spec: capacity.Spec, spindles: bool
                ) -> list[tuple[str, str]]:
    fields = [("MEM", "%d" % spec.memory), ("DSK", "%d" % spec.disk),
              ("CPU", "%d" % spec.vcpus)]
    if spindles:
        fields.append(("SPN", "%d" % spec.spindles))
    return fields


def _Resources(fields: list[tuple[str, str]]) -> str:
    return ", ".join("%s %s" % field for field in fields)


def _ClusterFields(stats: capacity.Stats, spindles: bool
                   ) -> list[tuple[str, str]]:
    fields = [("MEM", "%.0f" % stats.t_mem), ("DSK", "%.0f" % stats.t_dsk),
              ("CPU", "%.0f" % stats.t_cpu), ("VCPU", "%d" % stats.v_cpu)]
    if spindles:
        fields.append(("SPN", "%.0f" % stats.t_spn))
    return fields


def _SpecKeys(prefix: str, spec: capacity.Spec,
              template: str) -> list[tuple[str, str]]:
    required = 2 if template in constants.DTS_INT_MIRROR else 1
    return ([("%s_%s" % (prefix, key), value)
             for key, value in _SpecFields(spec, True)] +
            [("%s_RQN" % prefix, "%d" % required),
             ("%s_DISK_TEMPLATE" % prefix, template)])


def _AllocInfo(prefix: str, values: tuple[int, float, int, int, int]
               ) -> list[tuple[str, str]]:
    vcpus, ncpus, mem, dsk, spn = values
    return [("KM_%s_CPU" % prefix, "%d" % vcpus),
            ("KM_%s_NPU" % prefix, display.ShowDouble(ncpus)),
            ("KM_%s_MEM" % prefix, "%d" % mem),
            ("KM_%s_DSK" % prefix, "%d" % dsk),
            ("KM_%s_SPN" % prefix, "%d" % spn)]


def _AllocationDelta(ini: capacity.Stats, fin: capacity.Stats
                     ) -> list[tuple[str, str]]:
    """What was in use, what the tiered run allocated and what it left
    (``computeAllocationDelta``)."""
    return (_AllocInfo("USED", (ini.i_cpu, ini.n_cpu, ini.i_mem, ini.i_dsk,
                                ini.i_spn)) +
            _AllocInfo("POOL", (fin.i_cpu - ini.i_cpu, fin.n_cpu - ini.n_cpu,
                                fin.i_mem - ini.i_mem, fin.i_dsk - ini.i_dsk,
                                fin.i_spn - ini.i_spn)) +
            _AllocInfo("UNAV", (fin.v_cpu - fin.i_cpu, fin.t_cpu - fin.n_cpu,
                                int(fin.t_mem) - fin.i_mem,
                                int(fin.t_dsk) - fin.i_dsk,
                                int(fin.t_spn) - fin.i_spn)))


def MachineReadable(report: capacity.Report) -> list[str]:
    """hspace --machine-readable's lines."""
    ini = report.initial
    trl = capacity.ClusterStats(report.tiered.cluster)
    fin = capacity.ClusterStats(report.standard.cluster)
    pairs = [("CLUSTER_%s" % key, value)
             for key, value in _ClusterFields(ini, True)]
    pairs.append(("CLUSTER_NODES", "%d" % report.nodes))
    pairs += _Stats("INI", ini)
    pairs += _SpecKeys("TSPEC_INI", report.tiered_spec, report.template)
    pairs += _Stats("TRL", trl)
    pairs.append(("TSPEC", " ".join(
        "%d,%d,%d,%d=%d" % (spec.memory, spec.disk, spec.vcpus,
                            spec.spindles, count)
        for spec, count in report.tiered.SpecCounts())))
    pairs += _AllocationDelta(ini, trl)
    pairs += _SpecKeys("SPEC", report.standard_spec, report.template)
    allocated = len(report.standard.specs)
    pairs += _Stats("FIN", fin)
    pairs += [("ALLOC_USAGE", "%.8f" % (report.initial_instances /
                                        (report.initial_instances +
                                         allocated)
                                        if report.initial_instances +
                                        allocated else 0.0)),
              ("ALLOC_INSTANCES", "%d" % allocated),
              ("ALLOC_FAIL_REASON", report.standard.fails[0][0].upper())]
    pairs += [("ALLOC_%s_CNT" % mode, "%d" % count)
              for mode, count in report.standard.fails]
    pairs.append(("OK", "1"))
    return _Keys(pairs)


def _Results(ini: capacity.Stats, outcome: capacity.Outcome,
             spindles: bool) -> list[str]:
    """The failure reason, scores and efficiencies of a run."""
    fin = capacity.ClusterStats(outcome.cluster)
    lines = ["  - most likely failure reason: %s" % outcome.fails[0][0],
             "  - initial cluster score: %.8f" % ini.score,
             "  -   final cluster score: %.8f" % fin.score]
    effs = [("memory", fin.mem_eff), ("disk", fin.dsk_eff),
            ("vcpu", fin.cpu_eff)]
    if spindles:
        effs.append(("spindles", fin.spn_eff))
    width = max(len(name) for name, _ in effs)
    lines += ["  - %*s usage efficiency: %s%%" %
              (width, name, display.FormatFloat("%5.2f", eff * 100))
              for name, eff in effs]
    return lines


def HumanReadable(report: capacity.Report) -> list[str]:
    """hspace's human-readable report."""
    excl = report.exclusive_storage
    ini = report.initial
    count = report.initial_instances
    lines = ["The cluster has %d nodes and the following resources:" %
             report.nodes,
             "  %s." % _Resources(_ClusterFields(ini, excl)),
             "There are %s initial instances on the cluster." %
             (count if count > 0 else "no"),
             "Tiered (initial size) instance spec is:",
             "  %s, using disk template '%s'." % (
                 _Resources(_SpecFields(report.tiered_spec, excl)),
                 report.template),
             "Tiered allocation results:"]
    counts = report.tiered.SpecCounts()
    if not counts:
        lines.append("  - no instances allocated")
    lines += ["  - %3d instances of spec %s" %
              (number, _Resources(_SpecFields(spec, excl)))
              for spec, number in counts]
    lines += _Results(ini, report.tiered, excl)
    lines += ["Standard (fixed-size) instance spec is:",
              "  %s, using disk template '%s'." % (
                  _Resources(_SpecFields(report.standard_spec, excl)),
                  report.template),
              "Normal (fixed-size) allocation results:",
              "  - %3d instances allocated" % len(report.standard.specs)]
    lines += _Results(ini, report.standard, excl)
    return lines


def _ParseSpec(option: str, value: str) -> capacity.Spec:
    """hspace's disk,ram,cpu spec (sizes with units, default MiB)."""
    parts = value.split(",")
    if len(parts) != 3:
        raise errors.OpPrereqError("Invalid %s '%s': expected disk,ram,cpu"
                                   % (option, value), errors.ECODE_INVAL)
    try:
        return capacity.Spec(utils.ParseUnit(parts[1]),
                             utils.ParseUnit(parts[0]), int(parts[2]))
    except (errors.UnitParseError, ValueError) as err:
        raise errors.OpPrereqError("Invalid %s '%s': %s" %
                                   (option, value, err),
                                   errors.ECODE_INVAL) from None


def _StandardSpec(opts: Any, policy: dict) -> capacity.Spec | None:
    """The standard spec the options give: --standard-alloc, or
    --memory/--disk/--vcpus over the policy's standard spec."""
    if getattr(opts, "standard_alloc", None):
        return _ParseSpec("--standard-alloc", opts.standard_alloc)
    sizes = (getattr(opts, "memory", None), getattr(opts, "disk", None),
             getattr(opts, "vcpus", None))
    if sizes == (None, None, None):
        return None
    std = capacity.Spec.FromISpec(policy[families.ISPECS_STD])
    memory, disk, vcpus = (std[idx] if size is None else size
                           for idx, size in enumerate(sizes))
    return capacity.Spec(memory, disk, vcpus, std.spindles)


def ShowCapacity(opts: Any, args: list[str]) -> int:
    """How many more instances of the standard spec and of the tiered
    specs fit, and which resource runs out first (hspace)."""
    cl = hbal.Client(opts)
    policy = families.FillIPolicy(families.IPOLICY_DEFAULTS,
                                  cl.QueryClusterInfo()["ipolicy"])
    template = opts.disk_template or policy[families.IPOLICY_DTS][0]
    if template not in constants.DISK_TEMPLATES:
        raise errors.OpPrereqError("Invalid disk template '%s'" % template,
                                   errors.ECODE_INVAL)
    tiered = _ParseSpec("--tiered-alloc", opts.tiered_alloc) \
        if opts.tiered_alloc else None
    return PrintCapacity(opts, hbal.ClusterMessage(
        opts, disk_template=template, cl=cl), policy, template, tiered)


def PrintCapacity(opts: Any, cluster_message: dict, policy: dict,
                  template: str, tiered: capacity.Spec | None) -> int:
    """hspace's report on the cluster ``cluster_message`` describes (the
    storage figures of ``template``) under the cluster policy
    ``policy``."""
    message = hbal.ApplyNodeOptions(opts, cluster_message)
    if message is None:
        return constants.EXIT_FAILURE
    report = capacity.HSpace(
        message, template, _StandardSpec(opts, policy), tiered,
        opts.spindle_use, opts.capacity, opts.independent_groups,
        opts.accept_existing, opts.max_length)
    lines = MachineReadable(report) if opts.machine_readable \
        else HumanReadable(report)
    initial = Cluster(message)
    hbal.PrintNodes(opts, "Initial cluster", initial)
    # the node lists as hspace prints them among the human-readable
    # lines; before the machine-readable ones
    runs = {line: (title, outcome.cluster) for (line, title), outcome in
            zip(_RESULTS, (report.tiered, report.standard))}
    if opts.machine_readable:
        for title, cluster in runs.values():
            hbal.PrintNodes(opts, title, cluster, initial)
    for line in lines:
        if line in runs and not opts.machine_readable:
            hbal.PrintNodes(opts, runs[line][0], runs[line][1], initial)
        cli.ToStdout("%s", line)
    return constants.EXIT_SUCCESS


def Parser() -> OptionParser:
    return hbal.BuildParser(
        "%prog [options...]",
        "Reports how many more instances of the standard spec (or"
        " --standard-alloc) fit, the tiered allocation from the policy's"
        " maximum spec (or --tiered-alloc) down, and which resource runs"
        " out first (see gnt-cluster capacity)",
        [STANDARD_ALLOC_OPT] + _HSPACE_OPTS +
        [hbal.LUXI_OPT, VERBOSE_OPT, QUIET_OPT, hbal.PRINT_NODES_OPT,
         hbal.OFFLINE_OPT, hbal.MIN_DISK_OPT])


def _Arguments(argv: list[str]) -> list[str]:
    """hspace's ``--machine-readable=yes|no`` (an optional argument,
    which optparse lacks) as the flag or nothing."""
    result = []
    for arg in argv:
        prefix = "--machine-readable="
        if arg.startswith(prefix):
            if arg[len(prefix):].lower() not in ("yes", "no"):
                raise errors.OpPrereqError("Invalid %s" % arg,
                                           errors.ECODE_INVAL)
            if arg[len(prefix):].lower() == "no":
                continue
            arg = "--machine-readable"
        result.append(arg)
    return result


def Main() -> int:
    try:
        argv = _Arguments(sys.argv)
    except errors.OpPrereqError as err:
        cli.ToStderr("%s", err.args[0])
        return constants.EXIT_FAILURE
    return hbal.RunProgram(Parser(), ShowCapacity, argv)
