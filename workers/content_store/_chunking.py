"""Splitting text into overlapping chunks of whole lines, with exact line ranges.

Every line of the text is in at least one chunk, including the sentence that fills a
chunk and a tail without final punctuation. A chunk holds consecutive lines,
up to a character and a line budget; the next chunk starts a few lines before the end
of the previous one, so a match that spans a boundary is still found whole. A single
line longer than the budget is split into pieces that all carry that line's number.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["Chunk", "chunk_lines", "split_lines"]

DEFAULT_MAX_CHARS: Final = 1200
"""Characters per chunk (a line longer than this is split)."""
DEFAULT_MAX_LINES: Final = 40
"""Lines per chunk."""
DEFAULT_OVERLAP_LINES: Final = 2
"""Lines repeated at the start of the next chunk."""


class Chunk(NamedTuple):
    """Consecutive lines of a text: ``start_line``..``end_line``, 1-based, inclusive."""

    text: str
    start_line: int
    end_line: int


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` (already ``\\n``-normalised); a final newline ends the last."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def chunk_lines(
    lines: list[str],
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_lines: int = DEFAULT_MAX_LINES,
    overlap_lines: int = DEFAULT_OVERLAP_LINES,
) -> list[Chunk]:
    """Cut ``lines`` into chunks; see the module docstring for the guarantees.

    Raises:
        ValueError: a budget is not positive, or the overlap is not below ``max_lines``.
    """
    if max_chars < 1 or max_lines < 1 or not 0 <= overlap_lines < max_lines:
        raise ValueError("chunk budgets must be positive and the overlap below max_lines")
    chunks: list[Chunk] = []
    count = len(lines)
    start = 0
    while start < count:
        line = lines[start]
        if len(line) > max_chars:
            # One oversized line: its pieces, then carry on after it without overlap.
            for offset in range(0, len(line), max_chars):
                chunks.append(Chunk(line[offset : offset + max_chars], start + 1, start + 1))
            start += 1
            continue
        end = start  # inclusive index of the chunk's last line
        size = len(line)
        while (
            end + 1 < count
            and end + 1 - start < max_lines
            and size + 1 + len(lines[end + 1]) <= max_chars
        ):
            end += 1
            size += 1 + len(lines[end])
        chunks.append(Chunk("\n".join(lines[start : end + 1]), start + 1, end + 1))
        if end + 1 >= count:
            break
        # Step back for the overlap, but only as far as still leaves room for the next
        # new line: every chunk adds at least one line not seen before.
        nxt = end + 1
        start = max(nxt - overlap_lines, start + 1)
        while start < nxt and (
            nxt - start + 1 > max_lines
            or sum(len(lines[i]) + 1 for i in range(start, nxt + 1)) - 1 > max_chars
        ):
            start += 1
    return chunks
