"""Documented promises that had no test: shutdown escalation, restart backoff, tracebacks
in the log, the bench command-line contract, and the default limits the docs pages state."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import multiprocess
import pytest
from _pages import page_text
from _process import alive

from nativemcp.protocol.wire import DEFAULT_MAX_FRAME
from nativemcp.proxy import DEFAULT_TIMEOUT, RestartPolicy, ServerClosed, WorkerPool
from nativemcp.proxy.codemode import DEFAULT_LIMITS
from nativemcp.workers.content_store import ContentStoreOptions
from nativemcp.workers.workspace._options import WorkspaceOptions

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


ROOT = Path(__file__).parents[2]
_WS = WorkspaceOptions()
_CS = ContentStoreOptions()


@pytest.mark.real_process
async def test_closing_the_pool_kills_a_worker_that_ignores_the_shutdown_message(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "blocking"
    async with WorkerPool(["_servers:server"], timeout=0) as pool:
        testing = pool.server("testing")
        pid = await testing.pid()
        async with anyio.create_task_group() as tg:

            async def block() -> None:
                # The worker's event loop is blocked: it never reads the shutdown message.
                with pytest.raises(ServerClosed):
                    await testing.block_inline(seconds=120, marker=str(marker))

            tg.start_soon(block)
            with anyio.fail_after(30):
                while not marker.exists():  # noqa: ASYNC110 - a file from another process
                    await anyio.sleep(0.02)
            with anyio.fail_after(30):
                await pool.aclose()  # shutdown message → grace → terminate → kill
    assert not alive(pid)


@pytest.mark.real_process
async def test_restarts_back_off_doubling_up_to_the_maximum(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = RestartPolicy(max_restarts=10, backoff=0.01, max_backoff=0.04, healthy_after=600)
    with caplog.at_level(logging.ERROR, logger="nativemcp.worker"):
        async with WorkerPool(["_servers:server"], restart=policy, timeout=20) as pool:
            testing = pool.server("testing")
            for _ in range(4):
                pid = await testing.pid()
                os.kill(pid, signal.SIGKILL)
                with anyio.fail_after(20):
                    while True:
                        try:
                            if await testing.pid() != pid:
                                break
                        except Exception:
                            continue
    waits = re.findall(r"restarting in (\d+\.\d+) s", caplog.text)
    assert waits == ["0.01", "0.02", "0.04", "0.04"]


@pytest.mark.real_process
async def test_a_raising_tools_traceback_reaches_the_parents_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        async with WorkerPool(["_servers:server"], timeout=20) as pool:
            response = await pool.server("testing").call_tool("fail", {"message": "disk full"})
            assert response.result is not None and response.result.is_error
            await pool.server("testing").ping()  # the log frame has arrived by now
    records = [r for r in caplog.records if "disk full" in r.getMessage()]
    assert records, caplog.text
    message = records[0].getMessage()
    assert "Traceback (most recent call last)" in message
    assert "RuntimeError: disk full" in message
    assert getattr(records[0], "worker", None) == "testing"


@pytest.mark.timeout(120)
def test_a_bench_with_quick_and_json_prints_one_json_object_last() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.protocol", "--quick", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=110,
    )
    last = done.stdout.strip().splitlines()[-1]
    report = json.loads(last)
    assert isinstance(report, dict) and report["bench"] == "protocol"
    assert report["contenders"]


RELIABILITY = "docs/guides/reliability.md"
WORKSPACE = "docs/guides/workspace.md"
CONTENT_STORE = "docs/guides/content-store.md"
CODE_MODE = "docs/guides/code-mode.md"


@pytest.mark.parametrize(
    ("page", "claim", "value", "expected"),
    [
        (RELIABILITY, "(`WorkerPool(timeout=…)`, 30 s unless set", DEFAULT_TIMEOUT, 30),
        (WORKSPACE, "Files over 10 MiB are neither read nor written", _WS.max_read_bytes, 10 << 20),
        (WORKSPACE, "`max_read_bytes`,\n`max_write_bytes`", _WS.max_write_bytes, 10 << 20),
        (WORKSPACE, "`grep_timeout` seconds, default 5", _WS.grep_timeout, 5),
        (
            WORKSPACE,
            "(default 30 s, at most `max_shell_timeout`)",
            _WS.default_shell_timeout,
            30,
        ),
        (WORKSPACE, "first 64 KiB (`max_output_bytes`)", _WS.max_output_bytes, 64 << 10),
        (CONTENT_STORE, "50 MiB per file", _CS.max_file_bytes, 50 << 20),
        (CONTENT_STORE, "10 MiB of text per item", _CS.max_text_bytes, 10 << 20),
        (CONTENT_STORE, "up to 40 lines", _CS.chunk_max_lines, 40),
        (CONTENT_STORE, "1,200 characters", _CS.chunk_max_chars, 1200),
        (CONTENT_STORE, "2-line\noverlap", _CS.chunk_overlap_lines, 2),
        (CONTENT_STORE, "at most 2,000 characters", _CS.max_query_chars, 2000),
        (CONTENT_STORE, "64 distinct terms", _CS.max_query_terms, 64),
        (RELIABILITY, "64 MiB frames", DEFAULT_MAX_FRAME, 64 << 20),
        (RELIABILITY, "`max_restarts=5` in `window=60` s", RestartPolicy().max_restarts, 5),
        (RELIABILITY, "healthily for `healthy_after=30` s", RestartPolicy().healthy_after, 30),
        (CODE_MODE, "| `duration` | 30 s |", DEFAULT_LIMITS.duration, 30),
        (CODE_MODE, "| `memory` | 64 MiB |", DEFAULT_LIMITS.memory, 64 << 20),
        (CODE_MODE, "| `recursion` | 200 |", DEFAULT_LIMITS.recursion, 200),
        (CODE_MODE, "| `output` | 64 KiB |", DEFAULT_LIMITS.output, 64 << 10),
        (CODE_MODE, "| `calls` | 200 |", DEFAULT_LIMITS.calls, 200),
    ],
)
def test_the_docs_state_the_default_limits_the_code_has(
    page: str, claim: str, value: float, expected: float
) -> None:
    assert claim in page_text(page)
    assert value == expected


def test_no_worker_is_left_from_these_tests() -> None:
    assert multiprocess.active_children() == []
