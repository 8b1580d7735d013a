"""A rendered tool result fitted to its token budget: what is kept, and what is shown.

`to_keep` says whether a `ToolOutput` is over its budget, and if so what to keep of
it (`Whole`: its lines, one JSON item to a line for a list). `cut_output` is what the
model reads instead, once the whole is kept under an id: a text's first whole lines,
a JSON list's first whole items, a JSON object summarised by shape (`summarise`), each
with the line that says what was left out and how to read it. A result within its
budget is never touched (`to_keep` says None and the caller sends it as it is).
"""

from __future__ import annotations

from typing import NamedTuple

from ._budget import fit_items, fit_lines
from ._kept import Unit
from ._render import ToolOutput
from ._shape import json_lines, summarise
from ._tokens import count_tokens

__all__ = ["Whole", "cut_output", "to_keep"]


class Whole(NamedTuple):
    """What is kept of a result over its budget."""

    lines: list[str]
    unit: Unit


def _structured(output: ToolOutput) -> bool:
    """Whether ``output`` is a JSON value with nothing beside it but images."""
    return output.kind == "json" and all(extra.image is not None for extra in output.extras)


def to_keep(output: ToolOutput, budget: int) -> Whole | None:
    """What to keep of ``output`` when it is over ``budget``; None when it fits."""
    if count_tokens(output.text) <= budget:
        return None
    if _structured(output):
        lines, _ = json_lines(output.value)
        return Whole(lines, "item" if isinstance(output.value, list) else "line")
    parts = [output.body, *(extra.note for extra in output.extras if extra.image is None)]
    return Whole("\n".join(part for part in parts if part).split("\n"), "line")


def cut_output(output: ToolOutput, whole: Whole, budget: int, result_id: str) -> ToolOutput:
    """What the model reads of ``output`` (kept whole as ``whole`` under ``result_id``):
    never over ``budget``; images stay beside it, each with its one-line note."""
    images = tuple(extra for extra in output.extras if extra.image is not None)
    notes = "\n".join(extra.note for extra in images)
    room = budget - (count_tokens(notes) + 1 if notes else 0)
    if _structured(output) and isinstance(output.value, list):
        body, shown = fit_items(whole.lines, room, result_id=result_id, total_bytes=_size(whole))
        if not shown:
            body = summarise(output.value, room, result_id=result_id)
    elif _structured(output):
        body = summarise(output.value, room, result_id=result_id)
    else:
        body = fit_lines(whole.lines, room, result_id=result_id)
    if output.kind == "error":
        return ToolOutput("error", body, {"message": body}, images)
    return ToolOutput("text", body, None, images)


def _size(whole: Whole) -> int:
    return sum(len(line.encode()) + 1 for line in whole.lines) + 1
