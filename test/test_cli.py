"""Tests for ganeti.cli and ganeti.cli_opts.

Commands run through GenericMain in-process with a toy command table; the
job helpers talk to a scripted LUXI server over a real socket.
"""

import importlib
import io
import optparse
import time

import pytest

from ganeti import (cli, cli_opts, cli_output, constants, errors, ht, luxi,
                    opcodes)

import testutils_luxi

pytestmark = pytest.mark.integration


class _RaisingParser(optparse.OptionParser):
    def error(self, msg):
        raise ValueError(msg)


def _Parse(option, *argv):
    opts, _ = _RaisingParser(option_list=[option]).parse_args(list(argv))
    return opts


# Option types ----------------------------------------------------------------

def test_keyval():
    opts = _Parse(cli_opts.BACKEND_OPT, "-B",
                  "maxmem=512,vcpus=2,auto_balance,no_always_failover,"
                  "-spindle_use,path=a\\,b")
    assert opts.beparams == {"maxmem": "512", "vcpus": "2",
                             "auto_balance": True, "always_failover": False,
                             "spindle_use": None, "path": "a,b"}
    assert _Parse(cli_opts.BACKEND_OPT).beparams == {}
    assert _Parse(cli_opts.BACKEND_OPT, "-B", "").beparams == {}
    with pytest.raises(ValueError, match="Duplicate key"):
        _Parse(cli_opts.BACKEND_OPT, "-B", "a=1,a=2")


def test_split_key_val_without_prefixes():
    assert cli_opts.SplitKeyVal("-x", "a=1,b=c=d", False) == \
        {"a": "1", "b": "c=d"}
    with pytest.raises(errors.ParameterError, match="Missing value"):
        cli_opts.SplitKeyVal("-x", "a=1,flag", False)


def test_identkeyval():
    opts = _Parse(cli_opts.HYPERVISOR_OPT, "-H", "kvm:acpi=no,kernel_path")
    assert opts.hypervisor == ("kvm", {"acpi": "no", "kernel_path": True})
    opts = _Parse(cli_opts.DISK_OPT, "--disk", "0:size=10G",
                  "--disk", "1:size=512,mode=ro")
    assert opts.disks == [("0", {"size": "10G"}),
                          ("1", {"size": "512", "mode": "ro"})]
    assert _Parse(cli_opts.HYPERVISOR_OPT, "-H", "kvm").hypervisor == \
        ("kvm", {})
    assert _Parse(cli_opts.HYPERVISOR_OPT, "-H", "no_kvm").hypervisor == \
        ("kvm", False)
    assert _Parse(cli_opts.HYPERVISOR_OPT, "-H", "-kvm").hypervisor == \
        ("kvm", None)
    # A negative index is not a reset
    assert _Parse(cli_opts.DISK_OPT, "--disk", "-1:size=1G").disks == \
        [("-1", {"size": "1G"})]
    # Appending must not modify the shared default
    assert cli_opts.DISK_OPT.default == []
    assert _Parse(cli_opts.DISK_OPT).disks == []
    with pytest.raises(ValueError, match="Cannot pass options"):
        _Parse(cli_opts.HYPERVISOR_OPT, "-H", "no_kvm:acpi=no")
    with pytest.raises(ValueError, match="Cannot specify values"):
        _Parse(cli_opts.HYPERVISOR_OPT, "-H", "-kvm:acpi=no")


@pytest.mark.parametrize("text, mib", [
    ("512", 512), ("3", 4), ("10G", 10240), ("10g", 10240), ("1.5G", 1536),
    ("1t", 1024 * 1024), ("2TiB", 2 * 1024 * 1024), ("100 MB", 100),
    ("0.1", 4),
])
def test_parse_unit(text, mib):
    assert cli_opts.ParseUnit(text) == mib


@pytest.mark.parametrize("text", ["", "abc", "10X", "G", "1.2.3G"])
def test_parse_unit_invalid(text):
    with pytest.raises(errors.UnitParseError):
        cli_opts.ParseUnit(text)


def test_option_unit_bool_list_maybefloat():
    unit = cli_opts.cli_option("--size", type="unit", dest="size")
    assert _Parse(unit, "--size", "2G").size == 2048
    with pytest.raises(ValueError, match="invalid unit value"):
        _Parse(unit, "--size", "huge")
    flag = cli_opts.cli_option("--flag", type="bool", dest="flag")
    assert _Parse(flag, "--flag", "yes").flag is True
    assert _Parse(flag, "--flag", "False").flag is False
    with pytest.raises(ValueError, match="Invalid boolean value"):
        _Parse(flag, "--flag", "maybe")
    items = cli_opts.cli_option("--items", type="list", dest="items")
    assert _Parse(items, "--items", "a,b\\,c").items == ["a", "b,c"]
    timeout = cli_opts.cli_option("--tmo", type="maybefloat", dest="tmo")
    assert _Parse(timeout, "--tmo", "none").tmo is None
    assert _Parse(timeout, "--tmo", "1.5").tmo == 1.5


