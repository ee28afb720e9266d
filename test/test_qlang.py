"""Tests of the query language: text parser, list arguments, and the
``gnt-* list`` filters on a real one-node virtual cluster."""

import re

import pytest

from ganeti import cli, constants, errors, qlang, query

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.integration

# Every text example of the language and its wire form
TEXT_AND_WIRE = [
    ('name == "a"', ["==", "name", "a"]),
    ("id = 5", ["==", "id", 5]),
    ("name != 'x'", ["!=", "name", "x"]),
    ("x < -3", ["<", "x", -3]),
    ("x <= +3", ["<=", "x", 3]),
    ("x > 1.5", [">", "x", 1.5]),
    ("x >= 0", [">=", "x", 0]),
    ("offline", ["?", "offline"]),
    ("not offline", ["!", ["?", "offline"]]),
    ('"web" in tags', ["=[]", "tags", "web"]),
    ('"web" not in tags', ["!", ["=[]", "tags", "web"]]),
    ("7 in ids", ["=[]", "ids", 7]),
    ("name =~ m/^web/", ["=~", "name", "^web"]),
    ("name =~ /^web/", ["=~", "name", "^web"]),
    (r"name =~ m/^web\d+/i", ["=~", "name", r"(?i)^web\d+"]),
    ("name =~ m#a.b#si", ["=~", "name", "(?is)a.b"]),
    (r"name =~ m/a\/b/", ["=~", "name", "a/b"]),
    (r"name =~ m|x\\|", ["=~", "name", r"x\\"]),
    ("name !~ m^x^", ["!", ["=~", "name", "x"]]),
    ('name =* "web*"', ["=~", "name", r"^web[^.]*(\..*)?$"]),
    ('name !* "web?"', ["!", ["=~", "name", r"^web[^.](\..*)?$"]]),
    ("disk.size/0 > 1024", [">", "disk.size/0", 1024]),
    ('name =~ m/^web/ and admin_state == "up"',
     ["&", ["=~", "name", "^web"], ["==", "admin_state", "up"]]),
    ("a and b and c", ["&", ["?", "a"], ["?", "b"], ["?", "c"]]),
    ("a or b or c", ["|", ["?", "a"], ["?", "b"], ["?", "c"]]),
    # not binds tighter than and, and tighter than or
    ("not a and b", ["&", ["!", ["?", "a"]], ["?", "b"]]),
    ("a or b and c", ["|", ["?", "a"], ["&", ["?", "b"], ["?", "c"]]]),
    ("a and b or c", ["|", ["&", ["?", "a"], ["?", "b"]], ["?", "c"]]),
    ("not not a", ["!", ["!", ["?", "a"]]]),
    ("(a or b) and c", ["&", ["|", ["?", "a"], ["?", "b"]], ["?", "c"]]),
    ("not (a or b)", ["!", ["|", ["?", "a"], ["?", "b"]]]),
    ("((a))", ["?", "a"]),
    ("(a and b) and c", ["&", ["&", ["?", "a"], ["?", "b"]], ["?", "c"]]),
    ('status != "x" and (a or not b)',
     ["&", ["!=", "status", "x"], ["|", ["?", "a"], ["!", ["?", "b"]]]]),
    ('name=="a"and(x<1)', ["&", ["==", "name", "a"], ["<", "x", 1]]),
    (' \tname == "a"\n or x\n', ["|", ["==", "name", "a"], ["?", "x"]]),
    # Quoting: either quote, backslash takes the next character as is
    (r'name == "it\'s \"x\""', ["==", "name", "it's \"x\""]),
    (r"name == 'say \"hi\"'", ["==", "name", 'say "hi"']),
    (r'name == "a\\b"', ["==", "name", "a\\b"]),
    ("name == 'a and b'", ["==", "name", "a and b"]),
    ("name == ''", ["==", "name", ""]),
    # Keywords are whole words: these are field names
    ("android and order", ["&", ["?", "android"], ["?", "order"]]),
]


