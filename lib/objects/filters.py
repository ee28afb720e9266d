"""Job filter rules (design-optables), which the job queue applies to
new jobs.
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from typing import Any

from ganeti import ht
from ganeti.objects.base import ConfigObject

# Job filter rules
FILTER_ACCEPT = "ACCEPT"
FILTER_PAUSE = "PAUSE"
FILTER_REJECT = "REJECT"
FILTER_CONTINUE = "CONTINUE"
FILTER_RATE_LIMIT = "RATE_LIMIT"
FILTER_SIMPLE_ACTIONS = frozenset([FILTER_ACCEPT, FILTER_PAUSE, FILTER_REJECT,
                                   FILTER_CONTINUE])
FILTER_PREDICATES = frozenset(["jobid", "opcode", "reason"])


def _IsFilterAction(value: Any) -> bool:
    if isinstance(value, str):
        return value in FILTER_SIMPLE_ACTIONS
    return (isinstance(value, list) and len(value) == 2 and
            value[0] == FILTER_RATE_LIMIT and ht.TStrictPositiveInt(value[1]))


def _IsFilterPredicate(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2 and
            value[0] in FILTER_PREDICATES)


def _IsReasonEntry(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and
            isinstance(value[0], str) and isinstance(value[1], str) and
            ht.TNumber(value[2]))


class FilterRule(ConfigObject):
    """A job filter rule (see design-optables)."""

    watermark: int
    priority: int
    predicates: list[list[Any]]
    action: str | list[Any]
    reason_trail: list[list[Any]]
    uuid: str
    _FIELD_CHECKS = {
        "watermark": ht.TNonNegativeInt,
        "priority": ht.TNonNegativeInt,
        "predicates": ht.TListOf(ht.Check(_IsFilterPredicate,
                                          "[jobid|opcode|reason, filter]")),
        "action": ht.Check(_IsFilterAction,
                           "ACCEPT, PAUSE, REJECT, CONTINUE or"
                           " [RATE_LIMIT, n]"),
        "reason_trail": ht.TListOf(ht.Check(_IsReasonEntry,
                                            "[source, reason, timestamp]")),
        "uuid": ht.TNonEmptyString,
    }
    _FIELD_DEFAULTS = {"watermark": 0, "priority": 0, "predicates": [],
                       "reason_trail": []}
    _REQUIRED = frozenset(["action", "uuid"])


Filter = FilterRule