# Options derived from opcodes ------------------------------------------------

def test_opcode_option_types_and_help():
    delay = opcodes.OpTestDelay
    repeat = cli_opts.OpcodeOption(delay, "repeat", "-r", "--repeat")
    assert repeat.dest == "repeat"
    assert repeat.type == "int"
    assert repeat.default == 0
    assert repeat.help == "How many extra times to repeat the sleep"
    assert _Parse(repeat, "-r", "3").repeat == 3
    with pytest.raises(ValueError, match="non-negative integer"):
        _Parse(repeat, "-r", "-1")
    duration = cli_opts.OpcodeOption(delay, "duration", "--duration")
    assert duration.type == "float"
    assert duration.default is None
    assert _Parse(duration, "--duration", "2.5").duration == 2.5
    assert _Parse(duration, "--duration", "0").duration == 0
    with pytest.raises(ValueError, match="non-negative number"):
        _Parse(duration, "--duration", "-1")
    nodes = cli_opts.OpcodeOption(delay, "on_nodes", "--nodes")
    assert _Parse(nodes, "--nodes", "n1,n2").on_nodes == ["n1", "n2"]
    appended = cli_opts.OpcodeOption(delay, "on_nodes", "-n",
                                     action="append")
    assert _Parse(appended, "-n", "a", "-n", "b").on_nodes == ["a", "b"]
    assert _Parse(appended).on_nodes == []


def test_opcode_option_booleans():
    delay = opcodes.OpTestDelay
    no_master = cli_opts.OpcodeOption(delay, "on_master", "--no-on-master")
    assert no_master.action == "store_false"
    assert _Parse(no_master).on_master is True
    assert _Parse(no_master, "--no-on-master").on_master is False
    interruptible = cli_opts.OpcodeOption(delay, "interruptible", "-i")
    assert interruptible.action == "store_true"
    assert _Parse(interruptible, "-i").interruptible is True
    explicit = cli_opts.OpcodeOption(delay, "on_master", "--master",
                                     type="bool", action="store")
    assert _Parse(explicit, "--master", "no").on_master is False


def test_opcode_option_negated_help():
    create = opcodes.OpInstanceCreate
    assert cli_opts.OpcodeOption(create, "start", "--no-start").help == \
        "Do not start the instance after creation"
    # An explicit action negates too; an explicit help wins
    delay = opcodes.OpTestDelay
    assert cli_opts.OpcodeOption(delay, "on_master", "--off",
                                 action="store_false").help == \
        "Do not sleep on the master"
    assert cli_opts.OpcodeOption(delay, "on_master", "--no-on-master",
                                 help="Stay off").help == "Stay off"
    # A doc that does not read "Whether to ..." needs an explicit help
    with pytest.raises(errors.ProgrammerError, match="no_locks"):
        cli_opts.OpcodeOption(delay, "no_locks", "--locks",
                              action="store_false")


_CLIENTS = ["gnt_backup", "gnt_cluster", "gnt_debug", "gnt_filter",
            "gnt_group", "gnt_instance", "gnt_job", "gnt_network", "gnt_node",
            "gnt_os", "gnt_storage"]


@pytest.mark.parametrize("client", _CLIENTS)
def test_negative_options_help_is_negative(client):
    module = importlib.import_module("ganeti.client." + client)
    for name, (_, _, options, _, _) in module.commands.items():
        for option in options:
            if option.action != "store_false":
                continue
            # "--no-start: Whether to start the instance" was inverted
            assert not option.help.startswith("Whether"), (name, option)


def test_opcode_option_positive_flag_help():
    # "Whether to X" becomes the order "X"; other docs stay as they are
    assert cli_opts.IGNORE_IPOLICY_OPT.help == \
        "Ignore instance policy violations"
    reboot = opcodes.OpInstanceReboot
    assert cli_opts.OpcodeOption(reboot, "ignore_secondaries",
                                 "--ignore-secondaries").help == \
        "Start the instance even if its secondary disks fail"
    assert cli_opts.OpcodeOption(opcodes.OpInstanceStartup,
                                 "startup_paused", "--paused").help == \
        "Pause the instance at startup"


def _Decl(op_class, name):
    return {p[0]: p for p in op_class.GetAllParams()}[name]


