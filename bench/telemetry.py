"""What OpenTelemetry costs a typed call: absent, present but not configured, configured.

One typed proxy call (``list_items``, the 20-item list of `bench.roundtrip`'s
``nativemcp_value``) to a worker process, in three set-ups, each in a process of its own
(OpenTelemetry's global provider is once per process), measured in turn round after
round so machine noise falls on all three alike:

- ``absent``: ``import opentelemetry`` fails, as when it is not installed;
- ``not_configured``: the API is imported but no provider is set (the app installed the
  ``otel`` extra, or an SDK that depends on the API, and set nothing up): the goal is to
  cost what ``absent`` costs (within 2%);
- ``configured``: an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` and an
  exporter that discards: the client span, the trace context on the wire, the worker's
  server span recorded, sent back and re-emitted, the batch processor's thread.

CPU time per call, caller (every thread, the batch processor's included) plus worker,
over ``--calls`` calls in a row with both processes on one CPU (`bench._roundtrip_cpu`);
the median of 3 rounds (1 with ``--quick``).

Run: ``python -m bench.telemetry [--quick] [--json] [--calls N]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from typing import Any, Final

import anyio

from bench._report import emit_json, parse_args, print_table, ratio
from bench._roundtrip_cpu import cpu_us_per_call

MODES: Final = ("absent", "not_configured", "configured")
"""The set-ups, in the order each round measures them."""

_WARM_UP: Final = 500
"""Calls before measuring (the worker's first traced call imports the SDK)."""


def _set_up(mode: str) -> None:
    """This process's OpenTelemetry as ``mode`` says (before the pool starts)."""
    if mode == "absent":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # import fails
        return
    from opentelemetry import trace

    if mode == "not_configured":
        return
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Discard(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Discard()))
    trace.set_tracer_provider(provider)


async def _measure(calls: int) -> dict[str, float]:
    from nativemcp.proxy import WorkerPool

    async with WorkerPool(["bench._roundtrip_servers:server"], timeout=60) as pool:
        bench = pool.server("bench")
        method = bench.list_items
        pid = int(await bench.pid())
        for _ in range(_WARM_UP):
            await method()
        caller, worker = await cpu_us_per_call(method, pid, calls, one_cpu_only=True)
    return {"caller_us": caller, "worker_us": worker, "cpu_us": caller + worker}


def _child(mode: str, calls: int) -> None:
    _set_up(mode)
    print(json.dumps(anyio.run(_measure, calls)))


def _run(mode: str, calls: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.telemetry", "--child", mode, "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calls", type=int, default=None, help="calls per measurement")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)


def cli(argv: Sequence[str] | None = None) -> None:
    """Run the bench (see the module docstring)."""
    args = parse_args("OpenTelemetry's cost on a typed call", argv, _options)
    calls = args.calls or (3_000 if args.quick else 20_000)
    if args.child:
        _child(args.child, calls)
        return
    rounds = 1 if args.quick else 3
    samples: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for _ in range(rounds):
        for mode in MODES:
            samples[mode].append(_run(mode, calls))
    median = {
        mode: {key: statistics.median(s[key] for s in runs) for key in runs[0]}
        for mode, runs in samples.items()
    }
    base = median["absent"]["cpu_us"]
    print_table(
        f"typed call, CPU µs per call (caller + worker, one CPU; median of {rounds} x "
        f"{calls} calls)",
        ["set-up", "caller µs", "worker µs", "total µs", "x absent"],
        [
            [mode, m["caller_us"], m["worker_us"], m["cpu_us"], ratio(m["cpu_us"], base)]
            for mode, m in median.items()
        ],
    )
    facts = {
        "not_configured within 2% of absent": median["not_configured"]["cpu_us"] <= base * 1.02
    }
    for fact, holds in facts.items():
        print(f"{'ok ' if holds else 'NOT'} {fact}")
    if args.json:
        result: dict[str, Any] = {
            "calls": calls,
            "rounds": rounds,
            "cpu_us_per_call": {mode: round(m["cpu_us"], 2) for mode, m in median.items()},
            "caller_us_per_call": {mode: round(m["caller_us"], 2) for mode, m in median.items()},
            "worker_us_per_call": {mode: round(m["worker_us"], 2) for mode, m in median.items()},
            "x_absent": {mode: round(ratio(m["cpu_us"], base), 3) for mode, m in median.items()},
            "facts": facts,
        }
        emit_json(result)


if __name__ == "__main__":
    cli()
