"""Capacity calculation: hspace-compatible report of how many more
instances fit.

The cluster is read live from the master daemon as the built-in allocator
sees it (see ganeti.client.hbal); the allocations are simulated by
``ganeti.htools.capacity``, per allocatable node group. Without a spec
the group policy's standard spec is used, and the tiered run starts at
the policy's maximum spec. ``gnt-cluster capacity`` is this same command
with --memory/--disk/--vcpus for the spec.
"""

from optparse import OptionParser
from typing import Any

from ganeti import cli, constants, errors, utils
from ganeti.cli_opts import cli_option
from ganeti.client import hbal
from ganeti.htools import capacity
from ganeti.parameters import families

DISK_TEMPLATE_OPT = cli_option("--disk-template", dest="disk_template",
                               default=None, metavar="TEMPLATE",
                               help="Disk template of the instances (the"
                               " cluster's first enabled one by default)")
MEMORY_OPT = cli_option("--memory", dest="memory", type="unit",
                        default=None, metavar="SIZE",
                        help="Memory of an instance (default unit MiB)")
DISK_OPT = cli_option("--disk", dest="disk", type="unit", default=None,
                      metavar="SIZE",
                      help="Disk space of an instance (default unit MiB)")
VCPUS_OPT = cli_option("--vcpus", dest="vcpus", type="int", default=None,
                       metavar="N", help="Virtual CPUs of an instance")
TIERED_OPT = cli_option("--tiered-alloc", dest="tiered", default=False,
                        action="store_true",
                        help="Also report the tiered allocation: from the"
                        " policy's maximum spec down, shrinking the resource"
                        " that runs out")
STANDARD_ALLOC_OPT = cli_option(
    "--standard-alloc", dest="standard_alloc", default=None,
    metavar="DISK,RAM,CPU",
    help="Instance spec (disk and memory sizes, default unit MiB, and"
    " virtual CPUs); the policy's standard spec by default")

CAPACITY_OPTS = [MEMORY_OPT, DISK_OPT, VCPUS_OPT, DISK_TEMPLATE_OPT,
                 TIERED_OPT]

# The hbal-compatible report names of the resources that run out
_FAIL_NAMES = {"memory": "FailMem", "disk": "FailDisk", "vcpus": "FailCPU",
               "spindles": "FailSpindles", "none": "none"}


def _SpecText(spec: capacity.Spec) -> str:
    return "MEM %d, DSK %d, CPU %d" % (spec.memory, spec.disk, spec.vcpus)


def _FailText(result: capacity.GroupCapacity) -> str:
    if not result.failures:
        return "none"
    return "%s (%s)" % (_FAIL_NAMES.get(result.limit, result.limit),
                        ", ".join("%s: %d" % (_FAIL_NAMES.get(what, what),
                                              count)
                                  for what, count in
                                  sorted(result.failures.items())))


def _Spec(opts: Any, message: dict, template: str
          ) -> capacity.Spec | None:
    """The spec the options give (missing sizes from the cluster policy's
    standard spec), None for each group's own standard spec."""
    if opts.memory is None and opts.disk is None and opts.vcpus is None:
        return None
    std = message["ipolicy"][families.ISPECS_STD]
    return capacity.Spec(
        opts.memory if opts.memory is not None
        else int(std[families.ISPEC_MEM_SIZE]),
        opts.disk if opts.disk is not None
        else int(std[families.ISPEC_DISK_SIZE]),
        opts.vcpus if opts.vcpus is not None
        else int(std[families.ISPEC_CPU_COUNT]), template)


def ShowCapacity(opts: Any, args: list[str]) -> int:
    """Per allocatable group, how many more instances of a spec fit and
    which resource runs out first."""
    template = opts.disk_template
    if template is None:
        template = cli.GetClient().QueryClusterInfo()[
            "enabled_disk_templates"][0]
    if template not in constants.DISK_TEMPLATES:
        raise errors.OpPrereqError("Invalid disk template '%s'" % template,
                                   errors.ECODE_INVAL)
    message = hbal.ClusterMessage(opts, disk_template=template)
    cli.ToStdout("The cluster has %d nodes and %d instances.",
                 len(message["nodes"]), len(message["instances"]))
    spec = _Spec(opts, message, template)
    for result in capacity.Capacity(message, spec=spec, template=template):
        cli.ToStdout("Group %s:", result.group)
        cli.ToStdout("  Normal (fixed-size) instance spec is:")
        cli.ToStdout("    %s, using disk template '%s'.",
                     _SpecText(result.spec), result.spec.disk_template)
        cli.ToStdout("  Normal (fixed-size) allocation results:")
        cli.ToStdout("    - %3d instances allocated", result.instances)
        cli.ToStdout("    - most likely failure reason: %s",
                     _FailText(result))
    if opts.tiered:
        for group, steps in sorted(capacity.Tiered(message,
                                                   template).items()):
            cli.ToStdout("Group %s:", group)
            cli.ToStdout("  Tiered allocation results:")
            if not steps:
                cli.ToStdout("    - no instances allocated")
            for tspec, count in steps:
                cli.ToStdout("    - %3d instances of spec %s", count,
                             _SpecText(tspec))
    return constants.EXIT_SUCCESS


def _HSpace(opts: Any, args: list[str]) -> int:
    """hspace: --standard-alloc gives the spec; tiered always runs."""
    opts.memory = opts.disk = opts.vcpus = None
    if opts.standard_alloc is not None:
        parts = opts.standard_alloc.split(",")
        if len(parts) != 3:
            raise errors.OpPrereqError("Invalid --standard-alloc '%s':"
                                       " expected disk,ram,cpu" %
                                       opts.standard_alloc,
                                       errors.ECODE_INVAL)
        try:
            opts.disk = utils.ParseUnit(parts[0])
            opts.memory = utils.ParseUnit(parts[1])
            opts.vcpus = int(parts[2])
        except (errors.UnitParseError, ValueError) as err:
            raise errors.OpPrereqError("Invalid --standard-alloc '%s': %s" %
                                       (opts.standard_alloc, err),
                                       errors.ECODE_INVAL) from None
    opts.tiered = True
    return ShowCapacity(opts, args)


def Parser() -> OptionParser:
    return hbal.BuildParser(
        "%prog [options...]",
        "Reports, per node group, how many more instances of the standard"
        " spec (or --standard-alloc) fit and which resource runs out first,"
        " and the tiered allocation (see gnt-cluster capacity)",
        [STANDARD_ALLOC_OPT, DISK_TEMPLATE_OPT, hbal.LUXI_OPT])


def Main() -> int:
    return hbal.RunProgram(Parser(), _HSpace)
