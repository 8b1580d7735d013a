"""A grep pattern: Python `re` syntax, weighed, then compiled by `regex` (which can time out).

`compile_pattern` checks a pattern with the stdlib `re` (whose messages name the problem
and its position, and whose syntax the tool promises), refuses one whose repeat counts
multiply out past `MAX_PATTERN_WEIGHT`, and compiles it with `regex`, whose matching can
be stopped by a timeout. The weight is read by a small parser of our own (`pattern_weight`)
rather than CPython's private ``re._parser``, whose names change between versions.
"""

from __future__ import annotations

import re
from typing import Final

import regex

from nativemcp.protocol import ToolError

__all__ = ["MAX_PATTERN_CHARS", "MAX_PATTERN_WEIGHT", "compile_pattern", "pattern_weight"]

MAX_PATTERN_CHARS: Final = 1000
"""The longest grep pattern accepted."""

MAX_PATTERN_WEIGHT: Final = 100_000
"""The most pattern nodes a grep pattern may expand to once repeat counts multiply out.

The `regex` module's compiler takes time in proportion to that product (about half a
second for ``(?:x{1000}){1000}``, unbounded for ``((x{1000}){1000}){1000}``) and cannot be
interrupted, so a pattern above this is refused before it is compiled."""

_QUANTIFIER: Final = re.compile(r"\{(?:(\d+)(?:,\d*)?|,\d*)\}")
"""A counted repeat as `re` reads one (``{2}``, ``{2,}``, ``{,3}``, ``{2,3}``, ``{,}``);
any other ``{`` is a literal. Group 1 is the minimum, absent when it is 0."""
_OCTAL: Final = frozenset("01234567")
_DIGITS: Final = frozenset("0123456789")
_NOT_SINGLE: Final = frozenset("bBAZ")
"""Escapes that are anchors, not characters."""
_FLAGS: Final = re.compile(r"[aiLmsux]*(?:-[imsx]+)?")
_VERBOSE_SPACE: Final = " \t\n\r\v\f"


