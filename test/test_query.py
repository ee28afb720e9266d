"""Tests of filter evaluation and result statuses (query.CompileFilter,
query.Query) over a small field table."""

import json

import pytest

from ganeti import constants, errors, qlang, query


def _Field(title, kind, key):
    return (title, kind, lambda item: item[key], "The %s" % key)


TABLE = {
    "name": _Field("Name", constants.QFT_TEXT, "name"),
    "size": _Field("Size", constants.QFT_UNIT, "size"),
    "ratio": _Field("Ratio", constants.QFT_NUMBER_FLOAT, "ratio"),
    "flag": _Field("Flag", constants.QFT_BOOL, "flag"),
    "tags": _Field("Tags", constants.QFT_OTHER, "tags"),
    "ctime": _Field("CTime", constants.QFT_TIMESTAMP, "ctime"),
    "live": _Field("Live", constants.QFT_NUMBER, "live"),
    "misc": _Field("Misc", constants.QFT_OTHER, "misc"),
}

ITEMS = [
    {"name": "web1.example.com", "size": 10, "ratio": 0.5, "flag": True,
     "tags": ["a", "b"], "ctime": 100.7, "live": 5, "misc": "x"},
    {"name": "web2.example.com", "size": 20, "ratio": 1.5, "flag": False,
     "tags": [], "ctime": [200, 999999], "live": query.FS_NODATA,
     "misc": 3},
    {"name": "db1.example.com", "size": 30, "ratio": 2.0, "flag": False,
     "tags": ["a"], "ctime": 300, "live": query.FS_OFFLINE, "misc": True},
    {"name": "db2", "size": 40, "ratio": 2.5, "flag": True, "tags": [1, 2],
     "ctime": query.FS_UNAVAIL, "live": 50, "misc": None},
]

WEB1, WEB2, DB1, DB2 = (item["name"] for item in ITEMS)


def _Names(qfilter, hostname_fields=("name", )):
    predicate = query.CompileFilter(TABLE, qfilter, hostname_fields)
    return [item["name"] for item in ITEMS if predicate(item)]


@pytest.mark.parametrize("qfilter, expected", [
    (None, [WEB1, WEB2, DB1, DB2]),
    (["&"], [WEB1, WEB2, DB1, DB2]),
    (["|"], []),
    # Equality; host names match by name component, case-insensitively
    (["==", "name", "web1"], [WEB1]),
    (["=", "name", "WEB1.example.com"], [WEB1]),
    (["==", "name", "web1.example"], [WEB1]),
    (["==", "name", "web"], []),
    (["==", "size", 20], [WEB2]),
    (["!=", "size", 20], [WEB1, DB1, DB2]),
    (["==", "ratio", 2], [DB1]),
    (["==", "flag", True], [WEB1, DB2]),
    # Orderings, of numbers and of strings
    (["<", "size", 30], [WEB1, WEB2]),
    (["<=", "size", 30], [WEB1, WEB2, DB1]),
    ([">", "size", 30], [DB2]),
    ([">=", "size", 30], [DB1, DB2]),
    ([">", "ratio", 1], [WEB2, DB1, DB2]),
    (["<", "ratio", 1.5], [WEB1]),
    (["<", "name", "e"], [DB1, DB2]),
    # Truth and logic
    (["?", "flag"], [WEB1, DB2]),
    (["!", ["?", "flag"]], [WEB2, DB1]),
    (["&", ["?", "flag"], [">", "size", 10]], [DB2]),
    (["|", ["==", "size", 10], ["==", "size", 40], ["?", "flag"]],
     [WEB1, DB2]),
    (["!", ["|", ["==", "size", 10], ["&", ["?", "flag"]]]], [WEB2, DB1]),
    # Regular expressions search anywhere, flags are inline
    (["=~", "name", "^db"], [DB1, DB2]),
    (["=~", "name", "example"], [WEB1, WEB2, DB1]),
    (["=~", "name", "(?i)^DB\\d$"], [DB2]),
    (["=~", "name", qlang.DnsNameGlobPattern("web*")], [WEB1, WEB2]),
    # List membership; True is not the number 1
    (["=[]", "tags", "a"], [WEB1, DB1]),
    (["!=[]", "tags", "a"], [WEB2, DB2]),
    (["=[]", "tags", 1], [DB2]),
    (["=[]", "tags", True], []),
    # Timestamps compare on seconds only
    (["==", "ctime", 100], [WEB1, DB2]),
    (["==", "ctime", 200], [WEB2, DB2]),
    ([">", "ctime", 150], [WEB2, DB1, DB2]),
    # Missing values (no data, offline, unavailable, null) pass every
    # condition, and so fail its negation
    ([">", "live", 10], [WEB2, DB1, DB2]),
    (["!", [">", "live", 10]], [WEB1]),
    (["==", "live", 5], [WEB1, WEB2, DB1]),
    (["!=", "live", 5], [DB2]),
    (["&", ["==", "name", "db2"], ["==", "misc", "zz"]], [DB2]),
    # Untyped fields compare by their values' types
    (["&", ["==", "name", "web1"], ["==", "misc", "x"]], [WEB1]),
    (["&", ["=~", "name", "^web2"], ["<", "misc", 5]], [WEB2]),
    (["&", ["=~", "name", "^db1"], ["?", "misc"]], [DB1]),
])
def test_filter_evaluation(qfilter, expected):
    assert _Names(qfilter) == expected


def test_equality_is_plain_without_hostname_fields():
    assert _Names(["==", "name", "web1"], hostname_fields=()) == []
    assert _Names(["==", "name", WEB1], hostname_fields=()) == [WEB1]


