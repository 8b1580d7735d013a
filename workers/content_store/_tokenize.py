"""Text → FTS5 tokens, and user queries → safe FTS5 match expressions.

SQLite's ``unicode61`` tokenizer (with ``remove_diacritics 2``) handles Latin, Greek and
Cyrillic words well: ``muller`` matches ``Müller``. It does not segment Chinese,
Japanese or Korean, which are written without spaces between words (or, in Korean,
with particles glued to the word): a whole run like ``東京都庁`` or ``학교에서`` would
be one token, and a search for ``東京`` or ``학교`` would find nothing.

So before text reaches FTS5, every CJK run is rewritten as its overlapping character
bigrams plus its last character on its own (``학교에서`` → ``학교 교에 에서 서``).
A query runs through the same rewrite, minus the trailing unigram, and becomes a
phrase, so any substring of two or more characters of a run is found, whatever is
glued around it. A one-character CJK query becomes a prefix token, which finds the
character at any position of a run.

Text and queries are first brought to one form: NFKC (full-width letters, ligatures
and other compatibility forms become the plain letters) and then case-folded (``ß`` →
``ss``), so ``strasse`` finds ``Straße`` and ``ﬁle`` finds ``file``. The FTS5 tokenizer
then folds accents.

User queries are plain terms. Each whitespace-separated term is reduced to its word
tokens and quoted as an FTS5 phrase, and the phrases are joined with ``OR``: no
operator, column filter, ``*``, ``^``, quote, parenthesis or NUL in the query can
reach the FTS5 parser as syntax.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, NamedTuple

__all__ = ["Folded", "fold", "index_text", "match_expression", "normalize", "query_terms"]

# Han (with extensions and compatibility ideographs), kana, Hangul syllables and jamo,
# bopomofo, and the CJK symbols block's iteration marks.
_CJK_CLASS: Final = (
    "\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3040-\u309f\u30a0-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
_CJK_RUN: Final = re.compile(f"[{_CJK_CLASS}]+")
# What unicode61 keeps as token characters, near enough: letters, digits, marks.
# Anything else (including every FTS5 operator character) separates tokens.
_WORD: Final = re.compile(r"[^\W_]+")


def _bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _rewrite_cjk(text: str, *, trailing_unigram: bool) -> str:
    def repl(match: re.Match[str]) -> str:
        run = match.group()
        if len(run) == 1:
            return f" {run} "
        grams = _bigrams(run)
        if trailing_unigram:
            grams.append(run[-1])
        return " " + " ".join(grams) + " "

    return _CJK_RUN.sub(repl, text)


def normalize(text: str) -> str:
    """NFKC, then case-folded: the one form indexed text and query terms share."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


def index_text(text: str) -> str:
    """The text to store in the FTS5 column for ``text`` (normalized; CJK runs as
    bigrams)."""
    text = normalize(text)
    if not _CJK_RUN.search(text):
        return text
    return _rewrite_cjk(text, trailing_unigram=True)


def query_terms(query: str) -> list[str]:
    """The plain terms of a user query: whitespace-separated, NUL removed, normalized
    (`normalize`), de-duplicated."""
    seen: dict[str, None] = {}
    for raw in normalize(query.replace("\x00", " ")).split():
        if _WORD.search(raw):
            seen.setdefault(raw, None)
    return list(seen)


def _phrase(term: str) -> str | None:
    """One term as an FTS5 phrase (or prefix phrase), or None if it holds no word."""
    tokens: list[str] = []
    for match in _WORD.finditer(_rewrite_cjk(term, trailing_unigram=False)):
        tokens.append(match.group())
    if not tokens:
        return None
    # Tokens are letters/digits only: nothing inside the quotes can be syntax.
    phrase = '"' + " ".join(tokens) + '"'
    last = tokens[-1]
    if len(last) == 1 and _CJK_RUN.fullmatch(last):
        # A lone CJK character: match it at the start of any bigram (or as a unigram).
        phrase += " *"
    return phrase


def match_expression(query: str) -> str | None:
    """A safe FTS5 MATCH expression for a plain-terms query (None: no searchable term).

    Every term becomes a quoted phrase; the phrases are joined with ``OR`` so BM25
    ranks chunks holding more (and rarer) terms first.
    """
    phrases = [p for p in (_phrase(term) for term in query_terms(query)) if p is not None]
    if not phrases:
        return None
    return " OR ".join(dict.fromkeys(phrases))


