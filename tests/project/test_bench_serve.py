"""bench.serve's ``--workers N`` row: the serve command itself, N processes on one port,
answering the bench's echo, and its ratio to the one-process fast path the right way up;
every row on each of uvicorn's HTTP protocols, and the goal line against each floor."""

from __future__ import annotations

import pytest

from bench._roundtrip_bridge import _http_server
from bench.serve import (
    HTTP,
    MODERN,
    WORKERS,
    _argv,
    _check,
    _free_port,
    _goal,
    _scaling,
    label,
)


@pytest.mark.real_process
def test_the_workers_row_serves_the_benchs_echo_from_n_processes() -> None:
    port = _free_port()
    argv = _argv(WORKERS, port, 2)
    assert argv[argv.index("--workers") + 1] == "2"
    with _http_server(argv, port):
        _check(port, "tools/call", MODERN)  # a result, not an error, or SystemExit
        _check(port, "tools/list", MODERN)


def test_the_workers_row_is_named_for_its_process_count() -> None:
    assert label(WORKERS, 3) == "nativemcp serve --workers 3 (fast path)"
    assert label("fast", 3) == "nativemcp serve (fast path)"


def test_the_scaling_line_puts_the_workers_row_over_the_one_process_row() -> None:
    one = {"calls_per_s": 1000.0, "cpu_us_per_call": 400.0}
    many = {"calls_per_s": 1500.0, "cpu_us_per_call": 500.0}
    line = _scaling({"fast": one, WORKERS: many}, 2)
    assert line is not None
    assert line.startswith("--workers 2: 1.50x the one process's calls/s, 1.25x its CPU")
    assert _scaling({"fast": one}, 2) is None


@pytest.mark.real_process
@pytest.mark.parametrize("http", HTTP)
@pytest.mark.parametrize("kind", ["fast", "floor"])
def test_the_fast_path_and_the_floor_answer_on_each_http_protocol(kind: str, http: str) -> None:
    port = _free_port()
    with _http_server(_argv(kind, port, 1, http), port):
        _check(port, "tools/call", MODERN)


def test_the_goal_line_sets_the_fast_path_against_each_protocols_floor() -> None:
    def row(cpu: float) -> dict[str, float]:
        return {"cpu_us_per_call": cpu, "calls_per_s": 1.0}

    results = {
        "tools/call": {
            "httptools": {"fast": row(150.0), "floor": row(50.0)},
            "h11": {"fast": row(300.0), "floor": row(100.0)},
        },
        "tools/list": {"httptools": {"fast": row(60.0)}},
    }
    assert _goal(results, "tools/call") == (
        "tools/call: the fast path's CPU per call is 3.00x the httptools floor's, "
        "1.50x the h11 floor's (goal: at most 2.0x)"
    )
    assert _goal(results, "tools/list").startswith(
        "tools/list: the fast path's CPU per call is 1.20x the httptools floor's, 0.60x"
    )
