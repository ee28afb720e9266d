"""The built-in allocator: every iallocator request type, and ``halloc``.

``Run`` answers an input message (protocol version 2) with the response
``{"success", "info", "result"}`` in the shapes of Ganeti's hail:

* ``allocate``, ``relocate``: the list of node names;
* ``allocate-secondary``: the node name;
* ``multi-allocate``: ``[[[instance, [nodes]], ...], [failed names]]``;
* ``node-evacuate``, ``change-group``: ``[moved, failed, jobs]``, where
  moved is ``[[instance, group name, [nodes]], ...]``, failed is
  ``[[instance, reason], ...]`` and jobs holds one list of opcode dicts
  per moved instance; ``success`` stays true when instances failed.

A request that cannot be satisfied is ``success: false`` with the reason
(hail's summary, ``FailMem: 3, FailDisk: 1``, and each node's first
failed check with needed and available values). A message that is not
an iallocator message raises ``errors.ParameterError``.

Our extensions of the message: each node's Placement aggregate UUIDs
(``aggregates``), their names (top-level ``aggregates``) and, in an
allocate, relocate, node-evacuate or change-group request, ``member_of``
(Placement's values, ANDed): nodes that fail it are no candidates
(``FailMemberOf``, ``excluded by member_of``); a node-evacuate or
change-group request may add values per instance (``instance_member_of``).
"""

import sys
from typing import Any

from ganeti import constants, errors, serializer
from ganeti.htools import evacuate, placement
from ganeti.htools.metrics import STDDEV_COMPONENTS, Score
from ganeti.htools.model import Cluster, Group, Instance, Node
from ganeti.placement.search import MemberOf

# Options (``--k=v`` on the command line, default_iallocator_params)
OPT_IGNORE_SOFT_ERRORS = "ignore-soft-errors"
OPT_RESTRICT = "restrict-allocation-to"
OPT_NO_CAPACITY = "no-capacity-checks"
# Ours: hail's whole global N+1 check (a failed node's plain, file and
# shared-storage primaries must find room in its group too). Off by
# default: like hail's it refuses every allocation on a one-node
# cluster with such instances (Ganeti issue #51)
OPT_FULL_CAPACITY = "full-capacity-checks"

# Candidates an explanation lists
EXPLAIN_TOP = 5

# Our extension key of allocate requests: Placement ``member_of`` values
# (aggregate UUIDs), ANDed; allocators that do not know it ignore it
REQ_MEMBER_OF = "member_of"
# And of node-evacuate and change-group requests: instance name -> further
# member_of values of that instance alone (the cluster's reservation
# defaults)
REQ_INSTANCE_MEMBER_OF = "instance_member_of"


def _Answer(success: bool, info: str, result: Any) -> dict:
    prefix = "Request successful: " if success else "Request failed: "
    return {"success": success, "info": prefix + info,
            "result": result if success else []}


def _Breakdown(score: Score, nodes: list) -> dict[str, float]:
    copy = score.Copy()
    copy.Update(nodes)
    return copy.Components()


