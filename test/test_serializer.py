"""The JSON dialect of ganeti.serializer: compact and indented text, errors.

The encoders skip simplejson's named-tuple and circular-reference checks
(for speed); the text must stay what simplejson's defaults give, since
job files, config.data and the wire formats are compared byte by byte.
"""

import pytest
import simplejson

from ganeti import serializer

_SAMPLE = {
    "text": "plain", "unicode": "caf\u00e9 \u2603 \U0001f600",
    "control": "tab\there\nnewline\x01\x7f", "quote": "a\"b\\c/d",
    "int": 12, "negative": -3, "big": 2 ** 70, "float": 1795248254.620366,
    "small": 1e-7, "bools": [True, False, None],
    "tuple": (1, "two", (3, )), "nested": {"b": [], "a": {}, "1": [{}]},
    "bytes": b"utf-8 bytes",
}


def test_compact_text_is_simplejsons():
    expected = simplejson.dumps(_SAMPLE, separators=(",", ":"))
    assert serializer.DumpJson(_SAMPLE) == expected
    assert serializer.DumpJsonBytes(_SAMPLE) == expected.encode("utf-8")


def test_indented_text_is_simplejsons():
    expected = simplejson.dumps(_SAMPLE, indent=2, sort_keys=True) + "\n"
    assert serializer.DumpJson(_SAMPLE, indent=True) == expected


def test_round_trip():
    loaded = serializer.LoadJson(serializer.DumpJsonBytes(_SAMPLE))
    assert loaded["unicode"] == _SAMPLE["unicode"]
    assert loaded["tuple"] == [1, "two", [3]]
    assert loaded["bytes"] == "utf-8 bytes"


@pytest.mark.parametrize("indent", [False, True])
def test_circular_data_is_a_value_error(indent):
    data = {"list": []}
    data["list"].append(data)
    with pytest.raises(ValueError, match="Circular reference detected"):
        serializer.DumpJson(data, indent=indent)
    with pytest.raises(ValueError, match="Circular reference detected"):
        serializer.DumpJsonBytes([data])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1j: 1},
                                   object()])
def test_unencodable_values_are_refused_as_before(value):
    with pytest.raises((ValueError, TypeError)) as err:
        simplejson.dumps(value, separators=(",", ":"))
    with pytest.raises(err.type):
        serializer.DumpJson(value)


def test_nesting_checked_unless_the_answer_is_trusted():
    """Deeper than MAX_DEPTH is refused, except where the caller parses
    its own master daemon's answer (luxi.ParseResponse), which is spared
    the walk over a possibly huge document."""
    deep = "[" * (serializer.MAX_DEPTH + 5) + "]" * (serializer.MAX_DEPTH + 5)
    with pytest.raises(ValueError, match="deeper"):
        serializer.LoadJson(deep)
    value = serializer.LoadJson(deep, check_depth=False)
    for _ in range(serializer.MAX_DEPTH + 4):
        (value, ) = value
    assert value == []
    flat = serializer.DumpJson([{"a": [1]}] * 500)
    assert serializer.LoadJson(flat) == \
        serializer.LoadJson(flat, check_depth=False)
