"""utils.tunable: the environment shortens a wait, or leaves the default."""

import pytest

from ganeti.utils import tunable

_VAR = "GANETI_TEST_TUNABLE_WAIT"


@pytest.mark.parametrize("value, expected", [
    (None, 30.0), ("", 30.0), ("soon", 30.0), ("0", 30.0), ("-1", 30.0),
    ("1.5", 1.5), ("3", 3.0),
])
def test_seconds(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(_VAR, raising=False)
    else:
        monkeypatch.setenv(_VAR, value)
    assert tunable.Seconds(_VAR, 30.0) == expected
