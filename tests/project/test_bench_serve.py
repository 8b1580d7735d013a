"""bench.serve's ``--workers N`` row: the serve command itself, N processes on one port,
answering the bench's echo, and its ratio to the one-process fast path the right way up."""

from __future__ import annotations

import pytest

from bench._roundtrip_bridge import _http_server
from bench.serve import MODERN, WORKERS, _argv, _check, _free_port, _scaling, label


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
