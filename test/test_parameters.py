"""The parameter layer: text conversion with units, legacy names, merging."""

import pytest

from ganeti import errors, objects
from ganeti.parameters import base, families, hypervisors
from ganeti.utils import text

pytestmark = pytest.mark.unit

BE = families.BE_PARAMETERS


@pytest.mark.parametrize("value,mib", [
    ("128", 128), ("128M", 128), ("1G", 1024), ("1.5g", 1536),
    ("2t", 2 * 1024 * 1024), ("130", 132), (256, 256)])
def test_memory_sizes_take_units(value, mib):
    assert base.ForceParamDict(BE, {"maxmem": value}, "backend") == \
        {"maxmem": mib}
    assert base.ForceParamDict(BE, {"minmem": value}, "backend") == \
        {"minmem": mib}


def test_legacy_memory_sets_minmem_and_maxmem():
    assert base.ForceParamDict(BE, {"memory": "128M"}, "backend") == \
        {"minmem": 128, "maxmem": 128}
    # The parameter under its own name wins
    assert base.ForceParamDict(BE, {"memory": "512", "maxmem": "1G"},
                               "backend") == {"minmem": 512, "maxmem": 1024}


@pytest.mark.parametrize("params,message", [
    ({"memory": "12X"},
     "Invalid value '12X' for backend parameter 'memory'"),
    ({"memory": -1}, "backend parameter 'memory' must be"),
    ({"maxmem": "lots"},
     "Invalid value 'lots' for backend parameter 'maxmem'"),
    ({"vcpus": "1G"}, "Invalid value '1G' for backend parameter 'vcpus'"),
    ({"mem": "1"}, "Unknown backend parameter 'mem'"),
])
def test_refusals_name_the_parameter_given(params, message):
    with pytest.raises(errors.OpPrereqError, match=message):
        base.ForceParamDict(BE, params, "backend")


def test_updated_params_with_legacy_name_and_resets():
    old = {"minmem": 64, "maxmem": 256, "vcpus": 2}
    assert base.GetUpdatedParams(old, {"memory": "1G"}, BE, "backend") == \
        {"minmem": 1024, "maxmem": 1024, "vcpus": 2}
    assert base.GetUpdatedParams(old, {"memory": "default"}, BE,
                                 "backend") == {"vcpus": 2}
    assert base.GetUpdatedParams(old, {"vcpus": None}, BE, "backend") == \
        {"minmem": 64, "maxmem": 256}
    with pytest.raises(errors.OpPrereqError, match="bogus"):
        base.GetUpdatedParams(old, {"bogus": "default"}, BE, "backend")


def test_override_params_legacy_name_overrides_what_it_stands_for():
    # An export's beparams under the old name, the user's under the new
    assert base.OverrideParams(BE, {"memory": 128, "vcpus": 2},
                               {"maxmem": "1G"}) == \
        {"minmem": 128, "maxmem": "1G", "vcpus": 2}
    # The user's legacy name replaces both of the export's sizes
    assert base.OverrideParams(BE, {"minmem": 64, "maxmem": 256},
                               {"memory": "512"}) == {"memory": "512"}


def test_legacy_name_is_never_stored():
    inst = objects.Instance(name="i", primary_node="n", hypervisor="fake",
                            uuid="u", beparams={"memory": 256})
    inst.UpgradeConfig()
    assert inst.beparams == {"minmem": 256, "maxmem": 256}
    cluster_be = {"default": {"memory": 512, "maxmem": 1024}}
    assert base.ExpandAliases(BE, cluster_be["default"]) == \
        {"minmem": 512, "maxmem": 1024}


def test_units_round_trip():
    assert text.ParseUnit("1.5G") == 1536
    assert text.FormatUnit(1536, "h") == "1.5G"
    with pytest.raises(errors.UnitParseError):
        text.ParseUnit("12X")


def test_hypervisor_tables_need_no_hypervisor_classes():
    assert hypervisors.HvDefaults("fake") == {"migration_mode": "live"}
    assert hypervisors.HvDefaults("xen-pvm") == {}
    assert hypervisors.UpdatedHvParams("fake", None, {}) == \
        {"migration_mode": "live"}
    with pytest.raises(errors.OpPrereqError, match="'xen-pvm'"):
        hypervisors.UpdatedHvParams("xen-pvm", None, {})
    with pytest.raises(errors.TypeEnforcementError, match="'cpu_mask'"):
        hypervisors.CheckHvParams("kvm", {"cpu_mask": "x"}, "instance")
