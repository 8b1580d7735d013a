"""What the command line says when something goes wrong: one line each, no traceback.

`UsageError` is a mistake in what the user typed (exit status 2); the errors nativemcp
raises on purpose and the operating system's are one line each (exit status 1). A
traceback is for a bug, not for these. Each line starts ``nativemcp VERB: error:`` and
names a server as the user typed it (`in_typed_words`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Final

from nativemcp.protocol import NativeMCPError, UnknownServer, UnknownTool

__all__ = [
    "EXPECTED",
    "TYPED",
    "CallFailed",
    "UsageError",
    "did_you_mean",
    "error_lines",
    "in_typed_words",
]


class UsageError(Exception):
    """A mistake in what the user typed, said in their words (exit status 2)."""


class CallFailed(Exception):
    """A tool call that failed for another reason than what was typed (exit status 1)."""


TYPED: Final = (UsageError, UnknownServer, UnknownTool)
"""Mistakes in what was typed (exit status 2): on the command line, every server and
tool name a pool is asked for was typed by the user."""

EXPECTED: Final = (NativeMCPError, OSError, CallFailed)
"""What the CLI reports in one line; anything else is a bug and keeps its traceback."""


def error_lines(exc: BaseException) -> list[str] | None:
    """One line per failure in ``exc`` (an exception group is flattened), or None when
    something in it is not an `EXPECTED` failure."""
    if isinstance(exc, BaseExceptionGroup):
        lines: list[str] = []
        for inner in exc.exceptions:
            found = error_lines(inner)
            if found is None:
                return None
            lines.extend(line for line in found if line not in lines)
        return lines
    if isinstance(exc, EXPECTED):
        return [" ".join(str(exc).split()) or type(exc).__name__]
    return None


def _likeness(a: str, b: str) -> float:
    # SequenceMatcher's ratio depends on the order of its two strings (it finds
    # "srever" far from "serve" one way, near the other): take the better of the two.
    return max(
        difflib.SequenceMatcher(None, a, b).ratio(), difflib.SequenceMatcher(None, b, a).ratio()
    )


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'serve'?)`` for the choice most like ``word``, or ``""`` when none
    is alike (three fifths of the letters in order)."""
    scored = [(_likeness(word, choice), choice) for choice in choices]
    score, best = max(scored, default=(0.0, ""))
    return f" (did you mean {best!r}?)" if score >= 0.6 else ""


def in_typed_words(line: str, typed: Mapping[str, str]) -> str:
    """``line`` with each server source the pool was given (``mytools:server``, quoted
    as messages quote it) named as the user typed it (``mytools.py:server``)."""
    for source, spec in typed.items():
        line = line.replace(repr(source), repr(spec))
    return line