class _Weigher:
    """A recursive-descent reader of a valid `re` pattern, one frame per nested group.

    It only weighs: the pattern was already accepted by `re.compile`, so what it meets
    is well formed and each construct needs only to be skipped correctly.
    """

    def __init__(self, pattern: str, cap: int) -> None:
        self.pattern = pattern
        self.cap = cap
        self.pos = 0
        self.verbose = False
        self.single = False

    def _clamp(self, weight: int) -> int:
        # Saturate: the product of nested counts could grow to thousands of digits.
        return min(weight, self.cap + 1)

    def alternation(self, node: int = 1) -> int:
        """The weight of alternatives up to a closing ``)`` or the end (not consumed);
        ``node`` is what two or more branches add for their branch node (0: none, and no
        folding, as in a conditional's yes|no)."""
        pattern = self.pattern
        branches: list[int] = []
        items: list[int] = []
        # Whether every branch so far is one character or set: `re` folds such an
        # alternation (a|b|[cd]|\d) into one set, one node.
        singles = True
        while self.pos < len(pattern):
            char = pattern[self.pos]
            if char == ")":
                break
            if self.verbose and char in _VERBOSE_SPACE:
                self.pos += 1
            elif self.verbose and char == "#":
                end = pattern.find("\n", self.pos)
                self.pos = len(pattern) if end < 0 else end + 1
            elif char == "|":
                singles = singles and len(items) == 1 and self.single
                branches.append(sum(items))
                items = []
                self.pos += 1
            elif items and self._at_quantifier():
                items[-1] = self._clamp(1 + items[-1] * max(self._quantifier(), 1))
                self.single = False
            else:
                item = self._atom()
                if item:
                    items.append(item)
        singles = singles and len(items) == 1 and self.single
        branches.append(sum(items))
        if len(branches) == 1:
            return self._clamp(branches[0])
        if singles and node:
            return 1
        return self._clamp(node + sum(branches))

    def _at_quantifier(self) -> bool:
        char = self.pattern[self.pos]
        return char in "*+?" or (char == "{" and bool(_QUANTIFIER.match(self.pattern, self.pos)))

    def _quantifier(self) -> int:
        """Read a repeat (and a lazy ``?`` or possessive ``+`` after it); its minimum."""
        char = self.pattern[self.pos]
        if char == "{":
            found = _QUANTIFIER.match(self.pattern, self.pos)
            assert found is not None  # _at_quantifier saw it
            self.pos = found.end()
            least = int(found.group(1) or 0)
        else:
            self.pos += 1
            least = 0  # *, + and ? all count their body once
        if self.pattern.startswith(("?", "+"), self.pos):
            self.pos += 1
        return least

    def _atom(self) -> int:
        """Read one atom; its weight (0 for what makes no node: comments, global flags).

        Sets `single`: whether the atom is one character or a set `re` can fold.
        """
        pattern = self.pattern
        start = self.pos
        char = pattern[start]
        self.single = False
        if char == "\\":
            self.pos = _escape_end(pattern, start, in_class=False)
            # Anchors and group references are no characters; every other escape is.
            kind = pattern[start + 1]
            self.single = kind not in _NOT_SINGLE and not (
                kind in _DIGITS and kind != "0" and self.pos - start < 4
            )
            return 1
        if char == "[":
            self.pos = _class_end(pattern, start)
            self.single = not pattern.startswith("^", start + 1)  # a negated set is not
            return 1
        if char == "(":
            weight = self._group()
            self.single = False  # what the group's own atoms left there
            return weight
        self.pos += 1
        self.single = char not in ".^$"
        return 1

    def _group(self) -> int:
        pattern = self.pattern
        self.pos += 1  # "("
        if not pattern.startswith("?", self.pos):
            return self._body(1)
        self.pos += 1
        if pattern.startswith("#", self.pos):  # a comment: up to the first ")"
            self.pos = pattern.index(")", self.pos) + 1
            return 0
        if pattern.startswith("P=", self.pos):  # a named back-reference
            self.pos = pattern.index(")", self.pos) + 1
            return 1
        if pattern.startswith("P<", self.pos):  # a named group
            self.pos = pattern.index(">", self.pos) + 1
            return self._body(1)
        for opener in ("<=", "<!", ":", "=", "!", ">"):  # lookarounds, atomic, plain
            if pattern.startswith(opener, self.pos):
                self.pos += len(opener)
                return self._body(1)
        if pattern.startswith("(", self.pos):  # a conditional: (?(group)yes|no)
            self.pos = pattern.index(")", self.pos) + 1
            return self._body(1, branch=0)  # yes and no hang on the group's own node
        flags = _FLAGS.match(pattern, self.pos)
        assert flags is not None  # the pattern matches the empty string
        added, _, removed = flags.group().partition("-")
        self.pos = flags.end()
        if pattern.startswith(")", self.pos):  # global flags, at the start of the pattern
            self.pos += 1
            self.verbose = self.verbose or "x" in added
            return 0
        self.pos += 1  # ":" of a scoped-flags group
        outer = self.verbose
        self.verbose = (outer or "x" in added) and "x" not in removed
        try:
            return self._body(1)
        finally:
            self.verbose = outer

    def _body(self, own: int, branch: int = 1) -> int:
        """A group's alternatives and its closing ``)``, plus ``own`` for the group node."""
        inner = self.alternation(branch)
        self.pos += 1  # ")"
        return self._clamp(own + inner)


def _escape_end(pattern: str, start: int, *, in_class: bool) -> int:
    """Where the escape at ``start`` (a backslash) ends, as `re` reads it."""
    kind = pattern[start + 1 : start + 2]
    if kind == "N" and pattern.startswith("{", start + 2):
        return pattern.index("}", start) + 1
    width = {"x": 2, "u": 4, "U": 8}.get(kind)
    if width is not None:
        return start + 2 + width
    if kind == "0" or (in_class and kind in _OCTAL):
        # An octal escape: the digit and up to two more octal digits.
        end = start + 2
        while end < start + 4 and end < len(pattern) and pattern[end] in _OCTAL:
            end += 1
        return end
    if kind in _DIGITS:
        # Three octal digits are an octal escape; else one or two digits, a group number.
        digits = pattern[start + 1 : start + 4]
        if len(digits) == 3 and all(digit in _OCTAL for digit in digits):
            return start + 4
        return start + 3 if digits[1:2] in _DIGITS else start + 2
    return start + 2