def test_generic_options_come_from_the_declarations():
    _, default, _, doc = _Decl(opcodes.OpInstanceRemove, "shutdown_timeout")
    timeout = cli_opts.SHUTDOWN_TIMEOUT_OPT
    assert (timeout.default, timeout.type, timeout.help) == \
        (default, "int", doc) == (constants.DEFAULT_SHUTDOWN_TIMEOUT, "int",
                                  doc)
    with pytest.raises(ValueError, match="non-negative integer"):
        _Parse(timeout, "--shutdown-timeout", "-5")
    assert cli_opts.DRY_RUN_OPT.help == _Decl(opcodes.OpCode, "dry_run")[3]
    assert _Parse(cli_opts.DRY_RUN_OPT, "--dry-run").dry_run is True
    # --priority takes Ganeti's names and gives the opcode's numbers
    priority = cli_opts.PRIORITY_OPT
    assert priority.help == _Decl(opcodes.OpCode, "priority")[3]
    assert _Parse(priority).priority is None
    assert _Parse(priority, "--priority", "high").priority == \
        constants.OP_PRIO_HIGH
    with pytest.raises(ValueError, match="invalid priority 'urgent'"):
        _Parse(priority, "--priority", "urgent")


def test_reboot_type_option():
    from ganeti.client import gnt_instance
    option = gnt_instance.REBOOT_TYPE_OPT
    assert option.help == _Decl(opcodes.OpInstanceReboot, "reboot_type")[3]
    assert _Parse(option).reboot_type == constants.INSTANCE_REBOOT_HARD
    assert _Parse(option, "-t", "soft").reboot_type == "soft"
    with pytest.raises(ValueError, match="expected one of"):
        _Parse(option, "--type", "warm")


def test_params_options_list_their_keys():
    from ganeti.client import _cluster_params as gnt_cluster
    from ganeti.client import gnt_group, gnt_instance
    from ganeti.parameters import families, hypervisors
    backend = gnt_cluster.BEPARAMS_OPT
    assert backend._short_opts == ["-B"]
    assert backend._long_opts == ["--backend-parameters", "--defaults"]
    assert backend.help.startswith(
        _Decl(opcodes.OpClusterSetParams, "beparams")[3] + ". Keys: ")
    for key in families.BE_PARAMETERS:
        assert key in backend.help
    assert _Parse(backend, "-B", "vcpus=2").beparams == {"vcpus": "2"}
    # Per hypervisor, repeated; the cluster may set the global parameters
    hvparams = gnt_cluster.HVPARAMS_OPT
    assert "Keys for fake: migration_mode; for kvm: acpi," in hvparams.help
    assert _Parse(hvparams, "-H", "kvm:acpi=no", "-H", "fake").hvparams == \
        [("kvm", {"acpi": "no"}), ("fake", {})]
    # An instance may not: they are not offered
    instance_hv = gnt_instance.MODIFY_HVPARAMS_OPT
    assert instance_hv.type == "keyval"
    for key in hypervisors.HVC_GLOBALS:
        assert key not in instance_hv.help
    assert "for fake" not in instance_hv.help
    assert _Parse(cli_opts.HYPERVISOR_OPT, "-H", "kvm:acpi").hypervisor == \
        ("kvm", {"acpi": True})
    disk = gnt_group.DISKPARAMS_OPT
    assert (disk._short_opts, disk.metavar) == \
        (["-D"], "TEMPLATE:PARAM=VALUE,...")
    assert "for plain: stripes" in disk.help
    assert gnt_cluster.NICPARAMS_OPT._short_opts == ["-N"]


def test_opcode_option_objects_and_errors():
    setparams = opcodes.OpClusterSetParams
    beparams = cli_opts.OpcodeOption(setparams, "beparams", "-B")
    assert beparams.type == "keyval"
    assert _Parse(beparams, "-B", "a=1,b").beparams == {"a": "1", "b": True}
    with pytest.raises(errors.ProgrammerError):
        cli_opts.OpcodeOption(setparams, "no_such_param", "--x")


# Tables ----------------------------------------------------------------------

def test_generate_table_aligned():
    headers = {"name": "Name", "size": "Size", "os": "OS"}
    data = [["inst1", 128, "debian"], ["i2", 4096, "x"]]
    lines = cli.GenerateTable(headers, ["name", "size", "os"], None, data,
                              numfields=["size"])
    assert lines == ["Name  Size OS",
                     "inst1  128 debian",
                     "i2    4096 x"]


