"""``serve --code-mode``: the official SDK client against real serve (Streamable HTTP and
stdio, real worker processes): three meta-tools that find the served tools, describe
them as Python stubs and run a program over them, within the profile."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from _client_answers import model_says_42
from _mcp_http import serving
from _process import free_port, wait_listening
from _scripts import venv_script
from _task_client import create_task
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import Tool
from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

TESTS = Path(__file__).parents[2]
SERVERS = ["_serve_servers:server", "_serve_servers:other"]
PROGRAM = (
    "import asyncio\n"
    "a, b = await asyncio.gather(shapes__move(point={'x': 1, 'y': 2}, dx=3), "
    "shapes__move(point={'x': 0, 'y': 0}))\n"
    "print(a['x'] + b['x'], await other__ping_other())\n"
    "len(await shapes__corners(size=2))"
)


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_code_mode_lists_three_meta_tools_that_search_describe_and_run_a_program() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == ["search_tools", "describe_tools", "run_code"]
                assert listed[2].input_schema["required"] == ["code"]

                found = _text(await client.call_tool("search_tools", {"query": "move a point"}))
                assert "- shapes__move: Move a point right by dx." in found
                stubs = _text(await client.call_tool("describe_tools", {"names": ["shapes__move"]}))
                assert stubs == (
                    "async def shapes__move(point:{x:int,y:int},dx:int=1)->{x:int,y:int}:"
                    '"""Move a point right by dx."""\n'
                )
                ran = await client.call_tool("run_code", {"code": PROGRAM})
                assert not ran.is_error
                assert _text(ran) == "5 pong\n4"
                assert ran.structured_content is not None
                assert ran.structured_content["value"] == 4
                names = [c["name"] for c in ran.structured_content["calls"]]
                assert sorted(names) == [
                    "other__ping_other",
                    "shapes__corners",
                    "shapes__move",
                    "shapes__move",
                ]

                refused = await client.call_tool(
                    "run_code", {"code": "await shapes__refuse(reason='no way')"}
                )
                assert refused.is_error and "shapes__refuse: no way" in _text(refused)
                unknown = await client.call_tool("describe_tools", {"names": ["shapes__nope"]})
                assert unknown.is_error and "no tool named 'shapes__nope'" in _text(unknown)
                bad = await client.call_tool("run_code", {})
                assert bad.is_error and "needs 'code'" in _text(bad)


async def test_a_program_reaches_only_the_tools_of_the_profile() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    profile = ToolProfile(tools=("shapes__move",), code_mode=True)
    async with serving(http_app(pool, profile=profile)) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                moved = await client.call_tool(
                    "run_code", {"code": "(await shapes__move(point={'x': 1, 'y': 1}))['x']"}
                )
                assert _text(moved) == "2"
                left_out = await client.call_tool("run_code", {"code": "await other__ping_other()"})
                assert left_out.is_error
                assert "NameError: name 'other__ping_other' is not defined" in _text(left_out)
                found = _text(await client.call_tool("search_tools", {"query": "pong"}))
                assert "other__ping_other" not in found


async def test_the_command_line_serves_code_mode_over_stdio() -> None:
    # As a host starts it: the console script, the server file, the flag.
    nativemcp = str(Path(sys.executable).with_name("nativemcp"))
    server = str(TESTS / "_serve_servers.py:server")
    params = StdioServerParameters(
        command=nativemcp,
        args=["serve", server, "--code-mode", "--code-limit", "calls=1"],
        cwd=str(TESTS),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert listed == ["search_tools", "describe_tools", "run_code"]
            program = "p = await shapes__move(point={'x': 1, 'y': 1}, dx=2)\nprint(p)"
            ran = await client.call_tool("run_code", {"code": program})
            assert _text(ran) == "{'x': 3, 'y': 1}\n"
            twice = await client.call_tool("run_code", {"code": program + "\n" + program})
            assert twice.is_error and "calls limit (1)" in _text(twice)


async def test_the_meta_tools_are_not_run_as_tasks() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", mode="legacy") as client:
                listed = (await client.list_tools()).tools
                assert all(tool.execution is None for tool in listed)
                with pytest.raises(MCPError, match="does not support task-augmented calls"):
                    await create_task(client, "run_code", {"code": "print(1)"})
                ran = await client.call_tool("run_code", {"code": "print(1)"})
                assert _text(ran) == "1\n"


async def test_a_program_cut_at_shutdown_answers_a_json_rpc_error(tmp_path: Path) -> None:
    port = free_port()
    marker = tmp_path / "started"
    argv = ["serve", "--transport", "http", "--port", str(port), "--grace", "0.5"]
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [venv_script("nativemcp"), *argv, "--code-mode", "_servers:server"], cwd=TESTS
    )
    program = f"await testing__block_inline(seconds=60, marker={str(marker)!r})"
    outcome: list[BaseException] = []
    try:
        wait_listening(port, process)
        with anyio.fail_after(60):
            try:
                async with (
                    Client(f"http://127.0.0.1:{port}/mcp") as client,
                    anyio.create_task_group() as tg,
                ):

                    async def run() -> None:
                        try:
                            await client.call_tool("run_code", {"code": program})
                        except MCPError as exc:
                            outcome.append(exc)

                    await client.list_tools()
                    tg.start_soon(run)
                    while not marker.exists():  # noqa: ASYNC110 - a file from another process
                        await anyio.sleep(0.02)
                    process.send_signal(signal.SIGTERM)
            except* httpx2.ConnectError:
                pass  # the client's goodbye, sent after the server has gone
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    (cut,) = outcome
    assert isinstance(cut, MCPError)
    assert cut.error.data == {"reason": "shutting_down"}


async def test_a_tools_request_from_inside_a_program_reaches_a_2025_11_25_client() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    program = "print(await shapes__ask_model(question='?'))"
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            async with Client(
                f"{base}/mcp", sampling_callback=model_says_42, mode="legacy"
            ) as client:
                asked = await client.call_tool("run_code", {"code": program})
                assert _text(asked) == "model says 42\n"
            # 2026-07-28 would suspend the call for the answer: a program cannot wait so.
            async with Client(f"{base}/mcp", sampling_callback=model_says_42) as client:
                refused = await client.call_tool("run_code", {"code": program})
                assert refused.is_error and "shapes__ask_model" in _text(refused)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_inner_calls_progress_reaches_the_run_code_caller_naming_the_call(
    mode: Literal["legacy", "auto"],
) -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    program = "await shapes__count(steps=2)\nawait shapes__count(steps=1)\nprint('counted')"
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp", mode=mode) as client:
                ran = await client.call_tool(
                    "run_code", {"code": program}, progress_callback=on_progress
                )
                assert _text(ran) == "counted\n"
                # Each call counts from zero; the run's values only grow.
                assert seen == [
                    (1, None, "shapes__count: step 1"),
                    (2, None, "shapes__count: step 2"),
                    (3, None, "shapes__count: step 1"),
                ]
                # Without a progress token nothing is sent, and the run is the same.
                quiet = await client.call_tool("run_code", {"code": program})
                assert _text(quiet) == "counted\n" and len(seen) == 3


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_an_inner_calls_log_messages_reach_the_run_code_caller_at_its_level() -> None:
    pool = WorkerPool(SERVERS, timeout=20)
    heard: list[tuple[str, Any, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        heard.append((params.level, params.data, params.logger))

    run = {"code": "await shapes__count(steps=2)\nprint('counted')"}
    counted = [("info", f"counted {step}", "shapes__count") for step in (1, 2)]
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            # 2025-11-25: every level until the connection's logging/setLevel.
            async with Client(f"{base}/mcp", mode="legacy", logging_callback=on_log) as client:
                assert _text(await client.call_tool("run_code", run)) == "counted\n"
                assert heard == counted
                await client.set_logging_level("warning")
                assert _text(await client.call_tool("run_code", run)) == "counted\n"
                assert heard == counted
            heard.clear()
            # 2026-07-28: the level the request names in _meta; none named, none sent.
            async with Client(f"{base}/mcp", log_level="info", logging_callback=on_log) as client:
                assert _text(await client.call_tool("run_code", run)) == "counted\n"
                assert heard == counted
            async with Client(f"{base}/mcp", logging_callback=on_log) as client:
                assert _text(await client.call_tool("run_code", run)) == "counted\n"
                assert heard == counted


async def test_code_mode_reads_the_catalog_once_and_anew_when_a_servers_tools_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = {"command": sys.executable, "args": [str(TESTS / "_external_server.py"), str(tmp_path)]}
    pool = WorkerPool(mcp_servers={"ext": entry}, builtins=[], search_embed=False, timeout=20)
    async with serving(http_app(pool, profile=ToolProfile(code_mode=True))) as base:
        with anyio.fail_after(60):
            async with Client(f"{base}/mcp") as client:
                echo = {"code": "print(await ext__echo(text='hi'))"}
                assert _text(await client.call_tool("run_code", echo)) == "hi\n"
                reads: list[None] = []
                list_tools = pool.list_tools

                async def counted() -> list[Tool]:
                    reads.append(None)
                    return await list_tools()

                monkeypatch.setattr(pool, "list_tools", counted)
                for _ in range(3):
                    assert _text(await client.call_tool("run_code", echo)) == "hi\n"
                await client.call_tool("describe_tools", {"names": ["ext__echo"]})
                await client.call_tool("search_tools", {"query": "echo"})
                assert reads == []  # the catalog as last read, while no source changed

                relisted = anyio.Event()
                pool._handles["ext"].on_tools_changed = relisted.set  # type: ignore[attr-defined]
                await client.call_tool("run_code", {"code": "await ext__add_forecast()"})
                await relisted.wait()
                forecast = {"code": "print(await ext__forecast(city='Oslo'))"}
                assert _text(await client.call_tool("run_code", forecast)) == "sunny in Oslo\n"
                assert reads  # read anew once the server's tools changed
                found = _text(await client.call_tool("search_tools", {"query": "weather"}))
                assert "ext__forecast" in found