class _FoldTable(dict[int, str]):
    """``str.translate``-style table: each character folded on first sight, then cached."""

    def __missing__(self, codepoint: int) -> str:
        base = unicodedata.normalize("NFKD", chr(codepoint))
        stripped = "".join(c for c in base if not unicodedata.combining(c))
        # Recomposed: a Hangul syllable decomposes into jamo and must stay one syllable.
        folded = unicodedata.normalize("NFC", stripped).casefold()
        if len(folded) != 1:
            _RESIZING.add(chr(codepoint))
        self[codepoint] = folded
        return folded


_FOLDABLE_RUN: Final = re.compile("([^\x00-\x7f\u3001-\u3029\uac00-\ud7a3\u4e00-\u9fff]+)")
"""A run of characters folding may change: not ASCII (which only lowercases), not CJK
punctuation (``、。「」``), a Hangul syllable or a CJK unified ideograph (which fold to
themselves; a test checks every one). The group keeps the runs in `re.split`'s
result."""
_RESIZING: Final[set[str]] = set()
"""Characters seen so far that fold to more or fewer than one character (``ß``, ``ﬁ``)."""
_FOLD: Final = _FoldTable()


class Folded(NamedTuple):
    """Folded text, and where each of its characters came from in the original."""

    text: str
    origin: list[int] | None
    """``origin[i]``: the original index of folded character ``i`` (one entry more, for
    the end); None when every character folded to exactly one."""

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span for the folded span ``start:end``."""
        if self.origin is None:
            return start, end
        if end <= start:
            return self.origin[start], self.origin[start]
        return self.origin[start], self.origin[end - 1] + 1


def fold(text: str) -> Folded:
    """Case-, accent- and compatibility-folded text (``Straße`` → ``strasse``, ``ﬁle``
    → ``file``), with the way back to the original's indexes.

    Used to find matched terms in the original text for snippets and highlights.
    """
    if text.isascii():
        return Folded(text.lower(), None)
    # Only the runs that can fold go through the table: str.translate looks each
    # character of a non-ASCII string up through a Python int (about 40 ns each), while
    # lower() folds ASCII, CJK punctuation, Hangul and CJK ideographs (which fold to
    # themselves) in C at memory speed. Finding those runs is a regex scan of about 10
    # ns a character, so only the lines that are not ASCII are scanned: a Latin chunk
    # with a CJK line or a curly quote folds 2-3 times faster so. Each character folds
    # on its own, so where the text is cut does not matter: at "\n" is cheapest. Only a
    # text with a character that changes length needs the map back.
    lines = text.split("\n")
    foldable: list[str] = []
    for number, line in enumerate(lines):
        if line.isascii():
            lines[number] = line.lower()
            continue
        runs = _FOLDABLE_RUN.split(line)
        if len(runs) == 1:  # nothing foldable: ASCII, Hangul and CJK ideographs
            lines[number] = line.lower()
            continue
        foldable += runs[1::2]
        runs[::2] = [run.lower() for run in runs[::2]]
        runs[1::2] = [run.translate(_FOLD) for run in runs[1::2]]
        lines[number] = "".join(runs)
    folded = "\n".join(lines)
    if len(folded) == len(text) and all(_RESIZING.isdisjoint(run) for run in foldable):
        return Folded(folded, None)
    return _fold_mapped(text)


def _fold_mapped(text: str) -> Folded:
    """`fold` for a text with a character that changes length (``ß``, ``…``), with
    the map back: only the foldable runs are walked character by character; the
    rest folds one to one with lower(), its map a range."""
    pieces: list[str] = []
    origin: list[int] = []
    start = 0
    for number, run in enumerate(_FOLDABLE_RUN.split(text)):
        if number % 2:
            for offset, char in enumerate(run, start):
                piece = _FOLD[ord(char)]
                pieces.append(piece)
                origin += [offset] * len(piece)
        else:
            pieces.append(run.lower())
            origin += range(start, start + len(run))
        start += len(run)
    origin.append(len(text))
    return Folded("".join(pieces), origin)