def test_generate_table_separator_units_and_no_headers():
    data = [["inst1", 1024, "x"], None]
    lines = cli.GenerateTable({"name": "Name", "mem": "Memory",
                               "os": "OS"},
                              ["name", "mem", "os"], "|", data,
                              unitfields=["mem"])
    assert lines == ["Name|Memory|OS", "inst1|1024|x", "-|-|-"]
    lines = cli.GenerateTable(None, ["name", "mem"], None,
                              [["a", 2048], ["bb", 100]],
                              numfields=["mem"], unitfields=["mem"])
    assert lines == ["a  2.0G", "bb 100M"]
    lines = cli.GenerateTable(None, ["name", "mem"], ":", [["a", 2048]],
                              unitfields=["mem"], units="g")
    assert lines == ["a:2.0"]
    # Field patterns are regular expressions matching whole names
    lines = cli.GenerateTable(None, ["disk.size/0"], None, [[1024]],
                              unitfields=[r"disk\.size/([0-9]+)"])
    assert lines == ["1.0G"]


def test_format_query_result():
    result = {
        "fields": [
            {"name": "name", "title": "Node", "kind": "text", "doc": ""},
            {"name": "mfree", "title": "MFree", "kind": "unit", "doc": ""},
            {"name": "master", "title": "IsMaster", "kind": "bool",
             "doc": ""},
        ],
        "data": [
            [[0, "node1"], [0, 2048], [0, True]],
            [[0, "node2"], [4, None], [0, False]],
        ],
    }
    status, lines = cli.FormatQueryResult(result, header=True)
    assert status == cli.QR_INCOMPLETE
    assert lines == ["Node  MFree IsMaster",
                     "node1  2.0G Y",
                     "node2     * N"]
    _, lines = cli.FormatQueryResult(result, separator=",", verbose=True,
                                     format_override={
                                         "name": (str.upper, False)})
    assert lines == ["NODE1,2048,Y", "NODE2,(offline),N"]


# Messages and parsing helpers ------------------------------------------------

@pytest.mark.parametrize("err, code, text", [
    (errors.OpPrereqError("Instance x not found", errors.ECODE_NOENT), 1,
     "Failure: prerequisites not met for this operation:\n"
     "error type: unknown_entity, error details:\nInstance x not found"),
    (errors.OpPrereqError("bad"), 1,
     "Failure: prerequisites not met for this operation:\nbad"),
    (errors.OpExecError("disk failed"), 1,
     "Failure: command execution error:\ndisk failed"),
    (errors.NoMasterError("/x"), 1,
     "Cannot communicate with the master daemon.\n"
     "Is it running and listening for connections?"),
    (errors.JobQueueDrainError("drained"), 1,
     "Failure: the job queue is marked for drain and doesn't accept new"
     " requests"),
    (errors.TagError("too long"), 1,
     "Failure: invalid tag(s) given:\ntoo long"),
    (errors.JobLost("Job 3 lost"), 1,
     "Error checking job status: Job 3 lost"),
    (errors.ConnectionClosedError("gone"), 1,
     "Unhandled protocol error while talking to the master daemon:\ngone"),
    (errors.HypervisorError("kvm broke"), 1,
     "Unhandled Ganeti error: kvm broke"),
    (errors.JobSubmittedException(17), 0, "JobID: 17"),
    (errors.ConfigurationError("bad"), 2,
     "Corrupt configuration file: bad\nAborting."),
    (KeyError("x"), 1, "Unhandled exception: 'x'"),
])
def test_format_error(err, code, text):
    assert cli.FormatError(err) == (code, text)


def test_parse_timespec():
    assert cli.ParseTimespec("30") == 30
    assert cli.ParseTimespec("30s") == 30
    assert cli.ParseTimespec("30m") == 1800
    assert cli.ParseTimespec("2h") == 7200
    assert cli.ParseTimespec("1d") == 86400
    assert cli.ParseTimespec("1w") == 604800
    for bad in ("", "d", "1x", "abc"):
        with pytest.raises(errors.OpPrereqError):
            cli.ParseTimespec(bad)


def test_parse_fields():
    assert cli.ParseFields(None, ["a", "b"]) == ["a", "b"]
    assert cli.ParseFields("c,d", ["a"]) == ["c", "d"]
    assert cli.ParseFields("+c,d", ["a"]) == ["a", "c", "d"]


def test_format_timestamp():
    stamp = time.mktime((2026, 1, 2, 3, 4, 5, 0, 0, -1))
    assert cli.FormatTimestamp([int(stamp), 42]) == \
        "2026-01-02 03:04:05.000042"
    assert cli.FormatTimestamp(None) == "?"
    assert cli.FormatTimestamp([1]) == "?"
    assert cli.FormatTime(None) == "N/A"


