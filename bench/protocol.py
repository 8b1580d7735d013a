"""Decode + unwrap cost of a 20-item list result: nativemcp (msgspec) vs the SDK (pydantic).

Every contender starts from wire bytes of the same tool result — 20 items with a UUID,
a datetime and a few plain fields, as rich text plus ``structuredContent`` of
``{"result": [...]}`` (the official SDK's form of a list output) — and ends with a
``list`` of typed items whose ``added`` is a ``datetime`` and ``id`` a ``UUID``.

- pydantic (the baseline): ``mcp_types.CallToolResult.model_validate_json`` of the
  result, then ``TypeAdapter(list[PItem]).validate_python`` of ``structured_content``.
- nativemcp: ``unwrap(wire, list[Item])`` on the JSON-RPC response bytes (one typed
  pass), and ``unwrap(decode_response(wire), list[Item])`` (two steps), in JSON and
  msgpack; plus the frame a nativemcp worker sends for ``call_tool`` (msgpack with
  ``structuredResult``) and the value-only reply it sends for a typed method call (the
  envelope and ``structuredResult``, no text: what app code's calls decode).
- floor: msgspec decoding only the bare list, no envelope and no text: no decode +
  unwrap of the whole result can beat it.

The goal: one-pass unwrap within 1.25x the floor (pydantic's distance is shown too).

Run: ``python -m bench.protocol [--quick] [--json]``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any, Final

import mcp_types
import msgspec
import pydantic

from bench._report import emit_json, parse_args, print_table, ratio, time_interleaved
from nativemcp.protocol import (
    CallToolResult,
    NativeMCPResponse,
    decode_response,
    encode,
    structured_response,
    unwrap,
)

ITEMS: Final = 20
GOAL: Final = 1.25
"""One-pass unwrap at most this many times the floor's time."""
"""nativemcp's one-pass unwrap should be at least this many times faster than pydantic."""


class Item(msgspec.Struct):
    """One listed file, as application code receives it."""

    id: uuid.UUID
    name: str
    size: int
    score: float
    added: dt.datetime
    tags: list[str]


class PItem(pydantic.BaseModel):
    """The same item as a pydantic model, for the SDK path."""

    id: uuid.UUID
    name: str
    size: int
    score: float
    added: dt.datetime
    tags: list[str]


def _items() -> list[Item]:
    start = dt.datetime(2026, 1, 5, 9, 30, tzinfo=dt.UTC)
    return [
        Item(
            id=uuid.UUID(int=0x1234_5678_9ABC_DEF0 * (i + 1)),
            name=f"notes/report-{i:02d}.md",
            size=1_024 * (i + 1),
            score=round(1 / (i + 1), 4),
            added=start + dt.timedelta(hours=i),
            tags=["report", f"week-{i % 4}"],
        )
        for i in range(ITEMS)
    ]


def _text(items: list[Item]) -> str:
    lines = [f"{len(items)} files:"]
    lines += [
        f"{i}. {item.name} ({item.size:,} bytes, added {item.added:%Y-%m-%d %H:%M}, "
        f"score {item.score})"
        for i, item in enumerate(items, 1)
    ]
    return "\n".join(lines)


