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

from nativemcp.protocol import ImageContent

from ._budget import fit_items, fit_lines
from ._images import oversize, scale_down
from ._kept import Unit
from ._render import Extra, ToolOutput
from ._shape import json_lines, summarise
from ._tokens import count_tokens

__all__ = ["Whole", "cut_output", "to_keep"]


class Whole(NamedTuple):
    """What is kept of a result over its budget."""

    lines: list[str]
    unit: Unit
    text_over: bool = True
    """Whether the text is over the budget (else only an image is over its cap)."""
    images: tuple[ImageContent, ...] = ()
    """Every image of the result, in order, when one is to be scaled down."""


def _structured(output: ToolOutput) -> bool:
    """Whether ``output`` is a JSON value with nothing beside it but images."""
    return output.kind == "json" and all(extra.image is not None for extra in output.extras)


def to_keep(output: ToolOutput, budget: int) -> Whole | None:
    """What to keep of ``output`` when its text is over ``budget`` or an image over
    its cap (`oversize`); None when it fits."""
    text = output.text
    # A token is one character at least: a text no longer than the budget fits.
    text_over = len(text) > budget and count_tokens(text) > budget
    images = tuple(extra.image for extra in output.extras if extra.image is not None)
    if not text_over and not any(oversize(image) for image in images):
        return None
    if _structured(output):
        lines, _ = json_lines(output.value)
        unit: Unit = "item" if isinstance(output.value, list) else "line"
        return Whole(lines, unit, text_over, images)
    parts = [output.body, *(extra.note for extra in output.extras if extra.image is None)]
    lines = "\n".join(part for part in parts if part).split("\n")
    return Whole(lines, "line", text_over, images)


def cut_output(output: ToolOutput, whole: Whole, budget: int, result_id: str) -> ToolOutput:
    """What the model reads of ``output`` (kept whole as ``whole`` under ``result_id``):
    never over ``budget``; images stay beside it, each with its one-line note, those
    over their cap scaled down."""
    output = _scaled(output, result_id)
    if not whole.text_over and count_tokens(output.text) <= budget:
        return output
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


def _scaled(output: ToolOutput, result_id: str) -> ToolOutput:
    """``output`` with each image over its cap scaled down (numbered from 1 among the
    result's images, as ``read_result(id, image=N)`` reads the originals)."""
    extras = []
    number = 0
    for extra in output.extras:
        if extra.image is not None:
            number += 1
            if oversize(extra.image):
                scaled = scale_down(extra.image, number, result_id)
                if scaled is not None:
                    extra = Extra(scaled.note, scaled.image, with_image=True)
        extras.append(extra)
    return output._replace(extras=tuple(extras))
