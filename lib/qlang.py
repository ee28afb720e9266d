"""The query language: wire-form operators and the text form's parser.

A filter travels (LUXI, RAPI) in its wire form, a JSON S-expression whose
first item is the operator: ``["&", ["=~", "name", "^web"], ["?",
"offline"]]``. Users type the text form (``man ganeti``, "Query filters"):
``name =~ m/^web/ and offline``; ``ParseFilter`` turns it into the wire form
and ``MakeFilter`` turns the arguments of a ``list`` command (names, globs
or one filter text) into one. ``query.CompileFilter`` evaluates wire forms.
"""

import re
import string
from typing import Iterable, NamedTuple, NoReturn, Sequence

from ganeti import errors

# Operators of the wire form (Ganeti's QLANG_OP_*)
OP_OR = "|"
OP_AND = "&"
OP_NOT = "!"
OP_TRUE = "?"
OP_EQUAL = "=="
OP_EQUAL_LEGACY = "="
OP_NOT_EQUAL = "!="
OP_LT = "<"
OP_LE = "<="
OP_GT = ">"
OP_GE = ">="
OP_REGEXP = "=~"
OP_CONTAINS = "=[]"
OP_NOT_CONTAINS = "!=[]"

# Characters that make a single list argument a filter expression
FILTER_DETECTION_CHARS = frozenset("()=/!~'\"\\<>" + string.whitespace)
# Characters that make a list argument a name glob
GLOB_DETECTION_CHARS = frozenset("*?")

# Deepest nesting of a filter: keeps parsing and evaluation well away from
# Python's recursion limit
MAX_DEPTH = 100

# Binary operators of the text form, longest first so that "<=" is not
# read as "<"
_TEXT_OPERATORS = ("==", "!=", "<=", ">=", "=~", "!~", "=*", "!*", "<", ">",
                   "=")
_COMPARISONS = {
    "==": OP_EQUAL, "=": OP_EQUAL, "!=": OP_NOT_EQUAL, "<": OP_LT,
    "<=": OP_LE, ">": OP_GT, ">=": OP_GE,
}
_KEYWORDS = frozenset(["and", "or", "not", "in"])
_REGEXP_DELIMITERS = "/#^|"
_REGEXP_FLAGS = frozenset("is")

_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_/.]*")
_NUMBER_RE = re.compile(r"[-+]?[0-9]+(\.[0-9]+)?")
_SPACE_RE = re.compile(r"\s*")
_FLAGS_RE = re.compile(r"[A-Za-z]*")
_GLOB_PART_RE = re.compile(r"\*|\?|[^*?]+")


def DnsNameGlobPattern(pattern: str) -> str:
    """The regular expression matching host names like a shell glob.

    ``*`` and ``?`` stay within one name component, and a pattern matching
    the first components matches the full name, so ``node?`` selects
    ``node1.example.com`` but not ``node12``.
    """
    def part(match: re.Match) -> str:
        text = match.group(0)
        if text == "*":
            return "[^.]*"
        if text == "?":
            return "[^.]"
        return re.escape(text)
    return "^%s(\\..*)?$" % _GLOB_PART_RE.sub(part, pattern)


class _Token(NamedTuple):
    """One token: kind ("(", ")", "op", "string", "number", "name" or
    "end"), value and where it starts and ends in the text."""
    kind: str
    value: str | int | float | None
    start: int
    end: int


