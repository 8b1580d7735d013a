"""A light English stemmer for tool search: ``files``/``file``, ``reading``/``read``.

Tool descriptions and the tasks people type use different forms of the same word ("list
the notes" for ``list_note``, "reading a file" for ``read_file``). Both sides are
stemmed the same way, so only the stem has to match. The rules are few and general: a
plural (``s``, ``es`` after ``ch``/``sh``/``x``/``ss``, ``ies``) as in Harman's
"S-stemmer" (1991), and ``ing``/``ed`` with a doubled consonant undone (``running`` →
``run``). On the tuning half of ``bench.tools`` also stripping a final ``e``
(``create``/``created``) did no better. Only ASCII words of more than three letters are
stemmed: other scripts (CJK bigrams, accented words) and short words (``has``, ``css``)
stay as they are.
"""

from __future__ import annotations

from typing import Final

__all__ = ["stem"]

_SUFFIXES: Final = (
    ("ies", "y"),
    ("sses", "ss"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("xes", "x"),
    ("ing", ""),
    ("ed", ""),
    ("s", ""),
)
"""Endings tried in order (the first that fits wins) and what replaces each."""
_KEEP_S: Final = ("ss", "us", "is")
"""Words ending so are not plurals (``class``, ``status``, ``analysis``)."""
_MIN_STEM: Final = 3
"""The shortest stem left (``uses`` is not cut to ``us``)."""


def stem(token: str) -> str:
    """``token`` (a folded, lower-case token) without a plural or verb ending."""
    if not token.isascii() or len(token) <= _MIN_STEM:
        return token
    for suffix, replacement in _SUFFIXES:
        if not token.endswith(suffix) or len(token) - len(suffix) < _MIN_STEM:
            continue
        if suffix == "s" and token.endswith(_KEEP_S):
            return token
        base = token[: -len(suffix)] + replacement
        # running -> run, stopped -> stop; but not fill, pass, buzz.
        if suffix in ("ing", "ed") and base[-1] == base[-2] and base[-1] not in "lsz":
            base = base[:-1]
        return base
    return token