@pytest.mark.parametrize("text, wire", TEXT_AND_WIRE)
def test_text_and_wire_forms(text, wire):
    assert qlang.ParseFilter(text) == wire
    # Every example also makes a valid filter for MakeFilter's single
    # argument, since each contains filter syntax or is forced
    assert qlang.MakeFilter([text], True) == wire


def test_regex_flags_compile_to_python_regexes():
    (_, _, regexp) = qlang.ParseFilter("name =~ m/^WEB.x/is")
    assert re.search(regexp, "web\nx")
    assert not re.search(regexp, "xweb")


@pytest.mark.parametrize("text, pos, reason", [
    ("", 0, "expected a condition, found end of filter"),
    ("   ", 3, "expected a condition"),
    ("name ==", 7, "expected a quoted string or a number, found end"),
    ("name == web", 8, "expected a quoted string or a number, found 'web'"),
    ("(a", 2, "expected ')'"),
    ("a)", 1, "expected 'and', 'or' or end of filter, found ')'"),
    ("a b", 2, "found 'b'"),
    ("and", 0, "expected a condition, found 'and'"),
    ("a and", 5, "expected a condition, found end of filter"),
    ("not", 3, "expected a condition"),
    ('name = "x', 7, "unterminated string"),
    ('5 in', 4, "expected a field name"),
    ('5 in or', 5, "expected a field name, found 'or'"),
    ('5 == x', 2, "expected 'in' or 'not in'"),
    ('"a" not tags', 8, "expected 'in', found 'tags'"),
    ("name =~ abc", 8, "expected a regular expression like m/.../"),
    ("name =~ m/abc", 8, "unterminated regular expression"),
    ("name =~ m/a/x", 12, "Unknown regular expression flags: 'x'"),
    ("name =~ m/a/mix", 12, "Unknown regular expression flags: 'm, x'"),
    ("name =~ m/(/", 8, "Invalid regular expression"),
    ("name =* x", 8, "expected a quoted glob pattern"),
    ("name == @", 8, "unexpected character '@'"),
    ("name == -", 8, "unexpected character '-'"),
    ("1x", 1, "found 'x'"),
])
def test_parse_errors_point_at_the_problem(text, pos, reason):
    with pytest.raises(errors.QueryFilterParseError) as info:
        qlang.ParseFilter(text)
    msg, line, caret = info.value.args
    assert msg.startswith("Failed to parse query filter '%s': " % text)
    assert reason in msg
    assert "(at char %d)" % pos in msg
    assert line == text
    assert caret == " " * pos + "^"
    # What gnt-* commands print (exit code 1)
    code, message = cli.FormatError(info.value)
    assert code == constants.EXIT_FAILURE
    assert message == "Error while parsing query filter: %s\n%s\n%s" % (
        msg, line, caret)


def test_parse_error_on_a_later_line_shows_that_line():
    text = 'name == "a" and\n\tx == @'
    with pytest.raises(errors.QueryFilterParseError) as info:
        qlang.ParseFilter(text)
    msg, line, caret = info.value.args
    assert "(line:2, col:7)" in msg
    assert line == "\tx == @"
    # Tabs are kept, so the caret lines up under the character
    assert caret == "\t     ^"


def test_parse_leftmost_error_wins():
    # The unterminated string comes after the first error
    with pytest.raises(errors.QueryFilterParseError) as info:
        qlang.ParseFilter('and name == "x')
    assert "(at char 0)" in info.value.args[0]


def test_nesting_is_limited():
    deep = "(" * qlang.MAX_DEPTH + "a" + ")" * qlang.MAX_DEPTH
    assert qlang.ParseFilter(deep) == ["?", "a"]
    with pytest.raises(errors.QueryFilterParseError) as info:
        qlang.ParseFilter("(" + deep + ")")
    assert "nested more than" in info.value.args[0]
    with pytest.raises(errors.QueryFilterParseError):
        qlang.ParseFilter("not " * (qlang.MAX_DEPTH + 1) + "a")