def _Explain(cluster: Cluster, score: Score, inst: Instance,
             alloc: placement.Allocation) -> str:
    """The top candidates' scores and why the winner won."""
    lines = ["Cluster score before: %.8f" % score.Total()]
    for res in alloc.results:
        lines.append(res.Describe())
    chosen = alloc.chosen
    if chosen is None or chosen.best is None:
        lines.append("No candidate passed the checks.")
        return "\n".join(lines)
    if len(alloc.results) > 1:
        lines.append("Group %s chosen: alloc_policy %s comes first, then"
                     " the lower score" % (chosen.group.name,
                                           chosen.group.alloc_policy))
    lines.append("Top candidates in group %s (lower is better):" %
                 chosen.group.name)
    breakdowns = []
    for cand in chosen.candidates[:EXPLAIN_TOP]:
        nodes = [cluster.nodes[name] for name in cand.nodes]
        placement.Commit(cluster, score.Copy(), inst, list(cand.nodes))
        breakdowns.append(_Breakdown(score, nodes))
        _Uncommit(cluster, inst, list(cand.nodes))
        lines.append("  %-40s score %.8f" % ("/".join(cand.nodes),
                                              cand.score))
    win = chosen.candidates[0]
    if len(chosen.candidates) == 1:
        lines.append("Winner %s: the only candidate that passed the checks"
                     % "/".join(win.nodes))
    else:
        second = chosen.candidates[1]
        diffs = sorted(((breakdowns[1][name] - breakdowns[0][name], name)
                        for name in STDDEV_COMPONENTS + ("additive", )),
                       reverse=True)
        why = ", ".join("%s %.6f lower" % (name, diff)
                        for diff, name in diffs[:3] if diff > 1e-12)
        if win.score == second.score:
            why = "equal score, tried last (as hail)"
        lines.append("Winner %s beats %s by %.8f: %s" % (
            "/".join(win.nodes), "/".join(second.nodes),
            second.score - win.score, why or "equal components"))
    return "\n".join(lines)


def _Uncommit(cluster: Cluster, inst: Instance, nodes: list[str]) -> None:
    pnode = cluster.nodes[nodes[0]]
    if len(nodes) > 1:
        snode = cluster.nodes[nodes[1]]
        pnode.loc_score -= len(pnode.locations & snode.locations)
        snode.RemoveSec(inst, pnode.name)
    pnode.RemovePri(inst)
    inst.pnode = inst.snode = None
    del cluster.instances[inst.name]