def test_ask_user():
    choices = [("y", True, "yes"), ("n", False, "no")]
    out = io.StringIO()
    assert cli_output._AskUserOn(io.StringIO("maybe\n?\ny\n"), out,
                                 "Really?", choices) is True
    text = out.getvalue()
    assert text.count("Really?\ny/[n]/?: ") == 3
    assert " n - no" in text
    assert cli_output._AskUserOn(io.StringIO("N\n"), out, "Q",
                                 choices) is False
    # End of input or just Enter: the default (last) answer
    assert cli_output._AskUserOn(io.StringIO(""), out, "Q", choices) is False
    assert cli_output._AskUserOn(io.StringIO("\n"), out, "Q",
                                 list(reversed(choices))) is True
    with pytest.raises(errors.ProgrammerError):
        cli.AskUser("Q", choices=[("?", 1, "bad")])


# GenericMain -----------------------------------------------------------------

class _Toy:
    """A command table recording what the commands saw."""

    def __init__(self):
        self.calls = []
        repeat = cli_opts.cli_option("--count", type="int", dest="count",
                                     default=1)
        self.commands = {
            "none": (self._Record, [], [], "", "Takes no arguments"),
            "one": (self._Record, [cli_opts.ArgNode(min=1, max=1)], [repeat],
                    "<node>", "Takes exactly one node"),
            "some": (self._Record,
                     [cli_opts.ArgNode(min=1, max=1),
                      cli_opts.ArgInstance(min=0, max=2)],
                     [], "<node> [<instance>...]", "One node, up to 2"),
            "many": (self._Record, [cli_opts.ArgUnknown(min=2)],
                     [cli_opts.SEP_OPT], "<x> <y>...", "At least two"),
            "list": (self._Record, [cli_opts.ArgUnknown()],
                     [cli_opts.SEP_OPT, cli_opts.NOHDR_OPT], "[<x>...]",
                     "Lists things"),
            "exec": (self._Record, [cli_opts.ArgCommand(min=1)], [],
                     "<command>", "Runs a command"),
            "fail": (self._Fail, [], [], "", "Fails"),
            "submit": (self._Submit, [],
                       [cli_opts.PRIORITY_OPT, cli_opts.DRY_RUN_OPT], "",
                       "Builds an opcode"),
        }
        self.op = None

    def _Record(self, opts, args):
        self.calls.append((opts, args))
        return 3 if args == ["three"] else 0

    @staticmethod
    def _Fail(opts, args):
        raise errors.OpPrereqError("it broke", errors.ECODE_STATE)

    def _Submit(self, opts, args):
        self.op = opcodes.OpTestDelay(duration=1.0)
        cli.SetGenericOpcodeOpts([self.op], opts)
        return 0

    def Main(self, *argv, **kwargs):
        return cli.GenericMain(self.commands, argv=["gnt-toy"] + list(argv),
                               **kwargs)


@pytest.fixture
def toy():
    return _Toy()


def test_main_usage_and_version(toy, capsys):
    assert toy.Main("--help") == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: gnt-toy {command} [options...]")
    assert " none   - Takes no arguments" in out
    assert toy.Main("-h") == 0
    capsys.readouterr()
    assert toy.Main() == 1
    assert "Usage:" in capsys.readouterr().out
    assert toy.Main("no-such-command") == 1
    out, err = capsys.readouterr()
    assert "Usage:" in out
    assert err == "Error: Unknown command 'no-such-command'\n"
    assert toy.Main("--version") == 0
    assert capsys.readouterr().out == "gnt-toy (ganeti) %s\n" % \
        constants.RELEASE_VERSION
    assert not toy.calls


def test_main_subcommand_help_and_usage_errors(toy, capsys):
    assert toy.Main("one", "--help") == 0
    out = capsys.readouterr().out
    assert "gnt-toy one <node>" in out
    assert "--debug" in out and "--reason" in out
    assert toy.Main("one", "--no-such-option", "n1") == 2
    assert "no such option" in capsys.readouterr().err
    assert toy.Main("one", "--count", "abc", "n1") == 2
    assert not toy.calls


@pytest.mark.parametrize("argv, message", [
    (["none", "x"], "Error: Command none expects no arguments"),
    (["one"], "Error: Command one expects 1 argument(s)"),
    (["one", "a", "b"], "Error: Command one expects 1 argument(s)"),
    (["some"], "Error: Command some expects at least 1 argument(s)"),
    (["some", "n", "a", "b", "c"],
     "Error: Command some expects only 3 argument(s)"),
    (["many", "x"], "Error: Command many expects at least 2 argument(s)"),
])
def test_main_argument_counts(toy, capsys, argv, message):
    assert toy.Main(*argv) == 1
    assert capsys.readouterr().err.strip() == message
    assert not toy.calls


