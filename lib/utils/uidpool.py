"""The user-id pool: a list of inclusive ``(lower, higher)`` uid ranges.

The cluster keeps it (``gnt-cluster init|modify --uid-pool``, ``--add-uids``,
``--remove-uids``) and distributes it in ssconf, as Ganeti does; the text
form is Ganeti's, ``1000-1999,3000``.
"""

from ganeti import errors

# The uids a range may cover (Ganeti's UIDPOOL_UID_MIN/MAX)
UID_MIN = 0
UID_MAX = 2 ** 32 - 1

UidRanges = list[tuple[int, int]]


def ParseUidPool(text: str, separator: str = ",") -> UidRanges:
    """The sorted ranges of ``text``: uids or ``lower-higher`` ranges,
    separated by ``separator`` (empty items are skipped)."""
    ranges = []
    for item in text.split(separator):
        item = item.strip()
        if not item:
            continue
        bounds = item.split("-")
        if len(bounds) > 2:
            raise errors.OpPrereqError(
                "Invalid user-id range definition. Only one hyphen allowed:"
                " %s" % item, errors.ECODE_INVAL)
        try:
            ranges.append((int(bounds[0]), int(bounds[-1])))
        except ValueError as err:
            raise errors.OpPrereqError(
                "Invalid user-id value in user-id range %r: %s" %
                (item, err), errors.ECODE_INVAL) from None
    return sorted(ranges)


def FormatUidPool(uid_pool: UidRanges, separator: str = ", ") -> str:
    """The text form ParseUidPool reads back (``lower`` alone when the
    range has one uid)."""
    return separator.join(str(lo) if lo == hi else "%d-%d" % (lo, hi)
                          for lo, hi in uid_pool)


def CheckUidPool(uid_pool: UidRanges) -> None:
    """Refuse reversed ranges and uids outside UID_MIN..UID_MAX."""
    for lower, higher in uid_pool:
        if lower > higher:
            raise errors.OpPrereqError(
                "Lower user-id range boundary value (%s) is larger than"
                " higher boundary value (%s)" % (lower, higher),
                errors.ECODE_INVAL)
        if lower < UID_MIN or higher > UID_MAX:
            raise errors.OpPrereqError(
                "User-id range %s-%s is outside %s-%s" %
                (lower, higher, UID_MIN, UID_MAX), errors.ECODE_INVAL)


def ModifiedUidPool(uid_pool: UidRanges, add: UidRanges | None,
                    remove: UidRanges | None) -> UidRanges:
    """``uid_pool`` with the ranges of ``add`` added (each once) and those
    of ``remove`` removed; a range to remove must be in the pool exactly,
    as in Ganeti."""
    result = [tuple(item) for item in uid_pool]
    for lower, higher in add or []:
        if (lower, higher) not in result:
            result.append((lower, higher))
    for lower, higher in remove or []:
        if (lower, higher) not in result:
            raise errors.OpPrereqError(
                "User-id range to be removed is not found in the current"
                " user-id pool: %s" % str((lower, higher)),
                errors.ECODE_INVAL)
        result.remove((lower, higher))
    return sorted((lo, hi) for lo, hi in result)