class _Request:
    """One request on one cluster model."""

    def __init__(self, message: dict, options: dict[str, str]) -> None:
        self.cluster = Cluster(message)
        self.score = Score(list(self.cluster.nodes.values()))
        self.strict = OPT_IGNORE_SOFT_ERRORS not in options
        self.capacity = OPT_NO_CAPACITY not in options
        self.evacuate = OPT_FULL_CAPACITY in options
        restrict = options.get(OPT_RESTRICT)
        self.restrict = frozenset(restrict.split(",")) if restrict else None

    def _Required(self, inst: Instance, spec: dict) -> int:
        default = 2 if inst.internal_mirror else 1
        required = int(spec.get("required_nodes", default))
        if required not in (1, 2) or required != default:
            raise errors.ParameterError(
                "Invalid required_nodes %s for disk template %s" %
                (required, inst.template))
        return required

    @staticmethod
    def _MemberOf(spec: dict) -> MemberOf | None:
        values = spec.get(REQ_MEMBER_OF)
        if not values:
            return None
        try:
            return MemberOf(list(values))
        except errors.PlacementError as err:
            raise errors.ParameterError("Invalid %s: %s" %
                                        (REQ_MEMBER_OF, err.detail))

    def _Place(self, spec: dict) -> tuple[Instance, placement.Allocation]:
        inst = self.cluster.NewInstance(spec["name"], spec)
        restrict = self.restrict
        if restrict is None and spec.get("restrict-to-nodes"):
            restrict = frozenset(spec["restrict-to-nodes"])
        alloc = placement.Allocate(self.cluster, self.score, inst,
                                   self._Required(inst, spec),
                                   spec.get("group_name"), restrict,
                                   self.strict, capacity=self.capacity,
                                   member_of=self._MemberOf(spec),
                                   evacuate=self.evacuate)
        return inst, alloc

    def Allocate(self, req: dict, explain: bool) -> dict:
        inst, alloc = self._Place(req)
        answer = _Answer(bool(alloc.nodes), alloc.Info(), alloc.nodes)
        if explain:
            answer["explanation"] = _Explain(self.cluster, self.score, inst,
                                             alloc)
        return answer

    def MultiAllocate(self, req: dict) -> dict:
        done = []
        failed = []
        reasons = []
        for spec in req["instances"]:
            inst, alloc = self._Place(spec)
            if alloc.nodes:
                placement.Commit(self.cluster, self.score, inst, alloc.nodes)
                done.append([inst.name, alloc.nodes])
            else:
                failed.append(inst.name)
                reasons.append("%s: %s" % (inst.name, alloc.Info()))
        info = "allocated %d, failed %d" % (len(done), len(failed))
        if reasons:
            info += "; " + "; ".join(reasons)
        return _Answer(True, info, [done, failed])

    def _Instance(self, name: str) -> Instance:
        inst = self.cluster.instances.get(name)
        if inst is None or inst.pnode not in self.cluster.nodes:
            raise errors.ParameterError("Unknown instance %s or its primary"
                                        " node" % name)
        return inst

    def _Admitted(self, group: Group, targets: list[Node], req: dict
                  ) -> tuple[list[Node], str]:
        """The targets the request's ``member_of`` admits, and the text
        naming the constraint that excluded each other one (to append to
        a refusal)."""
        result = placement.GroupResult(group)
        kept = placement.CheckMemberOf(self.cluster, targets,
                                       self._MemberOf(req), result)
        excluded = "".join("; %s: %s" % item
                           for item in sorted(result.details.items()))
        return kept, excluded

    @staticmethod
    def _InstanceMemberOf(req: dict, name: str) -> dict:
        """The request's ``member_of`` with instance ``name``'s own
        values (``instance_member_of``) ANDed, as a request fragment."""
        own = req.get(REQ_INSTANCE_MEMBER_OF) or {}
        if not isinstance(own, dict):
            raise errors.ParameterError("Invalid %s: not an object" %
                                        REQ_INSTANCE_MEMBER_OF)
        return {REQ_MEMBER_OF: list(req.get(REQ_MEMBER_OF) or ()) +
                list(own.get(name) or ())}

    def Relocate(self, req: dict) -> dict:
        inst = self._Instance(req["name"])
        sources = list(req.get("relocate_from") or ())
        if int(req.get("required_nodes", 1)) != 1:
            return _Answer(False, "relocate needs required_nodes 1", [])
        if inst.internal_mirror:
            mode, expected = evacuate.CHANGE_SECONDARY, inst.snode
        else:
            mode, expected = evacuate.CHANGE_PRIMARY, inst.pnode
        if sources != [expected]:
            return _Answer(False, "relocate_from must be [%s] for instance"
                           " %s (disk template %s)" %
                           (expected, inst.name, inst.template), [])
        assert inst.pnode is not None
        group = self.cluster.nodes[inst.pnode].group
        targets, excluded = self._Admitted(
            group, evacuate.GroupTargets(self.cluster, group, set(sources)),
            req)
        score = Score(self.cluster.GroupNodes(group))
        try:
            plan = evacuate.PlanInstance(self.cluster, inst, mode, targets,
                                         score, self.strict)
        except evacuate.EvacError as err:
            return _Answer(False, str(err) + excluded, [])
        node = plan[-1].target
        return _Answer(True, "relocating %s to %s" % (inst.name, node),
                       [node])

    def NodeEvacuate(self, req: dict) -> dict:
        mode = req["evac_mode"]
        if mode not in constants.NODE_EVAC_MODES:
            raise errors.ParameterError("Invalid evac_mode %r" % mode)
        insts = [self._Instance(name) for name in req["instances"]]
        excluded = evacuate.EvacNodes(self.cluster, insts, mode)
        excluded.update(node.name for node in self.cluster.nodes.values()
                        if node.offline)
        scores: dict[str, Score] = {}
        moved = []
        failed = []
        for inst in insts:
            assert inst.pnode is not None
            group = self.cluster.nodes[inst.pnode].group
            if group.uuid not in scores:
                scores[group.uuid] = Score(self.cluster.GroupNodes(group))
            targets, not_admitted = self._Admitted(
                group, evacuate.GroupTargets(self.cluster, group,
                                             excluded | {inst.pnode}),
                self._InstanceMemberOf(req, inst.name))
            try:
                plan = evacuate.PlanInstance(self.cluster, inst, mode,
                                             targets, scores[group.uuid],
                                             self.strict)
            except evacuate.EvacError as err:
                failed.append((inst.name, str(err) + not_admitted))
                continue
            evacuate.Execute(self.cluster, plan, scores[group.uuid])
            moved.append((inst, plan))
        return self._EvacAnswer(moved, failed)

    def _EvacAnswer(self, moved: list, failed: list) -> dict:
        # hail's words, then (beyond hail) why each failed
        info = "%d instances failed to move and %d were moved successfully" \
            % (len(failed), len(moved))
        if failed:
            info += ": " + "; ".join("%s: %s" % item for item in failed)
        return _Answer(True, info,
                       evacuate.Result(self.cluster, moved, failed))

    def ChangeGroup(self, req: dict) -> dict:
        wanted = []
        for name in req.get("target_groups") or ():
            group = self.cluster.FindGroup(name)
            if group is None:
                raise errors.ParameterError("Unknown group %s" % name)
            wanted.append(group)
        moved = []
        failed = []
        for name in req["instances"]:
            inst = self._Instance(name)
            assert inst.pnode is not None
            current = self.cluster.nodes[inst.pnode].group
            groups = [group for group in (wanted or
                                          self.cluster.groups.values())
                      if group is not current]
            try:
                plan = self._ChangeGroupPlan(
                    inst, groups, self._InstanceMemberOf(req, name))
            except evacuate.EvacError as err:
                failed.append((inst.name, str(err)))
                continue
            evacuate.Execute(self.cluster, plan, self.score)
            moved.append((inst, plan))
        return self._EvacAnswer(moved, failed)

    def _ChangeGroupPlan(self, inst: Instance, groups: list,
                         member_of: dict) -> list:
        """The moves into the best of ``groups``, on nodes admitted by
        ``member_of`` (a request fragment) only."""
        required = 2 if inst.internal_mirror else 1
        results = [placement.TryGroup(self.cluster, self.score, group, inst,
                                      required, None, self.strict, keep=1,
                                      member_of=self._MemberOf(member_of))
                   for group in groups
                   if inst.networks <= group.networks]
        alloc = placement.Allocation(results, [])
        if alloc.chosen is None:
            raise evacuate.EvacError("No group can take the instance: %s" %
                                     alloc.Info())
        group = alloc.chosen.group
        targets, _ = self._Admitted(
            group, evacuate.GroupTargets(self.cluster, group, set()),
            member_of)
        score = Score(self.cluster.GroupNodes(group))
        return evacuate.PlanInstance(self.cluster, inst, evacuate.CHANGE_ALL,
                                     targets, score, self.strict, copy=True)

    def AllocateSecondary(self, req: dict) -> dict:
        inst = self._Instance(req["name"])
        if inst.snode is not None:
            return _Answer(False, "Instance %s already has a secondary" %
                           inst.name, [])
        assert inst.pnode is not None
        pnode = self.cluster.nodes[inst.pnode]
        template = inst.template
        inst.template = constants.DT_DRBD8
        result = placement.GroupResult(pnode.group)
        try:
            for snode in evacuate.GroupTargets(self.cluster, pnode.group,
                                               {pnode.name}):
                failure = snode.AddSec(inst, pnode.name, self.strict)
                if failure is not None:
                    result.fails[failure.mode] += 1
                    result.details.setdefault(snode.name, failure.text)
                    continue
                shared = len(pnode.locations & snode.locations)
                pnode.loc_score += shared
                result.candidates.append(placement.Candidate(
                    self.score.With([pnode, snode]), (snode.name, )))
                pnode.loc_score -= shared
                snode.RemoveSec(inst, pnode.name)
        finally:
            inst.template = template
        result.candidates.sort()
        best = result.best
        if best is None:
            return _Answer(False, "No valid allocation solutions, failure"
                           " reasons: %s; %s" % (result.FailSummary(),
                                                 result.DetailText()), [])
        return _Answer(True, result.Describe(), best.nodes[0])