def test_main_runs_commands(toy, capsys):
    assert toy.Main("some", "n1", "i1", "i2") == 0
    assert toy.Main("one", "three") == 3
    assert toy.Main("many", "--separator=:", "a", "b", "c") == 0
    opts, args = toy.calls[-1]
    assert (opts.separator, args) == (":", ["a", "b", "c"])
    # Options may follow arguments, except after a command argument
    assert toy.Main("one", "n1", "--count", "5") == 0
    assert toy.calls[-1][0].count == 5
    assert toy.Main("exec", "ls", "-l", "--debug") == 0
    opts, args = toy.calls[-1]
    assert args == ["ls", "-l", "--debug"]
    assert opts.debug == 0


def test_main_common_options_and_override(toy):
    assert toy.Main("none", "-d", "-d", "--reason", "why",
                    override={"tag_type": "node"}) == 0
    opts, _ = toy.calls[-1]
    assert (opts.debug, opts.reason, opts.tag_type) == (2, "why", "node")


def test_main_aliases_and_env_override(toy, monkeypatch):
    assert toy.Main("ls", "a", aliases={"ls": "list"}) == 0
    assert toy.calls[-1][1] == ["a"]
    monkeypatch.setenv("GNT_TOY_LIST", "--separator=, --no-headers")
    assert toy.Main("list", "x", env_override=["list"]) == 0
    opts, args = toy.calls[-1]
    assert (opts.separator, opts.no_headers, args) == (",", True, ["x"])
    # Only for the subcommands named in env_override
    monkeypatch.setenv("GNT_TOY_MANY", "--separator=;")
    assert toy.Main("many", "a", "b", env_override=["list"]) == 0
    assert toy.calls[-1][0].separator is None


def test_main_errors(toy, capsys):
    assert toy.Main("fail") == 1
    assert capsys.readouterr().err == (
        "Failure: prerequisites not met for this operation:\n"
        "error type: wrong_state, error details:\nit broke\n")


def test_reason_trail_and_generic_opts(toy):
    before = time.time_ns()
    assert toy.Main("submit", "--priority", "high", "--dry-run", "-d",
                    "--reason", "maintenance") == 0
    op = toy.op
    assert op.priority == constants.OP_PRIO_HIGH
    assert op.dry_run is True
    assert op.debug_level == 1
    (user, client) = op.reason
    assert user[:2] == ("gnt:user", "maintenance")
    assert client[:2] == ("gnt:client:gnt-toy", "submit")
    assert before <= user[2] <= client[2] <= time.time_ns()
    op.Validate(False)


def test_reason_trail_without_user_reason(toy):
    assert toy.Main("submit") == 0
    assert [entry[:2] for entry in toy.op.reason] == \
        [("gnt:client:gnt-toy", "submit")]
    # Unset options leave the opcode's defaults alone
    assert not hasattr(toy.op, "priority")
    assert toy.op.dry_run is False


def test_generic_opts_on_dicts():
    # --priority parses "low" into its number
    opts = optparse.Values({"debug": 0, "priority": constants.OP_PRIO_LOW,
                            "reason": None, "dry_run": False})
    op = {"OP_ID": "OP_TEST_DELAY", "duration": 1}
    cli.SetGenericOpcodeOpts([op], opts)
    assert op["priority"] == constants.OP_PRIO_LOW
    assert op["reason"][0][0].startswith("gnt:client:")


# Jobs against a scripted master ----------------------------------------------

class _JobMaster:
    """Answers SubmitJob/WaitForJobChange/QueryJobs for one scripted job."""

    def __init__(self, final_status, opstatus, opresult, log=()):
        self.final_status = final_status
        self.opstatus = opstatus
        self.opresult = opresult
        self.log = list(log)
        self.waits = 0
        self.submitted = []

    def __call__(self, method, args):
        if method == luxi.REQ_SUBMIT_JOB:
            self.submitted.append(args[0])
            return 42
        if method == luxi.REQ_WAIT_FOR_JOB_CHANGE:
            self.waits += 1
            prev_serial = args[3] or 0
            if self.waits == 1:
                return [["queued"], []]
            if self.waits == 2:
                return constants.JOB_NOTCHANGED
            entries = [entry for entry in self.log if entry[0] > prev_serial]
            if entries:
                return [["running"], entries[:1]]
            return [[self.final_status], []]
        if method == luxi.REQ_QUERY_JOBS:
            return [[self.final_status, self.opstatus, self.opresult]]
        raise errors.GenericError("unexpected method %s" % method)