def _contenders() -> tuple[list[tuple[str, int, Callable[[], object]]], list[Item]]:
    items = _items()
    response = structured_response(_text(items), items, id=7)
    # The SDK form: no structuredResult, the list wrapped as {"result": [...]}.
    sdk_form: NativeMCPResponse[Any] = NativeMCPResponse(id=7, result=response.result)
    json_wire = encode(sdk_form)
    msgpack_wire = encode(sdk_form, format="msgpack")
    worker_frame = encode(response, format="msgpack")
    value_only: NativeMCPResponse[Any] = NativeMCPResponse(
        id=7, result=CallToolResult(content=[]), structured_result=items
    )
    value_frame = encode(value_only, format="msgpack")
    result_json = msgspec.json.encode(response.result)
    bare_list = msgspec.msgpack.encode(items)
    bare_decoder = msgspec.msgpack.Decoder(list[Item])
    adapter = pydantic.TypeAdapter(list[PItem])

    def pydantic_path() -> list[PItem]:
        result = mcp_types.CallToolResult.model_validate_json(result_json)
        return adapter.validate_python(result.structured_content["result"])

    contenders: list[tuple[str, int, Callable[[], object]]] = [
        ("pydantic CallToolResult + TypeAdapter", len(result_json), pydantic_path),
        ("nativemcp JSON, unwrap(bytes)", len(json_wire), lambda: unwrap(json_wire, list[Item])),
        (
            "nativemcp msgpack, unwrap(bytes)",
            len(msgpack_wire),
            lambda: unwrap(msgpack_wire, list[Item], format="msgpack"),
        ),
        (
            "nativemcp JSON, decode_response + unwrap",
            len(json_wire),
            lambda: unwrap(decode_response(json_wire), list[Item]),
        ),
        (
            "nativemcp msgpack, decode_response + unwrap",
            len(msgpack_wire),
            lambda: unwrap(decode_response(msgpack_wire, format="msgpack"), list[Item]),
        ),
        (
            "nativemcp worker frame (msgpack + structuredResult)",
            len(worker_frame),
            lambda: unwrap(worker_frame, list[Item], format="msgpack"),
        ),
        (
            "nativemcp value-only reply (typed call), unwrap(bytes)",
            len(value_frame),
            lambda: unwrap(value_frame, list[Item], format="msgpack"),
        ),
        (
            "floor: msgspec decode of the bare list (msgpack)",
            len(bare_list),
            lambda: bare_decoder.decode(bare_list),
        ),
    ]
    return contenders, items


def _check(contenders: list[tuple[str, int, Callable[[], object]]], items: list[Item]) -> None:
    """Every contender must produce the same items before its time means anything."""
    expected = msgspec.to_builtins(items)
    for name, _, fn in contenders:
        value = fn()
        got = (
            [msgspec.to_builtins(item.model_dump()) for item in value]
            if name.startswith("pydantic") and isinstance(value, list)
            else msgspec.to_builtins(value)
        )
        if got != expected:
            raise SystemExit(f"{name} decoded something else: {got!r:.200}")


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table (and one JSON line with ``--json``)."""
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "bench.protocol", argv)
    rounds, number = (21, 100) if args.quick else (101, 500)
    contenders, items = _contenders()
    _check(contenders, items)
    medians = time_interleaved([fn for _, _, fn in contenders], rounds=rounds, number=number)
    baseline = medians[0]
    ratios = [ratio(baseline, us) for us in medians]
    rows = [
        [name, size, us, r]
        for (name, size, _), us, r in zip(contenders, medians, ratios, strict=True)
    ]
    print_table(
        f"decode + unwrap of a {ITEMS}-item list result (median of {rounds} rounds "
        f"x {number} calls, interleaved)",
        ["contender", "bytes", "median us", "x faster than pydantic"],
        rows,
    )
    floor = medians[-1]
    # The one-pass rows: unwrap(bytes) of the full response (JSON, msgpack) and of the
    # value-only reply a typed call gets.
    full = min(medians[1:3]) / floor
    value = medians[-2] / floor
    best = min(full, value)
    verdict = "met" if best <= GOAL else "NOT met"
    print(
        f"goal: one-pass unwrap <= {GOAL:g}x the floor: {verdict} (value-only reply "
        f"{value:.2f}x, full response {full:.2f}x; pydantic {baseline / floor:.1f}x)"
    )
    if args.json:
        emit_json(
            {
                "bench": "protocol",
                "quick": args.quick,
                "items": ITEMS,
                "unit": "us",
                "goal_x_floor": GOAL,
                "value_only_x_floor": round(value, 3),
                "full_response_x_floor": round(full, 3),
                "goal_met": best <= GOAL,
                "contenders": [
                    {"name": name, "bytes": size, "median_us": round(us, 3), "ratio": round(r, 2)}
                    for (name, size, _), us, r in zip(contenders, medians, ratios, strict=True)
                ],
            }
        )


if __name__ == "__main__":
    main()