@pytest.mark.parametrize("pattern, matching, other", [
    ("node1", ["node1", "node1.example.com"], ["node10", "xnode1"]),
    ("node*", ["node", "node12", "node1.example.com"], ["anode"]),
    ("node?", ["node1", "nodeX.example.com"], ["node", "node12"]),
    ("*.example.com", ["a.example.com", "a.example.com.x"],
     ["a.b.example.com", "example.com"]),
    ("a+b", ["a+b"], ["aab"]),
])
def test_dns_name_glob_pattern(pattern, matching, other):
    regexp = re.compile(qlang.DnsNameGlobPattern(pattern))
    for name in matching:
        assert regexp.match(name), name
    for name in other:
        assert not regexp.match(name), name


def test_make_filter_names_and_globs():
    assert qlang.MakeFilter(None, False) is None
    assert qlang.MakeFilter([], False) is None
    assert qlang.MakeFilter(["a", "b"], False) == \
        ["|", ["==", "name", "a"], ["==", "name", "b"]]
    assert qlang.MakeFilter(["a"], False, namefield="uuid") == \
        ["|", ["==", "uuid", "a"]]
    assert qlang.MakeFilter(["node*", "x"], False) == \
        ["|", ["=~", "name", qlang.DnsNameGlobPattern("node*")],
         ["==", "name", "x"]]
    assert qlang.MakeFilter(["1", "2"], False, namefield="id",
                            isnumeric=True) == \
        ["|", ["==", "id", 1], ["==", "id", 2]]
    with pytest.raises(errors.OpPrereqError) as info:
        qlang.MakeFilter(["x"], False, isnumeric=True)
    assert "Invalid job ID passed" in str(info.value)


@pytest.mark.parametrize("char", sorted(qlang.FILTER_DETECTION_CHARS))
def test_make_filter_detects_a_single_filter_argument(char):
    arg = "a%sb" % char
    try:
        result = qlang.MakeFilter([arg], False)
    except errors.QueryFilterParseError:
        pass
    else:
        # "a/b" is a valid filter: the field a/b is true
        assert result == qlang.ParseFilter(arg)
    # Only a single argument is detected
    assert qlang.MakeFilter([arg, "c"], False)[1] == ["==", "name", arg]


def test_make_filter_forced_and_detected():
    assert qlang.MakeFilter(['status == "running"'], False) == \
        ["==", "status", "running"]
    assert qlang.MakeFilter(['status == "running"'], False, isnumeric=True,
                            namefield="id") == ["==", "status", "running"]
    assert qlang.MakeFilter(["master"], True) == ["?", "master"]
    assert qlang.MakeFilter(["master"], False) == \
        ["|", ["==", "name", "master"]]
    for args in (None, [], ["a", "b"]):
        with pytest.raises(errors.OpPrereqError) as info:
            qlang.MakeFilter(args, True)
        assert "Exactly one argument" in str(info.value)


def test_make_simple_filter():
    assert qlang.MakeSimpleFilter("name", None) is None
    assert qlang.MakeSimpleFilter("name", []) is None
    assert qlang.MakeSimpleFilter("id", (i for i in [1, 2])) == \
        ["|", ["==", "id", 1], ["==", "id", 2]]


def test_parsed_filters_evaluate():
    table = {
        "name": ("Name", constants.QFT_TEXT, lambda i: i[0], ""),
        "tags": ("Tags", constants.QFT_OTHER, lambda i: i[1], ""),
    }
    items = [("web1", ["a"]), ("web2", []), ("db1", ["a", "b"])]

    def names(text):
        return [item[0] for item in items
                if query.CompileFilter(table, qlang.ParseFilter(text))(item)]
    assert names('name =~ m/^WEB/i and "a" in tags') == ["web1"]
    assert names('"a" not in tags or name == "db1"') == ["web2", "db1"]
    assert names('name =* "*1"') == ["web1", "db1"]