def Run(message: dict, explain: bool = False,
        options: dict[str, str] | None = None) -> dict:
    """Answer one iallocator input message (protocol version 2).

    ``options`` are the allocator parameters (``--k=v``): currently
    ``ignore-soft-errors``, ``no-capacity-checks`` (no global N+1 check
    for allocations), ``full-capacity-checks`` (all of hail's global N+1
    check) and ``restrict-allocation-to`` (comma-separated node names).
    With ``explain`` an allocate answer gets the key ``explanation``.
    Raises errors.ParameterError on malformed input.
    """
    if not isinstance(message, dict) or \
            not isinstance(message.get("request"), dict):
        raise errors.ParameterError("The input message has no request")
    req = message["request"]
    handler = _Request(message, options or {})
    kind = req.get("type")
    try:
        if kind == constants.IALLOCATOR_MODE_ALLOC:
            return handler.Allocate(req, explain)
        if kind == constants.IALLOCATOR_MODE_MULTI_ALLOC:
            return handler.MultiAllocate(req)
        if kind == constants.IALLOCATOR_MODE_RELOC:
            return handler.Relocate(req)
        if kind == constants.IALLOCATOR_MODE_NODE_EVAC:
            return handler.NodeEvacuate(req)
        if kind == constants.IALLOCATOR_MODE_CHG_GROUP:
            return handler.ChangeGroup(req)
        if kind == constants.IALLOCATOR_MODE_ALLOCATE_SECONDARY:
            return handler.AllocateSecondary(req)
    except (KeyError, TypeError, ValueError) as err:
        raise errors.ParameterError("Invalid %s request: %s: %s" %
                                    (kind, err.__class__.__name__, err))
    raise errors.ParameterError("Unknown request type %r" % (kind, ))