@pytest.fixture
def master(tmp_path, monkeypatch):
    servers = []

    def start(handler):
        path = str(tmp_path / "master.sock")
        servers.append(testutils_luxi.LuxiServer(path, handler))
        monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, path)
        return servers[-1]
    yield start
    for srv in servers:
        srv.Stop()


def test_poll_job_success_prints_log(master, capsys):
    stamp = [1700000000, 500000]
    job = _JobMaster("success", ["success"], [{"x": 1}],
                     log=[[1, stamp, "message", "* doing things"],
                          [2, stamp, "message-list", ["a", "b"]]])
    master(job)
    assert cli.PollJob(42) == [{"x": 1}]
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        "%s * doing things" % time.ctime(1700000000.5),
        "%s ['a', 'b']" % time.ctime(1700000000.5)]
    assert "Job 42 is waiting in queue" in out.err


def test_poll_job_feedback_fn(master):
    stamp = [1700000000, 0]
    master(_JobMaster("success", ["success"], [None],
                      log=[[1, stamp, "message", "hello"]]))
    seen = []
    assert cli.PollJob(42, feedback_fn=seen.append) == [None]
    assert seen == [(stamp, "message", "hello")]


def test_poll_job_reraises_opcode_error(master):
    master(_JobMaster("error", ["success", "error"],
                      [None, ["OpPrereqError", ["No such node",
                                                "unknown_entity"]]]))
    with pytest.raises(errors.OpPrereqError) as info:
        cli.PollJob(42)
    assert info.value.args == ("No such node", "unknown_entity")


def test_poll_job_canceled_and_unencoded_error(master):
    master(_JobMaster("canceled", ["canceled"], [None]))
    with pytest.raises(errors.JobCanceled, match="Job was canceled"):
        cli.PollJob(42)


def test_poll_job_partial_failure(tmp_path, monkeypatch):
    path = str(tmp_path / "m.sock")
    srv = testutils_luxi.LuxiServer(path, _JobMaster(
        "error", ["success", "error"], [None, "plain failure"]))
    try:
        with pytest.raises(errors.OpExecError,
                           match="partial failure \\(opcode 1\\)"):
            cli.PollJob(42, cl=luxi.Client(address=path))
    finally:
        srv.Stop()


def test_poll_job_lost(master):
    def handler(method, args):
        if method == luxi.REQ_WAIT_FOR_JOB_CHANGE:
            raise errors.JobLost("Job %s not found" % args[0])
        raise errors.GenericError("unexpected")
    master(handler)
    with pytest.raises(errors.JobLost):
        cli.PollJob(5)


def test_submit_opcode_returns_result(master, capsys):
    job = _JobMaster("success", ["success"], ["done"])
    master(job)
    opts = optparse.Values({"debug": 0, "reason": None, "print_jobid": True,
                            "submit_only": False})
    assert cli.SubmitOrSend(opcodes.OpTestDelay(duration=1.0), opts) == \
        "done"
    assert capsys.readouterr().out == "42\n"
    (submitted_op, ) = job.submitted[0]
    assert submitted_op["OP_ID"] == "OP_TEST_DELAY"
    assert submitted_op["reason"][-1][0].startswith("gnt:client:")


def test_submit_or_send_only_submits(master, capsys):
    job = _JobMaster("success", ["success"], [None])
    srv = master(job)
    opts = optparse.Values({"debug": 0, "reason": None, "print_jobid": True,
                            "submit_only": True})
    with pytest.raises(errors.JobSubmittedException) as info:
        cli.SubmitOrSend(opcodes.OpTestDelay(duration=1.0), opts)
    assert info.value.args == (42, )
    assert capsys.readouterr().out == "42\n"
    assert srv.Methods() == ["SubmitJob"]


def test_main_submit_prints_job_id(master, capsys):
    master(_JobMaster("success", ["success"], [None]))

    def submit(opts, args):
        cli.SubmitOrSend(opcodes.OpTestDelay(duration=1.0), opts)
        return 0
    commands = {"go": (submit, [], [cli_opts.SUBMIT_OPT,
                                    cli_opts.PRINT_JOBID_OPT], "", "Go")}
    assert cli.GenericMain(commands, argv=["gnt-x", "go", "--submit"]) == 0
    assert capsys.readouterr().err == "JobID: 42\n"