def _class_end(pattern: str, start: int) -> int:
    """Where the character class opened at ``start`` ends (after its ``]``)."""
    pos = start + 1
    if pattern.startswith("^", pos):
        pos += 1
    if pattern.startswith("]", pos):  # a leading "]" is a literal
        pos += 1
    while pattern[pos] != "]":
        pos = _escape_end(pattern, pos, in_class=True) if pattern[pos] == "\\" else pos + 1
    return pos + 1


def pattern_weight(pattern: str, cap: int) -> int:
    """The nodes of a valid `re` pattern with each repeat's body counted max(min, 1) times.

    A literal, class, escape or anchor is one node; a group, and an alternation of two or
    more branches, is one node plus what it holds; a repeat is one node plus its body
    times its minimum (at least once). Saturates at ``cap + 1``. The pattern must be one
    `re.compile` accepts; what this reads of another is unspecified.

    Raises:
        RecursionError: groups are nested too deeply to read.
    """
    return _Weigher(pattern, cap).alternation()


def _pattern_error(pattern: str, rule: str, reason: str) -> ToolError:
    return ToolError(
        f"Invalid regular expression {pattern!r}: {reason}",
        structured_content={"pattern": pattern, "rule": rule, "error": reason},
    )


def _for_regex(pattern: str) -> str:
    """``pattern`` with what `re` reads literally, but `regex` would not, escaped.

    Two constructs differ: a ``{`` that is no counted repeat (``x{e<=1}`` is literal
    text to `re`, fuzzy matching to `regex`) and ``[:`` inside a character class (literal
    characters to `re`, a POSIX class such as ``[[:alpha:]]`` to `regex`). Backslash
    pairs are skipped as `re`'s tokenizer does; escaping a literal never changes it.
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            # \N{NAME} keeps its braces; any other escape is the backslash and one char.
            end = pattern.find("}", i) + 1 if pattern.startswith("N{", i + 1) else i + 2
            out.append(pattern[i : end or i + 2])
            i = end or i + 2
            continue
        if char == "{" and not _QUANTIFIER.match(pattern, i):
            char = "\\{"
        elif in_class:
            if char == "]":
                in_class = False
            elif char == "[" and pattern.startswith(":", i + 1):
                char = "\\["
        elif char == "[":
            in_class = True
            start = i + 1 + pattern.startswith("^", i + 1)
            if pattern.startswith("]", start):  # a leading ']' is a literal
                out.append(pattern[i : start + 1])
                i = start + 1
                continue
        out.append(char)
        i += 1
    return "".join(out)


def compile_pattern(pattern: str, ignore_case: bool) -> regex.Pattern[str]:
    """``pattern`` compiled by `regex` (whose matching can time out) with `re` syntax.

    The stdlib `re` validates first: its messages name the problem and position, and it
    defines the accepted syntax (`regex` would take extensions such as ``\\p{L}``); the
    two constructs `regex` would read differently are escaped (`_for_regex`).

    Raises:
        ToolError: the pattern is too long, invalid, or too complex to compile.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise _pattern_error(
            pattern[:50] + "…",
            "pattern_too_long",
            f"the pattern is {len(pattern)} characters; at most {MAX_PATTERN_CHARS} are accepted",
        )
    flags = re.IGNORECASE if ignore_case else re.NOFLAG
    try:
        re.compile(pattern, flags)
        if pattern_weight(pattern, MAX_PATTERN_WEIGHT) > MAX_PATTERN_WEIGHT:
            raise _pattern_error(
                pattern,
                "pattern_too_complex",
                f"its repeat counts multiply out to more than {MAX_PATTERN_WEIGHT} steps "
                "(as in '(x{1000}){1000}'); use smaller counts or + and *",
            )
        return regex.compile(
            _for_regex(pattern), regex.V0 | (regex.IGNORECASE if ignore_case else 0)
        )
    except (re.error, regex.error) as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ToolError(
            f"Invalid regular expression {pattern!r}: {exc.msg}{where}",
            structured_content={"pattern": pattern, "rule": "regex", "error": exc.msg},
        ) from exc
    except RecursionError as exc:
        raise _pattern_error(pattern, "pattern_too_complex", "groups nested too deeply") from exc