_USAGE = """Usage: %(prog)s INPUTFILE [--explain] [--KEY[=VALUE] ...]

The built-in instance allocator: reads an iallocator input message
(protocol version 2) from INPUTFILE ("-" for stdin) and prints the JSON
response on stdout. Options: --explain (add the candidates' scores and
why the winner won), --ignore-soft-errors, --restrict-allocation-to=NODES,
--no-capacity-checks, --full-capacity-checks.
"""


def main(argv: list[str] | None = None) -> int:
    """The ``halloc`` program; exit 0 with an answer, 1 when the input
    cannot be read or parsed (message on stderr)."""
    args = list(sys.argv if argv is None else argv)
    prog = "halloc"
    explain = False
    options: dict[str, str] = {}
    files = []
    for arg in args[1:]:
        if arg in ("-h", "--help"):
            sys.stdout.write(_USAGE % {"prog": prog})
            return 0
        if arg == "--version":
            sys.stdout.write("%s (ganeti) %s\n" %
                             (prog, constants.RELEASE_VERSION))
            return 0
        if arg == "--explain":
            explain = True
        elif arg.startswith("--"):
            key, _, value = arg[2:].partition("=")
            options[key] = value
        else:
            files.append(arg)
    if len(files) != 1:
        sys.stderr.write(_USAGE % {"prog": prog})
        return 1
    try:
        if files[0] == "-":
            text = sys.stdin.read()
        else:
            with open(files[0], encoding="utf-8") as fobj:
                text = fobj.read()
        answer = Run(serializer.LoadJson(text), explain, options)
    except (OSError, UnicodeDecodeError) as err:
        sys.stderr.write("%s: cannot read %s: %s\n" % (prog, files[0], err))
        return 1
    except (errors.GenericError, ValueError) as err:
        sys.stderr.write("%s: invalid input in %s: %s\n" %
                         (prog, files[0], err))
        return 1
    sys.stdout.write(serializer.DumpJson(answer) + "\n")
    return 0