class _Parser:
    """Recursive-descent parser of the text form.

    Tokens are read on demand, so the first error reported is the leftmost
    one; regular expressions are read right after ``=~``/``!~`` because
    they cannot be told from other tokens out of context.
    """

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.depth = 0
        self._peeked: _Token | None = None

    def Fail(self, reason: str, pos: int) -> NoReturn:
        """Raise the parse error, pointing at ``pos``."""
        line_start = self.text.rfind("\n", 0, pos) + 1
        line_end = self.text.find("\n", pos)
        if line_end == -1:
            line_end = len(self.text)
        line = self.text[line_start:line_end]
        # Keep tabs so that the caret lines up with the character
        caret = "".join("\t" if char == "\t" else " "
                        for char in line[:pos - line_start]) + "^"
        raise errors.QueryFilterParseError(
            "Failed to parse query filter '%s': %s (at char %d), (line:%d,"
            " col:%d)" % (self.text, reason, pos,
                          self.text.count("\n", 0, pos) + 1,
                          pos - line_start + 1),
            line, caret)

    # Tokens

    def _SkipSpace(self) -> int:
        match = _SPACE_RE.match(self.text, self.pos)
        assert match is not None, "matches the empty string"
        self.pos = match.end()
        return self.pos

    def _Lex(self) -> _Token:
        start = self._SkipSpace()
        text = self.text
        if start == len(text):
            return _Token("end", None, start, start)
        char = text[start]
        if char in "()":
            return _Token(char, char, start, start + 1)
        if char in "'\"":
            return self._LexString(start)
        match = _NUMBER_RE.match(text, start)
        if match:
            number = match.group(0)
            value = float(number) if match.group(1) else int(number)
            return _Token("number", value, start, match.end())
        match = _NAME_RE.match(text, start)
        if match:
            return _Token("name", match.group(0), start, match.end())
        for op in _TEXT_OPERATORS:
            if text.startswith(op, start):
                return _Token("op", op, start, start + len(op))
        self.Fail("unexpected character %r" % char, start)

    def _LexString(self, start: int) -> _Token:
        """A quoted string; a backslash takes the next character as is."""
        quote = self.text[start]
        chars: list[str] = []
        idx = start + 1
        while idx < len(self.text):
            char = self.text[idx]
            if char == quote:
                return _Token("string", "".join(chars), start, idx + 1)
            if char == "\\" and idx + 1 < len(self.text):
                idx += 1
                char = self.text[idx]
            chars.append(char)
            idx += 1
        self.Fail("unterminated string", start)

    def _Peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self._Lex()
        return self._peeked

    def _Take(self) -> _Token:
        token = self._Peek()
        self._peeked = None
        self.pos = token.end
        return token

    def _IsKeyword(self, token: _Token, word: str) -> bool:
        return token.kind == "name" and token.value == word

    def _TakeKeyword(self, word: str) -> bool:
        if self._IsKeyword(self._Peek(), word):
            self._Take()
            return True
        return False

    def _Describe(self, token: _Token) -> str:
        if token.kind == "end":
            return "end of filter"
        return repr(self.text[token.start:token.end])

    def _Expect(self, token: _Token, what: str) -> NoReturn:
        self.Fail("expected %s, found %s" % (what, self._Describe(token)),
                  token.start)

    # Grammar: or := and ("or" and)*; and := not ("and" not)*;
    # not := "not" not | "(" or ")" | condition

    def Parse(self) -> list:
        result = self._Or()
        token = self._Peek()
        if token.kind != "end":
            self._Expect(token, "'and', 'or' or end of filter")
        return result

    def _Or(self) -> list:
        parts = [self._And()]
        while self._TakeKeyword("or"):
            parts.append(self._And())
        return parts[0] if len(parts) == 1 else [OP_OR] + parts

    def _And(self) -> list:
        parts = [self._Not()]
        while self._TakeKeyword("and"):
            parts.append(self._Not())
        return parts[0] if len(parts) == 1 else [OP_AND] + parts

    def _Not(self) -> list:
        token = self._Peek()
        if not (self._IsKeyword(token, "not") or token.kind == "("):
            return self._Condition()
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.Fail("filter nested more than %d levels deep" % MAX_DEPTH,
                      token.start)
        self._Take()
        if token.kind == "(":
            result = self._Or()
            closing = self._Peek()
            if closing.kind != ")":
                self._Expect(closing, "')'")
            self._Take()
        else:
            result = [OP_NOT, self._Not()]
        self.depth -= 1
        return result

    def _Field(self) -> str:
        token = self._Peek()
        if token.kind != "name" or token.value in _KEYWORDS:
            self._Expect(token, "a field name")
        self._Take()
        return str(token.value)

    def _Value(self) -> str | int | float:
        token = self._Peek()
        if token.kind not in ("string", "number"):
            self._Expect(token, "a quoted string or a number")
        self._Take()
        assert token.value is not None, "strings and numbers have values"
        return token.value

    def _Condition(self) -> list:
        token = self._Peek()
        if token.kind in ("string", "number"):
            # value [not] in field
            value = self._Take().value
            negate = self._TakeKeyword("not")
            if not self._TakeKeyword("in"):
                self._Expect(self._Peek(), "'in'" if negate else
                             "'in' or 'not in'")
            cond = [OP_CONTAINS, self._Field(), value]
            return [OP_NOT, cond] if negate else cond
        if token.kind != "name" or token.value in _KEYWORDS:
            self._Expect(token, "a condition")
        field = self._Field()
        token = self._Peek()
        if token.kind != "op":
            return [OP_TRUE, field]
        op = str(self._Take().value)
        if op in _COMPARISONS:
            return [_COMPARISONS[op], field, self._Value()]
        if op in ("=~", "!~"):
            cond = [OP_REGEXP, field, self._Regexp()]
        else:
            glob = self._Peek()
            if glob.kind != "string":
                self._Expect(glob, "a quoted glob pattern")
            self._Take()
            cond = [OP_REGEXP, field, DnsNameGlobPattern(str(glob.value))]
        return [OP_NOT, cond] if op.startswith("!") else cond

    def _Regexp(self) -> str:
        """``m/regex/flags``: the delimiter is one of ``/#^|``, the ``m``
        is optional and the flags (``i``, ``s``) become ``(?is)``."""
        start = self._SkipSpace()
        text = self.text
        idx = start + 1 if text.startswith("m", start) else start
        if idx >= len(text) or text[idx] not in _REGEXP_DELIMITERS:
            self.Fail("expected a regular expression like m/.../", start)
        delim = text[idx]
        chars = []
        idx += 1
        while idx < len(text) and text[idx] != delim:
            if text[idx] == "\\" and idx + 1 < len(text):
                # "\<delim>" is the delimiter; other escapes are the regex's
                chars.append(text[idx + 1] if text[idx + 1] == delim
                             else text[idx:idx + 2])
                idx += 2
            else:
                chars.append(text[idx])
                idx += 1
        if idx >= len(text):
            self.Fail("unterminated regular expression", start)
        flags_start = idx + 1
        match = _FLAGS_RE.match(text, flags_start)
        assert match is not None, "matches the empty string"
        flags = match.group(0)
        unknown = sorted(set(flags) - _REGEXP_FLAGS)
        if unknown:
            self.Fail("Unknown regular expression flags: '%s'" %
                      ", ".join(unknown), flags_start)
        regexp = "".join(chars)
        if flags:
            regexp = "(?%s)%s" % ("".join(sorted(set(flags))), regexp)
        try:
            re.compile(regexp)
        except re.error as err:
            self.Fail("Invalid regular expression (%s)" % err, start)
        self.pos = match.end()
        return regexp