# gnt-* list on a real cluster --------------------------------------------

@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.Run("gnt-debug", "delay", "0.01")
        yield cluster
    finally:
        cluster.Cleanup()


def _Lines(vcluster, *args):
    return vcluster.Run(*args).stdout.splitlines()


def test_job_list_filters(vcluster):
    # The cluster's own jobs (from init) and the delay job
    jobs = [line.split("|") for line in _Lines(
        vcluster, "gnt-job", "list", "--no-headers", "--separator=|", "-o",
        "id,status,summary")]
    assert jobs and all(status == "success" for (_, status, _) in jobs)
    (delay_id, ) = [job_id for (job_id, _, summary) in jobs
                    if summary == "TEST_DELAY(0.01)"]
    ids = [job_id for (job_id, _, _) in jobs]
    assert _Lines(vcluster, "gnt-job", "list", "--no-headers", "-o", "id",
                  "--filter", 'status == "success"') == ids
    assert _Lines(vcluster, "gnt-job", "list", "--no-headers",
                  'status == "error"') == []
    assert _Lines(vcluster, "gnt-job", "list", "--no-headers", "-o", "id",
                  "-F", '"TEST_DELAY(0.01)" in summary') == [delay_id]
    assert _Lines(vcluster, "gnt-job", "list", "--no-headers", "-o", "id",
                  "-F", "id == %s or id < 0" % delay_id) == [delay_id]
    assert _Lines(vcluster, "gnt-job", "list", "--no-headers", "-o", "id",
                  delay_id) == [delay_id]


def test_node_list_filters_and_globs(vcluster):
    master = vcluster.name
    for args in (["name =~ m/^node/"], ["node*"], ["node?"], [master],
                 ["-F", "master and not offline"], ["node1"],
                 ["--filter", 'role == "M" and "x" not in tags']):
        assert _Lines(vcluster, "gnt-node", "list", "--no-headers", "-o",
                      "name", *args) == [master], args
    for args in (["name =~ m/^web/"], ["web*"], ["-F", "offline"],
                 ["-F", 'name =* "node1?"']):
        assert _Lines(vcluster, "gnt-node", "list", "--no-headers", "-o",
                      "name", *args) == [], args


def test_group_list_filters(vcluster):
    assert _Lines(vcluster, "gnt-group", "list", "--no-headers", "-o",
                  "name,node_cnt", "node_cnt >= 1") == ["default 1"]
    assert _Lines(vcluster, "gnt-group", "list", "--no-headers", "-o",
                  "name", "def*") == ["default"]
    assert _Lines(vcluster, "gnt-group", "list", "--no-headers", "-o",
                  "name", "--filter", 'alloc_policy != "preferred"') == []


def test_bad_filters_fail_with_a_message(vcluster):
    result = vcluster.Run("gnt-node", "list", "name ==", check=False)
    assert result.returncode == constants.EXIT_FAILURE
    assert result.stderr.splitlines()[-3:] == [
        "Error while parsing query filter: Failed to parse query filter"
        " 'name ==': expected a quoted string or a number, found end of"
        " filter (at char 7), (line:1, col:8)",
        "name ==",
        "       ^"]
    for args, message in [
            (["gnt-node", "list", "nosuchfield == 1"],
             "Unknown field \"nosuchfield\""),
            (["gnt-job", "list", "-F", "status > 1"],
             "Cannot compare field 'status' (type text) with 1"),
            (["gnt-group", "list", "-F", "name"],
             "Field 'name' (type text) is not a boolean"),
            (["gnt-job", "list", "-F", "a", "b"], "Exactly one argument")]:
        result = vcluster.Run(*args, check=False)
        assert result.returncode == constants.EXIT_FAILURE, args
        assert message in result.stderr, (args, result.stderr)
