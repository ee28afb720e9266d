"""Query fields of the ``filter`` resource (items are FilterRule objects),
and the rules in evaluation order, as the query and the job scheduler
(jqueue.filters) both read them.
"""

from typing import Any, Iterable

from ganeti import constants, errors, objects, query


def SortKey(rule: objects.FilterRule) -> tuple:
    """The order in which rules are evaluated."""
    return (rule.priority, rule.watermark, rule.uuid)


# Query fields of the "filter" resource (items are FilterRule objects) --------

FILTER_FIELDS: query.FieldTable = {
    "uuid": ("UUID", constants.QFT_TEXT, lambda rule: rule.uuid,
             "Filter rule UUID"),
    "watermark": ("Watermark", constants.QFT_NUMBER,
                  lambda rule: rule.watermark,
                  "Highest job ID used at the time when the filter was"
                  " added"),
    "priority": ("Priority", constants.QFT_NUMBER,
                 lambda rule: rule.priority,
                 "Filter priority (lower numbers are evaluated first)"),
    "predicates": ("Predicates", constants.QFT_OTHER,
                   lambda rule: rule.predicates,
                   "List of filter predicates"),
    "action": ("Action", constants.QFT_OTHER, lambda rule: rule.action,
               "Filter action"),
    "reason_trail": ("ReasonTrail", constants.QFT_OTHER,
                     lambda rule: rule.reason_trail,
                     "Reason why this filter was created"),
}


def GetRules(cfg: Any, uuids: Iterable[str] | None
             ) -> list[objects.FilterRule]:
    """The requested rules (all if None) in evaluation order."""
    rules = cfg.GetFilterRules()
    if uuids is None:
        return sorted(rules.values(), key=SortKey)
    unknown = [uuid for uuid in uuids if uuid not in rules]
    if unknown:
        raise errors.OpPrereqError("Filter rule(s) not found: %s" %
                                   ", ".join(map(str, unknown)),
                                   errors.ECODE_NOENT)
    return [rules[uuid] for uuid in dict.fromkeys(uuids)]
