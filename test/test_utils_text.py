"""Tests for ganeti.utils.text: natural name order."""

import pytest

from ganeti import utils

pytestmark = pytest.mark.unit


def test_nice_sort_orders_numbers_by_value():
    names = ["node10.example.com", "node2.example.com", "node1.example.com",
             "inst-a10", "inst-a9b", "inst-a9a"]
    assert utils.NiceSort(names) == [
        "inst-a9a", "inst-a9b", "inst-a10", "node1.example.com",
        "node2.example.com", "node10.example.com"]
    assert sorted(["b", "a2", "a10"], key=utils.NiceSortKey) == \
        ["a2", "a10", "b"]


def test_roman_numerals():
    """--roman writes integers 1..4999 in roman numerals (as Ganeti's
    roman module); anything else, and sizes with a fraction, unchanged."""
    to_roman = utils.text.TryToRoman
    assert [to_roman(n) for n in (1, 4, 9, 14, 40, 90, 400, 1994, 4999)] == \
        ["I", "IV", "IX", "XIV", "XL", "XC", "CD", "MCMXCIV", "MMMMCMXCIX"]
    assert [to_roman(v) for v in (0, -3, 5000, True, 2.0, "7")] == \
        [0, -3, 5000, True, 2.0, "7"]
    assert to_roman(12, convert=False) == 12
    assert [utils.text.FormatUnit(v, "h", True)
            for v in (128, 2048, 1536)] == ["CXXVIIIM", "IIG", "1.5G"]
    assert utils.text.FormatUnit(128, "h") == "128M"
