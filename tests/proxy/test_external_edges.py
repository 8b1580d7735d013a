"""External stdio servers that misbehave cost only what they break: real processes.

The server is `tests/_raw_mcp_server.py`, a hand-written JSON-RPC server that writes
what the SDK never would (stray bytes, junk lines, broken tool lists) and starts
children that leave its group or session; over HTTP it runs under uvicorn.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from _process import free_port
from _raw_mcp_server import http_app

from nativemcp.protocol import ToolNameError
from nativemcp.proxy import RestartPolicy, ServerCrashed, ServerStartError, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

RAW = Path(__file__).parents[1] / "_raw_mcp_server.py"
ECHO = {"name": "echo", "inputSchema": {"type": "object"}}
PID = {"name": "pid", "inputSchema": {"type": "object"}}


def _raw(config: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(RAW), json.dumps(config)], "required": required}


def _pool(config: dict[str, Any], *, required: bool = True, **options: Any) -> WorkerPool:
    return WorkerPool(mcp_servers={"raw": _raw(config, required=required)}, builtins=[], **options)


async def _text(pool: WorkerPool, tool: str, **arguments: Any) -> str:
    with anyio.fail_after(20):
        response = await pool.call_tool(f"raw__{tool}", arguments, timeout=None)
    assert response.result is not None, response.error
    return str(response.result.content[0].text)  # type: ignore[union-attr]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone, it only awaits its reaper
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def _until(condition: Any) -> None:
    """Wait (bounded) for what another process makes true: no event crosses to here."""
    with anyio.fail_after(20):
        while not condition():  # noqa: ASYNC110 - the state lives in another process
            await anyio.sleep(0.02)


async def test_a_stray_non_utf8_byte_neither_wedges_the_server_nor_loses_an_answer() -> None:
    async with _pool({"stray_byte_on": "echo"}) as pool:
        pid = await _text(pool, "pid")
        for _ in range(3):
            # A line of one 0xff byte, then an answer holding the Latin-1 byte 0xe9.
            assert await _text(pool, "echo", text="STRAY") == "caf\ufffd"
        assert await _text(pool, "pid") == pid  # the same process: nothing restarted


async def test_binary_junk_before_initialize_is_skipped_and_the_server_starts() -> None:
    junk = "\x00\xff\xfe\x89PNG\r\n\x1a\n" + "\x80" * 300 + "\n"
    async with _pool({"junk_before_init": junk}, start_timeout=20) as pool:
        assert await _text(pool, "echo", text="after junk") == "after junk"


async def test_junk_lines_on_stdout_are_one_warning_line_not_a_traceback_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with _pool({"junk_lines": 50}) as pool:
        assert await _text(pool, "echo", text="fine") == "fine"
    junk = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(junk) == 1, [r.getMessage() for r in junk]
    assert "'raw'" in junk[0].getMessage() and "junk line 0" in junk[0].getMessage()
    assert "\n" not in junk[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


async def test_a_server_whose_stdout_ends_fails_its_call_at_once_and_is_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    async with _pool({"close_stdout_on": "echo"}, restart=RestartPolicy(backoff=0.01)) as pool:
        pid = await _text(pool, "pid")
        with anyio.fail_after(20), pytest.raises(ServerCrashed, match=r"'raw'.*'echo'"):
            await pool.call_tool("raw__echo", {"text": "x"}, timeout=None)
        assert await _text(pool, "pid") != pid  # the supervisor started a new process
    stopped = [
        r.getMessage() for r in caplog.records if "stopped (its stdout ended)" in r.getMessage()
    ]
    assert stopped and "'raw'" in stopped[0]


async def test_a_stdout_line_over_max_frame_ends_the_connection_saying_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    policy = RestartPolicy(backoff=0.01)
    config = {"endless_line_on": "echo"}
    async with _pool(config, restart=policy, max_frame=1_000_000) as pool:
        pid = await _text(pool, "pid")
        with anyio.fail_after(20), pytest.raises(ServerCrashed, match=r"'raw'.*'echo'"):
            await pool.call_tool("raw__echo", {"text": "x"}, timeout=None)
        assert await _text(pool, "pid") != pid  # the supervisor started a new process
    stopped = [r.getMessage() for r in caplog.records if "stopped" in r.getMessage()]
    assert stopped and "a stdout line of over 1000000 bytes" in stopped[0], stopped
    assert "raise max_frame" in stopped[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="waits on a pidfd")
async def test_a_server_that_exits_while_its_child_holds_stdout_is_a_crash_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The setsid child inherits the server's stdout: no end of stdout comes with the
    # server's exit. The exit itself ends the connection.
    caplog.set_level(logging.ERROR)
    pid_file = tmp_path / "grandchild"
    config = {"exit_on": "echo", "grandchild": "setsid", "grandchild_pid": str(pid_file)}
    async with _pool(config, restart=RestartPolicy(backoff=0.01)) as pool:
        await _until(pid_file.exists)
        try:
            pid = await _text(pool, "pid")
            with anyio.fail_after(20), pytest.raises(ServerCrashed, match=r"'raw'.*'echo'"):
                await pool.call_tool("raw__echo", {"text": "x"}, timeout=None)
            assert await _text(pool, "pid") != pid
        finally:
            # Each start of the server left one; the crashed one's is orphaned outside
            # the session before the close, out of the pool's reach.
            for line in (tmp_path / "grandchild.all").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(line), signal.SIGKILL)
    assert any("its process exited with code 3" in r.getMessage() for r in caplog.records)


async def test_an_optional_server_listing_a_tool_twice_loses_that_tool_not_the_pool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with _pool({"tools": [ECHO, ECHO, PID]}, required=False) as pool:
        names = {tool.name for tool in await pool.list_tools()}
        assert names == {"raw__pid"}
        assert (await _text(pool, "pid")).isdigit()
    assert any(
        "'raw'" in r.getMessage()
        and "'echo'" in r.getMessage()
        and "listed 2 times" in r.getMessage()
        for r in caplog.records
    )


async def test_a_required_server_listing_a_tool_twice_still_stops_the_start() -> None:
    with pytest.raises(ToolNameError, match="raw__echo"):
        async with _pool({"tools": [ECHO, ECHO, PID]}):
            pass


async def test_an_optional_server_with_one_invalid_input_schema_keeps_its_valid_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    broken = {"name": "broken", "inputSchema": {"type": 5}}
    async with _pool({"tools": [ECHO, broken, PID]}, required=False) as pool:
        names = {tool.name for tool in await pool.list_tools()}
        assert names == {"raw__echo", "raw__pid"}
        assert await _text(pool, "echo", text="still here") == "still here"
    warned = [r.getMessage() for r in caplog.records if "'broken'" in r.getMessage()]
    assert len(warned) == 1 and "'raw'" in warned[0] and "inputSchema" in warned[0]
    assert "\n" not in warned[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["fork", "setsid"])
async def test_a_grandchild_of_a_stdio_server_does_not_outlive_the_pool(
    tmp_path: Path, how: str
) -> None:
    pid_file = tmp_path / "grandchild"
    async with _pool({"grandchild": how, "grandchild_pid": str(pid_file)}) as pool:
        assert await _text(pool, "echo", text="up") == "up"
        await _until(pid_file.exists)
        grandchild = int(pid_file.read_text())
        assert not _gone(grandchild)
    try:
        await _until(lambda: _gone(grandchild))
    finally:
        if not _gone(grandchild):
            os.kill(grandchild, signal.SIGKILL)


@contextlib.asynccontextmanager
async def _http(config: dict[str, Any]) -> AsyncIterator[str]:
    """The raw server over Streamable HTTP on a free loopback port: its URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            http_app(config), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
        )
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        await _until(lambda: server.started)
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn runs on asyncio only
async def test_an_optional_http_server_loses_only_its_broken_tools(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    broken = {"name": "broken", "inputSchema": {"type": 5}}
    async with _http({"tools": [ECHO, broken, PID, PID]}) as url:
        entry = {"type": "http", "url": url, "required": False}
        async with WorkerPool(mcp_servers={"raw": entry}, builtins=[]) as pool:
            assert {tool.name for tool in await pool.list_tools()} == {"raw__echo"}
            assert await _text(pool, "echo", text="over http") == "over http"
    warned = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert any("'broken'" in m for m in warned) and any("'pid'" in m for m in warned)


async def test_a_pool_whose_start_fails_half_way_leaves_no_server_and_raises_the_error_alone(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    config = {
        "ok": _raw({"pid_file": str(pid_file)}),
        "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit('no')"]},
    }
    with anyio.fail_after(30), pytest.raises(ServerStartError, match="'broken'"):
        async with WorkerPool(mcp_servers=config, builtins=[]):
            pass
    assert _gone(int(pid_file.read_text()))
