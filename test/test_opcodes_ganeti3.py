"""Our opcodes against Ganeti 3.0's: every opcode, every parameter.

Ganeti's clients send every parameter of an opcode, so one missing here
makes their jobs fail as "unknown parameter"; these tests catch drift
from Ganeti's list (testutils_opcodes).
"""

import pytest

from ganeti import errors, ht, opcodes

from testutils_opcodes import GANETI_PARAMS, GanetiBody

# Our parameters Ganeti does not have, per opcode (our extensions)
OWN_PARAMS = {
    "OP_CLUSTER_SET_PARAMS": {"default_hypervisor",
                              "diagnose_data_collector_filename",
                              # maintd's settings (Ganeti's attic branch)
                              "maint_round_delay", "maint_balance",
                              "maint_balance_threshold",
                              "maint_balance_disk_moves",
                              "maint_balance_dynamic_load", "maint_harep",
                              # the deployer flow of Placement's spec
                              "placement_required_prefix",
                              "placement_default_forbidden_prefix"},
    "OP_INSTANCE_CREATE": {"explain", "member_of"},
    "OP_INSTANCE_FAILOVER": {"member_of"},
    "OP_INSTANCE_MIGRATE": {"member_of"},
    "OP_INSTANCE_MOVE": {"member_of"},
    "OP_NODE_EVACUATE": {"member_of"},
    "OP_NODE_ADD": {"join_key"},
    "OP_NODE_SET_PARAMS": {"add_aggregates", "remove_aggregates"},
    "OP_TEST_ALLOCATOR": {"explain"},
}
# Our opcodes Ganeti 3.0 does not have
OWN_OPCODES = {"OP_BACKUP_QUERY", "OP_CLUSTER_AGGREGATE_ADD",
               "OP_CLUSTER_AGGREGATE_QUERY", "OP_CLUSTER_AGGREGATE_REMOVE",
               "OP_CLUSTER_AGGREGATE_RENAME",
               # maintd's (OP_REPAIR_COMMAND as in Ganeti's attic branch)
               "OP_CLUSTER_REPAIR_CANCEL", "OP_REPAIR_COMMAND"}
# Parameters whose default differs: required in Ganeti but defaulted here,
# or "no change" given as None rather than an empty dict
OWN_DEFAULTS = {
    ("OP_BACKUP_PREPARE", "mode"),
    ("OP_INSTANCE_CREATE", "mode"),
    ("OP_INSTANCE_SET_PARAMS", "osparams"),
}


def _Params(op_id: str) -> dict:
    return {name: (default, check) for name, default, check, _ in
            opcodes.OP_MAPPING[op_id].GetAllParams()}


def test_the_same_opcodes():
    assert len(GANETI_PARAMS) == 75
    assert set(opcodes.OP_MAPPING) - set(GANETI_PARAMS) == OWN_OPCODES
    assert set(GANETI_PARAMS) <= set(opcodes.OP_MAPPING)


@pytest.mark.parametrize("op_id", sorted(GANETI_PARAMS))
def test_the_same_parameters(op_id):
    ours = _Params(op_id)
    assert set(ours) - set(GANETI_PARAMS[op_id]) == \
        OWN_PARAMS.get(op_id, set())
    assert set(GANETI_PARAMS[op_id]) <= set(ours)


@pytest.mark.parametrize("op_id", sorted(GANETI_PARAMS))
def test_ganeti_defaults_are_ours_and_valid(op_id):
    ours = _Params(op_id)
    for name, decl in GANETI_PARAMS[op_id].items():
        default, check = ours[name]
        if default is ht.NoDefault:
            # Ganeti's list gives required parameters as null
            assert decl["default"] is None, name
            continue
        if (op_id, name) in OWN_DEFAULTS:
            continue
        assert default == decl["default"], name
        assert check(decl["default"]), name


def _Load(op_id: str, **params) -> opcodes.OpCode:
    return opcodes.OpCode.LoadOpCode(GanetiBody(op_id, **params))


def test_unsupported_parameter_accepted_at_default_only():
    op = _Load("OP_INSTANCE_CREATE", instance_name="i1", disks=[], nics=[],
               mode="create")
    op.Validate(True)
    op.osparams_private = {}
    op.Validate(True)
    op.forthcoming = True
    with pytest.raises(errors.OpPrereqError) as err:
        op.Validate(True)
    assert err.value.args[1] == errors.ECODE_INVAL
    assert "OP_INSTANCE_CREATE.forthcoming" in str(err.value)
    assert "not supported" in str(err.value)


def test_unsupported_parameter_accepted_switched_off():
    """A missing feature may be switched off (what this cluster does):
    ``gnt-cluster modify --user-shutdown=no``, ``--no-lvm-storage``."""
    for name, value in (("enabled_user_shutdown", False), ("vg_name", ""),
                        ("prealloc_wipe_disks", False)):
        _Load("OP_CLUSTER_SET_PARAMS", **{name: value}).Validate(True)
    op = _Load("OP_CLUSTER_SET_PARAMS", enabled_user_shutdown=True)
    with pytest.raises(errors.OpPrereqError) as err:
        op.Validate(True)
    assert "OP_CLUSTER_SET_PARAMS.enabled_user_shutdown' is not supported" \
        " by this cluster; only its default (None or False) is accepted" \
        in str(err.value)


def test_unsupported_private_parameter_not_shown():
    op = _Load("OP_CLUSTER_SET_PARAMS",
               osparams_private_cluster={"debootstrap": {"pw": "hunter2"}})
    with pytest.raises(errors.OpPrereqError) as err:
        op.Validate(True)
    assert "osparams_private_cluster" in str(err.value)
    assert "hunter2" not in str(err.value)
    assert "hunter2" not in repr(op)
