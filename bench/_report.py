"""The small helper every bench shares: arguments, medians, a table, one JSON line.

Every bench takes ``--quick`` (finish in well under 30 s) and ``--json`` (print one JSON
object on the last line of stdout, after the human-readable table).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "emit_json",
    "median_us",
    "parse_args",
    "print_table",
    "ratio",
    "time_interleaved",
    "time_us",
]


def parse_args(
    description: str,
    argv: Sequence[str] | None = None,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """Parse the common ``--quick`` and ``--json`` flags (and a bench's own, added by
    ``extra``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="fewer rounds; under 30 s")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on the last line of stdout"
    )
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def median_us(samples: Iterable[float]) -> float:
    """The median of ``samples`` (seconds) in microseconds.

    Raises:
        ValueError: ``samples`` is empty.
    """
    values = list(samples)
    if not values:
        raise ValueError("median of no samples")
    return statistics.median(values) * 1e6


def time_us(fn: Callable[[], object], *, rounds: int, number: int = 1) -> float:
    """Median microseconds per call of ``fn`` over ``rounds`` rounds of ``number`` calls."""
    samples: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return median_us(samples)


def time_interleaved(
    fns: Sequence[Callable[[], object]], *, rounds: int, number: int = 1
) -> list[float]:
    """Median microseconds per call of each of ``fns``, timed in turn within every round.

    Interleaving spreads machine noise (other processes, frequency changes) over all
    contenders alike, so their ratios hold even when the absolute times drift.
    """
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, bucket in zip(fns, samples, strict=True):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            bucket.append((time.perf_counter() - start) / number)
    return [median_us(bucket) for bucket in samples]


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``, guarding a zero baseline (returns ``inf``)."""
    return value / baseline if baseline else float("inf")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print a plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [
        max([len(header), *(len(row[i]) for row in cells if i < len(row))])
        for i, header in enumerate(headers)
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            value.ljust(width) if i == 0 else value.rjust(width)
            for i, (value, width) in enumerate(zip(values, widths, strict=False))
        )

    print(title)
    print(line(list(headers)))
    print("  ".join("-" * width for width in widths))
    for row in cells:
        print(line(row))


def emit_json(obj: Any) -> None:
    """Print ``obj`` as one JSON object on one line (the last line of a ``--json`` run)."""
    print(json.dumps(obj, separators=(",", ":"), sort_keys=True, default=str), flush=True)