def ParseFilter(text: str) -> list:
    """Parse the text form of a filter into its wire form.

    ``name =~ m/^web/ and not (status == "running")`` becomes
    ``["&", ["=~", "name", "^web"], ["!", ["==", "status", "running"]]]``.
    Raises QueryFilterParseError whose details are the offending line and
    a caret under the problem.
    """
    return _Parser(text).Parse()


def MakeSimpleFilter(namefield: str, values: Iterable | None) -> list | None:
    """``namefield`` equal to any of ``values`` (None if there are none)."""
    values = list(values or [])
    if not values:
        return None
    return [OP_OR] + [[OP_EQUAL, namefield, value] for value in values]


def _MakeFilterPart(namefield: str, text: str, isnumeric: bool) -> list:
    if isnumeric:
        try:
            number = int(text)
        except (TypeError, ValueError) as err:
            raise errors.OpPrereqError("Invalid job ID passed: %s" % err,
                                       errors.ECODE_INVAL) from err
        return [OP_EQUAL, namefield, number]
    if GLOB_DETECTION_CHARS.intersection(text):
        return [OP_REGEXP, namefield, DnsNameGlobPattern(text)]
    return [OP_EQUAL, namefield, text]


def MakeFilter(args: Sequence[str] | None, force_filter: bool,
               namefield: str | None = None,
               isnumeric: bool = False) -> list | None:
    """The filter of a ``list`` command's arguments.

    With ``force_filter`` (``-F``), or if the only argument contains filter
    syntax (FILTER_DETECTION_CHARS), the argument is a text filter.
    Otherwise each argument selects ``namefield`` (default ``name``) by
    equality, or by regular expression if it is a glob; ``isnumeric``
    makes the arguments numbers (job IDs). None (no filter) without
    arguments.
    """
    namefield = namefield or "name"
    if force_filter or (args and len(args) == 1 and
                        FILTER_DETECTION_CHARS.intersection(args[0])):
        if not args or len(args) != 1:
            raise errors.OpPrereqError("Exactly one argument must be given"
                                       " as a filter", errors.ECODE_INVAL)
        return ParseFilter(args[0])
    if not args:
        return None
    return [OP_OR] + [_MakeFilterPart(namefield, arg, isnumeric)
                      for arg in args]
