"""Parameter fields of the instance query, run in-process on a real config.

The query fills the hypervisor, backend and NIC parameters from defaults
it computes once per query; the values must be those of the cluster's
Fill* methods, at every level of overrides, and changing an answer must
not change the configuration.
"""

import pytest

from ganeti import constants, objects, opcodes

from testutils_cmdlib import MakeContext

_FIELDS = ["hvparams", "beparams", "hv/kernel_args", "hv/acpi",
           "hv/migration_mode", "be/maxmem", "be/vcpus", "vcpus",
           "nic.modes", "nic.links", "nic.bridges", "custom_hvparams",
           "custom_beparams"]


@pytest.fixture
def ctx(tmp_path):
    return MakeContext(tmp_path)


def _Query(ctx, fields):
    result = ctx.Run(opcodes.OpQuery(what=constants.QR_INSTANCE,
                                     fields=["name"] + fields, qfilter=None))
    return {row[0][1]: [value for _, value in row[1:]]
            for row in result["data"]}


def _Expected(ctx, name):
    cluster = ctx.cfg.GetClusterInfo()
    inst = ctx.cfg.GetInstanceInfo(ctx.cfg.ExpandInstanceName(name))
    hvp, bep = cluster.FillHV(inst), cluster.FillBE(inst)
    nics = [cluster.SimpleFillNIC(nic.nicparams) for nic in inst.nics]
    return [hvp, bep, hvp["kernel_args"], hvp["acpi"],
            hvp[objects.HV_MIGRATION_MODE], bep[objects.BE_MAXMEM],
            bep[objects.BE_VCPUS], bep[objects.BE_VCPUS],
            [nic[objects.NIC_MODE] for nic in nics],
            [nic[objects.NIC_LINK] for nic in nics],
            [nic[objects.NIC_LINK]
             if nic[objects.NIC_MODE] == objects.NIC_MODE_BRIDGED else None
             for nic in nics],
            inst.hvparams, inst.beparams]


def _Change(ctx, name, **attrs):
    inst = ctx.cfg.GetInstanceInfo(ctx.cfg.ExpandInstanceName(name))
    for attr, value in attrs.items():
        setattr(inst, attr, value)
    ctx.cfg.Update(inst)


def test_filled_parameters_are_the_clusters(ctx):
    master = ctx.cfg.GetMasterNode()
    cluster = ctx.cfg.GetClusterInfo()
    cluster.hvparams[constants.HT_KVM] = {
        "kernel_args": "cluster",
        objects.HV_MIGRATION_MODE: constants.HT_MIGRATION_NONLIVE}
    cluster.os_hvp = {"other": {constants.HT_KVM: {"kernel_args": "os"}}}
    cluster.beparams = {constants.PP_DEFAULT: {objects.BE_VCPUS: 2}}
    cluster.nicparams = {constants.PP_DEFAULT: {
        objects.NIC_MODE: objects.NIC_MODE_BRIDGED,
        objects.NIC_LINK: "br-default"}}
    ctx.cfg.Update(cluster)
    names = ("plain", "custom", "other-os", "custom-other-os")
    for name in names:
        ctx.AddInstance(name, master)
        _Change(ctx, name, hypervisor=constants.HT_KVM)
    _Change(ctx, "custom", hvparams={"acpi": False},
            beparams={objects.BE_MAXMEM: 512, objects.BE_MINMEM: 256},
            nics=[objects.NIC(mac="aa:00:00:00:00:01", nicparams={}),
                  objects.NIC(mac="aa:00:00:00:00:02", nicparams={
                      objects.NIC_MODE: objects.NIC_MODE_ROUTED,
                      objects.NIC_LINK: "rt1"})])
    _Change(ctx, "other-os", os="other")
    _Change(ctx, "custom-other-os", os="other",
            hvparams={"kernel_args": "instance"})

    rows = _Query(ctx, _FIELDS)
    for name in names:
        assert rows[name] == _Expected(ctx, name), name
    assert [rows[name][2] for name in names] == \
        ["cluster", "cluster", "os", "instance"]
    assert rows["custom"][3:8] == [False, constants.HT_MIGRATION_NONLIVE,
                                   512, 2, 2]
    assert rows["custom"][9:11] == [["br-default", "rt1"],
                                    ["br-default", None]]


def test_answers_do_not_share_dicts_with_the_config(ctx):
    ctx.AddInstance("inst1", ctx.cfg.GetMasterNode())
    _Change(ctx, "inst1", beparams={objects.BE_MAXMEM: 512},
            nics=[objects.NIC(mac="aa:00:00:00:00:01", nicparams={})])
    fields = ["hvparams", "beparams", "custom_beparams", "custom_nicparams"]
    hvp, bep, custom_bep, custom_nicp = _Query(ctx, fields)["inst1"]
    expected = [dict(hvp), dict(bep), dict(custom_bep),
                [dict(custom_nicp[0])]]
    hvp["new"] = bep["new"] = custom_bep["new"] = custom_nicp[0]["new"] = 1
    bep[objects.BE_MAXMEM] = custom_bep[objects.BE_MAXMEM] = 1
    assert _Query(ctx, fields)["inst1"] == expected


def test_ganetis_first_nic_aliases(ctx):
    """Ganeti's aliases of the first NIC's fields, ``nic_network`` too."""
    ctx.AddInstance("inst1", ctx.cfg.GetMasterNode())
    _Change(ctx, "inst1", nics=[objects.NIC(mac="aa:00:00:00:00:01",
                                            nicparams={})])
    result = ctx.Run(opcodes.OpQuery(what=constants.QR_INSTANCE,
                                     fields=["nic_network", "mac"],
                                     qfilter=None))
    assert [(field["title"], field["kind"]) for field in result["fields"]] \
        == [("NicNetwork/0", constants.QFT_TEXT),
            ("NicMAC/0", constants.QFT_TEXT)]
    assert result["data"] == [[[constants.RS_NORMAL, None],
                               [constants.RS_NORMAL, "aa:00:00:00:00:01"]]]