@pytest.mark.parametrize("qfilter, message, part", [
    ([], "Invalid filter part", []),
    ("name", "Invalid filter part", "name"),
    ([1, "name"], "Invalid filter part", [1, "name"]),
    (["~~", "name", "x"], "Unknown operator '~~'", ["~~", "name", "x"]),
    (["&", ["?", "flag"], ["==", "nosuch", 1]], 'Unknown field "nosuch"',
     ["==", "nosuch", 1]),
    (["==", 5, 1], "Unknown field 5", ["==", 5, 1]),
    (["==", "name"], "Operator '==' takes 2 operand(s), got 1",
     ["==", "name"]),
    (["<", "size", 1, 2], "Operator '<' takes 2 operand(s), got 3",
     ["<", "size", 1, 2]),
    (["!", ["?", "flag"], ["?", "flag"]], "Operator '!' takes 1",
     ["!", ["?", "flag"], ["?", "flag"]]),
    (["?", "flag", 1], "Operator '?' takes 1", ["?", "flag", 1]),
    (["|", ["!", ["=~", "name", "("]]], 'Invalid regular expression "("',
     ["=~", "name", "("]),
    (["=~", "name", 5], "expected a string", ["=~", "name", 5]),
    (["=~", "size", "1"], "Field 'size' (type unit) cannot match a regular"
     " expression", ["=~", "size", "1"]),
    (["==", "size", "10"], "Cannot compare field 'size' (type unit) with"
     ' "10"', ["==", "size", "10"]),
    (["==", "name", 5], "Cannot compare field 'name' (type text) with 5",
     ["==", "name", 5]),
    (["==", "flag", 1], "Cannot compare field 'flag' (type bool) with 1",
     ["==", "flag", 1]),
    ([">", "ratio", True], "Invalid value true", [">", "ratio", True]),
    (["<", "flag", True], "Invalid value true", ["<", "flag", True]),
    (["==", "size", [1]], "Invalid value [1]", ["==", "size", [1]]),
    (["==", "size", None], "Invalid value null", ["==", "size", None]),
    (["?", "name"], "Field 'name' (type text) is not a boolean",
     ["?", "name"]),
    (["=[]", "name", "a"], "Field 'name' (type text) is not a list",
     ["=[]", "name", "a"]),
    (["=[]", "tags", ["a"]], 'Invalid value ["a"]', ["=[]", "tags", ["a"]]),
])
def test_bad_filters_name_the_offending_part(qfilter, message, part):
    # Found before any item is looked at
    with pytest.raises(errors.ParameterError) as info:
        query.CompileFilter(TABLE, qfilter)
    text = str(info.value)
    assert message in text
    assert json.dumps(part) in text


def test_filter_depth_is_limited():
    qfilter = ["?", "flag"]
    for _ in range(qlang.MAX_DEPTH - 1):
        qfilter = ["!", qfilter]
    query.CompileFilter(TABLE, qfilter)
    with pytest.raises(errors.ParameterError) as info:
        query.CompileFilter(TABLE, ["!", qfilter])
    assert "nested more than %d levels" % qlang.MAX_DEPTH in str(info.value)


@pytest.mark.parametrize("qfilter, message", [
    (["==", "misc", "x"], 'Cannot compare value 3 of field \'misc\' with "x"'
     ' in filter ["==", "misc", "x"]'),
    (["<", "tags", 1], "Cannot compare value [\"a\", \"b\"] of field 'tags'"
     " with 1"),
    (["?", "misc"], "Unexpected value \"x\" of field 'misc' in boolean"
     " filter [\"?\", \"misc\"]"),
    (["=~", "misc", "x"], "Field 'misc' has the non-string value 3"),
    (["=[]", "misc", "x"], "Field 'misc' has the non-list value \"x\""),
])
def test_untyped_values_that_do_not_suit_the_condition(qfilter, message):
    with pytest.raises(errors.ParameterError) as info:
        _Names(qfilter)
    assert message in str(info.value)


def test_query_result_statuses():
    result = query.Query(TABLE, ITEMS, ["name", "live", "ctime", "nosuch"],
                         [">", "size", 10])
    assert result["fields"] == [
        {"name": "name", "title": "Name", "kind": constants.QFT_TEXT,
         "doc": "The name"},
        {"name": "live", "title": "Live", "kind": constants.QFT_NUMBER,
         "doc": "The live"},
        {"name": "ctime", "title": "CTime", "kind": constants.QFT_TIMESTAMP,
         "doc": "The ctime"},
        {"name": "nosuch", "title": "nosuch", "kind": constants.QFT_UNKNOWN,
         "doc": "Unknown field 'nosuch'"},
    ]
    unknown = [constants.RS_UNKNOWN, None]
    assert result["data"] == [
        [[constants.RS_NORMAL, WEB2], [constants.RS_NODATA, None],
         [constants.RS_NORMAL, [200, 999999]], unknown],
        [[constants.RS_NORMAL, DB1], [constants.RS_OFFLINE, None],
         [constants.RS_NORMAL, 300], unknown],
        [[constants.RS_NORMAL, DB2], [constants.RS_NORMAL, 50],
         [constants.RS_UNAVAIL, None], unknown],
    ]


def test_query_reports_bad_filters():
    with pytest.raises(errors.ParameterError):
        query.Query(TABLE, [], ["name"], ["==", "nosuch", 1])
    with pytest.raises(errors.ParameterError):
        query.Query(TABLE, ITEMS, ["name"], ["==", "misc", "x"])