def test_main_no_master(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, str(tmp_path / "none"))
    commands = {"info": (lambda opts, args: cli.GetClient().QueryClusterInfo()
                         and 0, [], [], "", "Info")}
    assert cli.GenericMain(commands, argv=["gnt-x", "info"]) == 1
    assert capsys.readouterr().err == (
        "Cannot communicate with the master daemon.\n"
        "Is it running and listening for connections?\n")


def test_generic_list_unknown_fields(master, capsys):
    fields = {"id": {"name": "id", "title": "ID", "kind": "number",
                     "doc": "Job ID"}}

    def handler(method, args):
        what, names, _ = args
        fdefs = [fields.get(name, {"name": name, "title": name,
                                   "kind": "unknown", "doc": "Unknown"})
                 for name in names]
        row = [[0, 1] if f["kind"] != "unknown" else [1, None]
               for f in fdefs]
        return {"fields": fdefs, "data": [row]}
    master(handler)
    assert cli.GenericList("job", ["id"], None, None, None, True) == 0
    assert capsys.readouterr().out == "ID\n 1\n"
    assert cli.GenericList("job", ["id", "bogus"], None, None, None,
                           True) == constants.EXIT_UNKNOWN_FIELD
    out = capsys.readouterr()
    assert "Warning: Queried for unknown fields bogus" in out.err
    assert out.out == "ID bogus\n 1 ??\n"


def test_job_executor(master, capsys):
    def handler(method, args):
        if method == luxi.REQ_SUBMIT_MANY_JOBS:
            return [[True, 10], [False, "queue full"]]
        if method == luxi.REQ_WAIT_FOR_JOB_CHANGE:
            return [["success"], []]
        if method == luxi.REQ_QUERY_JOBS:
            return [["success", ["success"], ["ok"]]]
        raise errors.GenericError("unexpected")
    master(handler)
    jex = cli.JobExecutor(opts=None)
    jex.QueueJob("first", opcodes.OpTestDelay(duration=1.0))
    jex.QueueJob("second", opcodes.OpTestDelay(duration=1.0))
    assert jex.GetResults() == [(True, ["ok"]), (False, "queue full")]
    out = capsys.readouterr()
    assert "Submitted jobs 10" in out.out
    assert "Failed to submit job for second: queue full" in out.err


def test_ops_must_serialize(master):
    master(lambda method, args: 1)
    with pytest.raises(errors.ProgrammerError):
        cli.SendJob([ht.TInt])


def test_format_policy_info(capsys):
    """Ganeti's layout: bounds specs as min/N, max/N pairs, the cluster's
    std specs, then templates and ratios; a group's inherited values marked
    as defaults."""
    specs = {"cpu-count": 1, "disk-count": 0, "disk-size": 1,
             "memory-size": 128, "nic-count": 0, "spindle-use": 1}
    policy = {"minmax": [{"min": specs, "max": dict(specs, **{
                  "cpu-count": 8})}],
              "std": specs, "disk-templates": ["file", "diskless"],
              "spindle-ratio": 32.0, "vcpu-ratio": 4}
    cli.PrintGenericInfo([("Policy", cli.FormatPolicyInfo(policy, policy,
                                                          True))])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == ["Policy:", "  bounds specs:", "    - min/0:",
                         "        cpu-count: 1"]
    assert lines[9:11] == ["      max/0:", "        cpu-count: 8"]
    assert lines[16:18] == ["  std:", "    cpu-count: 1"]
    assert lines[23:] == ["  allowed disk templates: file, diskless",
                          "  spindle-ratio: 32.0", "  vcpu-ratio: 4"]
    cli.PrintGenericInfo([("Policy", cli.FormatPolicyInfo(
        {"vcpu-ratio": 2.0}, policy, False))])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ["    - min/0:", "        cpu-count: default (1)"]
    assert "  std:" not in lines
    assert lines[-3:] == [
        "  allowed disk templates: default (file, diskless)",
        "  spindle-ratio: default (32.0)", "  vcpu-ratio: 2.0"]
    # --roman: integers in roman numerals, other values as they are
    cli.PrintGenericInfo([("Policy", cli.FormatPolicyInfo(
        {"vcpu-ratio": 2.0}, policy, False, roman=True))])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ["    - min/0:", "        cpu-count: default (I)"]
    assert "        memory-size: default (CXXVIII)" in lines
    assert "        disk-count: default (0)" in lines
    assert lines[-2:] == ["  spindle-ratio: default (32.0)",
                          "  vcpu-ratio: 2.0"]
    cli.PrintGenericInfo([("Policy", cli.FormatPolicyInfo(
        policy, policy, True, roman=True))])
    assert "  vcpu-ratio: IV" in capsys.readouterr().out.splitlines()
