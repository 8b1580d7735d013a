"""Chunk rows in COPY's text format, written directly: the adapters' per-value cost
dominated ingest (`_pg` writes an item's chunks, `_pg_schema` re-indexes them).
"""

from __future__ import annotations

from typing import Final

from nativemcp.workers._database import escape_text

__all__ = ["copy_text", "token_text"]

# The backslash first, so the escapes written after it are not escaped again.
_COPY_ESCAPES: Final = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def token_text(tokens: list[str]) -> str:
    """A chunk's tokens in order, each between spaces (a text, not an array: parsing
    an array of them took half the write path's time in PostgreSQL); a search of the
    pending tail splits it rather than tokenizing the chunk's text again."""
    return " " + " ".join(tokens) + " "


def copy_text(text: str) -> str:
    """``text`` as one field of COPY's text format (NUL escaped as the adapters do)."""
    text = escape_text(text)
    # str.replace per special character: a translate table costs a lookup per
    # character, a sixth of the write path's time.
    for special, escaped in _COPY_ESCAPES:
        if special in text:
            text = text.replace(special, escaped)
    return text
