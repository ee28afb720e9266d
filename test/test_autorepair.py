"""harep's rules (ganeti.maintd.autorepair): tags, policy, detection.

The tag formats and rules are those of Ganeti's harep (its man page and
Ganeti 3.0's constants); the end-to-end runs of harep and of maintd
doing harep's duties are in test_maintd.py.
"""

from ganeti import constants, errors
from ganeti.maintd import autorepair

import pytest

P = constants.AUTO_REPAIR_TAG_PREFIX


def _Inst(tags=(), template=constants.DT_DRBD8, group_tags=(),
          cluster_tags=()):
    return autorepair.Instance("inst1", template, "node1", ["node2"],
                               list(tags), list(group_tags),
                               list(cluster_tags))


def test_state_tags_round_trip():
    data = autorepair.RepairData("fix-storage", "u1", 1700000000, (4, 7),
                                 None)
    assert data.tag == P + "pending:fix-storage:u1:1700000000:4+7"
    assert autorepair.ParseStateTag(data.tag) == data
    done = data._replace(result="success")
    assert done.tag == P + "result:fix-storage:u1:1700000000:success:4+7"
    assert autorepair.ParseStateTag(done.tag) == done
    for bad in (P + "pending:bogus:u1:1:2", P + "result:failover:u1:1:meh:2",
                P + "pending:failover:u1:notatime:2", P + "failover",
                "other"):
        assert autorepair.ParseStateTag(bad) is None


def test_policy_nearest_object_least_destructive():
    # The man page's example: I1 has failover, the cluster both
    # fix-storage and reinstall
    cluster = [P + "fix-storage", P + "reinstall"]
    policy = autorepair.EffectivePolicy([[P + "failover"], [], cluster], 0)
    assert policy == autorepair.Policy(False, kind="failover")
    policy = autorepair.EffectivePolicy([[], [], cluster], 0)
    assert policy == autorepair.Policy(False, kind="fix-storage")
    assert autorepair.EffectivePolicy([[], [], []], 0) is None
    # Suspensions: forever (with or without the colon), until a time
    # still to come; a past one does not count
    for tag in (P + "suspend:", P + "suspend"):
        assert autorepair.EffectivePolicy(
            [[tag, P + "reinstall"], [], []], 0).suspended
    assert autorepair.EffectivePolicy([[P + "suspend:200"], [], cluster],
                                      100) == autorepair.Policy(True,
                                                                until=200)
    assert autorepair.EffectivePolicy([[P + "suspend:50"], [], cluster],
                                      100).kind == "fix-storage"


def test_initial_state():
    pending = P + "pending:failover:u2:20:9"
    success = P + "result:failover:u1:10:success:8"
    state = autorepair.InitialState("inst1", [success, pending])
    assert (state.name, state.data.uuid, state.obsolete) == \
        (autorepair.PENDING, "u2", [success])
    failure = P + "result:failover:u0:5:failure:7"
    state = autorepair.InitialState("inst1", [success, failure, pending])
    assert (state.name, state.data.uuid) == (autorepair.FAILED, "u0")
    # The result of a repair wins over its own pending tag
    state = autorepair.InitialState(
        "inst1", [P + "pending:failover:u1:10:8", success])
    assert (state.name, state.data.result) == (autorepair.HEALTHY, "success")
    with pytest.raises(errors.AutoRepairError):
        autorepair.InitialState("inst1", [P + "pending:failover:u1:10:8",
                                          pending])


def test_detect_broken():
    def kind(template, pri, sec):
        found = autorepair.DetectBroken("i", template, pri, sec)
        return found and (found.kind, [op.OP_ID for op in found.ops])
    assert kind(constants.DT_DRBD8, False, True) == (
        "fix-storage", ["OP_INSTANCE_REPLACE_DISKS"])
    assert kind(constants.DT_DRBD8, True, False) == (
        "failover", ["OP_INSTANCE_FAILOVER"])
    assert kind(constants.DT_DRBD8, True, True) == (
        "reinstall", ["OP_INSTANCE_RECREATE_DISKS", "OP_INSTANCE_REINSTALL"])
    assert kind(constants.DT_PLAIN, True, False)[0] == "reinstall"
    assert kind(constants.DT_DRBD8, False, False) is None
    assert kind(constants.DT_FILE, True, False) is None


def test_plan_repairs_within_the_policy():
    offline = {"node2"}.__contains__
    plan = autorepair.PlanInstance(_Inst([P + "migrate"]), offline,
                                   lambda jobs: [], now=100)
    (action, ) = plan.actions
    assert plan.state == autorepair.PENDING
    assert action.repair.kind == "fix-storage"
    tag = action.PendingTag([42])
    assert tag.startswith(P + "pending:fix-storage:") and \
        tag.endswith(":100:42")
    # Beyond the policy: an enoperm result, once
    offline = {"node1"}.__contains__
    plan = autorepair.PlanInstance(_Inst([P + "fix-storage"]), offline,
                                   lambda jobs: [], now=100)
    (action, ) = plan.actions
    assert plan.state == autorepair.NEEDS_REPAIR
    assert action.repair is None and ":enoperm:" in action.add
    again = autorepair.PlanInstance(
        _Inst([P + "fix-storage", action.add]), offline, lambda jobs: [],
        now=200)
    assert again.actions == []
    # Not enabled, or suspended: nothing
    assert autorepair.PlanInstance(_Inst(), offline,
                                   lambda jobs: []).actions == []
    assert autorepair.PlanInstance(
        _Inst([P + "suspend"], cluster_tags=[P + "reinstall"]), offline,
        lambda jobs: []).actions == []


def test_plan_finishes_pending():
    pending = P + "pending:fix-storage:u1:10:5+6"
    online = set().__contains__
    running = autorepair.PlanInstance(
        _Inst([pending]), online, lambda jobs: ["success", "running"])
    assert (running.state, running.actions) == (autorepair.PENDING, [])
    done = autorepair.PlanInstance(_Inst([pending]), online,
                                   lambda jobs: ["success", "success"],
                                   now=50)
    (action, ) = done.actions
    assert action.add == P + "result:fix-storage:u1:50:success:5+6"
    assert action.remove == [pending]
    failed = autorepair.PlanInstance(_Inst([pending]), online,
                                     lambda jobs: ["success", None], now=50)
    assert failed.state == autorepair.FAILED
    assert ":failure:" in failed.actions[0].add
