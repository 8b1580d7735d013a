"""Where a search's terms occur in a chunk: the match type, the matched terms, and a
context snippet around the first match (case- and accent-insensitive, like the index).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Final, NamedTuple

from ._models import RelevanceType
from ._tokenize import Folded, fold

__all__ = ["Match", "context", "describe_match", "highlight"]

CONTEXT_CHARS: Final = 240
"""Length of a context snippet."""
_LEAD: Final = 60
_ELLIPSIS: Final = "…"
"""What `context` marks a cut end with."""
_WORD_PART: Final = re.compile(r"[^\W_]+")
_CJK: Final = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


class Match(NamedTuple):
    """How a chunk matched a query."""

    relevance_type: RelevanceType
    matched_terms: list[str]
    first: int
    """Where the first matched term starts in the text (0 when none matched)."""


@functools.lru_cache(maxsize=1024)
def _pattern(term: str) -> re.Pattern[str] | None:
    """A regex over folded text for one query term, token by token (cached: every hit
    of a search, and its rendering, look for the same terms)."""
    parts = _WORD_PART.findall(fold(term).text)
    if not parts:
        return None
    body = r"[\W_]+".join(re.escape(part) for part in parts)
    # Latin-like words match whole tokens (as FTS5 does); CJK matches inside runs.
    head = "" if _CJK.match(parts[0][0]) else r"(?<![^\W_])"
    tail = "" if _CJK.match(parts[-1][-1]) else r"(?![^\W_])"
    return re.compile(head + body + tail)


@functools.lru_cache(maxsize=1024)
def _needle(term: str) -> str:
    """The first token of ``term``, folded: every match of `_pattern` begins with it."""
    parts = _WORD_PART.findall(fold(term).text)
    return parts[0] if parts else ""


def _search(term: str, text: str, start: int = 0) -> re.Match[str] | None:
    """The first match of ``term`` in folded ``text`` at or after ``start``.

    The same as ``_pattern(term).search(text, start)``, tried only where the term's
    first token occurs (found by a C scan): a pattern that starts with a lookbehind is
    otherwise tried at every position of the text, which made this most of a search
    (and of highlighting its hits).
    """
    pattern = _pattern(term)
    if pattern is None:
        return None
    needle = _needle(term)
    position = text.find(needle, start)
    while position != -1:
        hit = pattern.match(text, position)  # the lookbehind still sees what is before
        if hit is not None:
            return hit
        position = text.find(needle, position + 1)
    return None


def _matches(term: str, text: str) -> Iterator[re.Match[str]]:
    """The matches of ``term`` in folded ``text``, left to right, none overlapping: as
    ``_pattern(term).finditer(text)``, each found by `_search` from the last one's end
    (a match is never empty: it holds the term's first token)."""
    hit = _search(term, text)
    while hit is not None:
        yield hit
        hit = _search(term, text, hit.end())


def _spans(folded: Folded, terms: list[str]) -> dict[str, tuple[int, int]]:
    """Where each term first occurs, as spans of the original text."""
    found: dict[str, tuple[int, int]] = {}
    for term in terms:
        hit = _search(term, folded.text)
        if hit is not None:
            found[term] = folded.span(*hit.span())
    return found


def describe_match(body: str, terms: list[str]) -> Match:
    """The match type and matched terms of ``body`` for ``terms``, and where the first
    match starts (`context` makes the snippet there: only the hits shown need one)."""
    folded = fold(body)
    spans = _spans(folded, terms)
    matched = [term for term in terms if term in spans]
    if len(terms) > 1 and len(matched) == len(terms):
        phrase = _search(" ".join(terms), folded.text)
        kind: RelevanceType = "exact_phrase" if phrase is not None else "all_terms"
    elif matched and len(matched) == len(terms):
        kind = "all_terms"
    else:
        kind = "some_terms"
    first = min((span[0] for span in spans.values()), default=0)
    return Match(kind, matched, first)


def context(body: str, position: int) -> str:
    """A snippet of ``body`` of about `CONTEXT_CHARS` around ``position``, whitespace
    collapsed, with ``…`` where it is cut."""
    if len(body) <= CONTEXT_CHARS:
        return " ".join(body.split())
    start = max(0, position - _LEAD)
    if start > 0:
        space = body.find(" ", start, position)
        start = space + 1 if space != -1 else start
    end = min(len(body), start + CONTEXT_CHARS)
    if end < len(body):
        space = body.rfind(" ", start + CONTEXT_CHARS // 2, end)
        end = space if space != -1 else end
    text = " ".join(body[start:end].split())
    return (_ELLIPSIS if start > 0 else "") + text + (_ELLIPSIS if end < len(body) else "")


def highlight(text: str, terms: list[str]) -> str:
    """``text`` with each occurrence of the terms wrapped in ``**``, for the model."""
    # A context's cut ends are marked ``…``, which folds to three dots: folded with
    # them, the text would need the slow map back. They are no part of any match, and
    # where a match may start or end they stand as the text's ends do (not a letter).
    core = text.lstrip(_ELLIPSIS)
    lead = len(text) - len(core)
    core = core.rstrip(_ELLIPSIS)
    folded = fold(core)
    marks: list[tuple[int, int]] = []
    for term in terms:
        for hit in _matches(term, folded.text):
            start, end = folded.span(*hit.span())
            marks.append((lead + start, lead + end))
    if not marks:
        return text
    marks.sort()
    merged: list[tuple[int, int]] = []
    for start, end in marks:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    out: list[str] = []
    last = 0
    for start, end in merged:
        out.append(text[last:start])
        out.append(f"**{text[start:end]}**")
        last = end
    out.append(text[last:])
    return "".join(out)
