"""External MCP servers in the pool through the official client: real servers, no mocks.

The official reference servers ``mcp-server-time`` and ``mcp-server-git`` over stdio,
an SDK `MCPServer` over stdio (lifecycle: kill -9, timeout, cancel, restart) and over
Streamable HTTP (uvicorn on 127.0.0.1, a free port).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

import anyio
import msgspec
import pytest
import uvicorn
from _external_server import STAMPS, UNTRUSTED_MODULE, Stamp, make_server
from _process import free_port
from _scripts import venv_script

from nativemcp.protocol import (
    BackendType,
    ServiceInfo,
    ToolError,
    full_tool_name,
    parse_tool_name,
    safe_server_name,
    service_info,
)
from nativemcp.proxy import (
    CallOptions,
    CallTimeout,
    RestartPolicy,
    ServerCrashed,
    ServerStartError,
    UnknownTool,
    WorkerPool,
    load_mcp_servers,
)

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


TESTS = Path(__file__).parents[1]
EXTERNAL = BackendType.EXTERNAL_MCP


def _ext(marker_dir: Path) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(TESTS / "_external_server.py"), str(marker_dir)],
    }


def _time() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


async def _poll(condition: Callable[[], bool]) -> None:
    """Wait (bounded) for a condition another process or a server task makes true:
    there is no event to wait on across a process boundary."""
    with anyio.fail_after(20):
        while not condition():  # noqa: ASYNC110 - the state lives in another process
            await anyio.sleep(0.02)


async def _marker(path: Path) -> None:
    await _poll(path.exists)


@pytest.fixture(scope="module")
def marker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
async def pool(marker_dir: Path) -> AsyncIterator[WorkerPool]:
    config = {"mcpServers": {"time": _time(), "clock": _time(), "ext": _ext(marker_dir)}}
    async with WorkerPool(mcp_servers=config, timeout=30) as pool:
        yield pool


async def test_two_instances_of_one_server_get_distinct_full_names_and_both_answer(
    pool: WorkerPool,
) -> None:
    names = [tool.name for tool in await pool.list_tools()]
    assert "time__get_current_time" in names and "clock__get_current_time" in names
    for name in ("time__get_current_time", "clock__get_current_time"):
        response = await pool.call_tool(name, {"timezone": "Asia/Seoul"})
        assert response.result is not None and not response.result.is_error
        assert response.result.structured_content is not None
        assert response.result.structured_content["timezone"] == "Asia/Seoul"


async def test_listed_tools_and_every_result_block_carry_their_service(pool: WorkerPool) -> None:
    tools = {tool.name: tool for tool in await pool.list_tools()}
    info = service_info(tools["clock__convert_time"])
    assert info is not None
    assert (info.server_name, info.tool_name, info.backend_type) == (
        "clock",
        "convert_time",
        BackendType.EXTERNAL_MCP,
    )
    info_of_sum = ServiceInfo("ext", "get-sum", BackendType.EXTERNAL_MCP)
    response = await pool.call_tool("ext__get-sum", {"a": 2, "b": 3})
    assert response.result is not None
    for block in response.result.content:
        assert service_info(block) == info_of_sum
        assert msgspec.to_builtins(block)["_meta"]["io.github.nativemcp/service"] == {
            "serverName": "ext",
            "toolName": "get-sum",
            "backendType": "ExternalMCP",
        }


async def test_the_proxy_unwraps_structured_content_with_attribute_access(
    pool: WorkerPool,
) -> None:
    time = pool.server("time")
    assert time is pool.server("time")
    now = await time.get_current_time(timezone="UTC")
    assert now.timezone == "UTC" and now.day_of_week
    ext = pool.server("ext")
    total = await ext.get_sum(a=1, b=2)  # the tool is `get-sum`
    assert total.total == 3 and total.operands == [1, 2]
    assert await ext.echo(text="plain") == "plain"
    raw = await ext.call_tool("get-sum", {"a": 5, "b": 5})
    assert raw.result is not None and raw.result.structured_content == {
        "total": 10,
        "operands": [5, 5],
    }


class ExtAPI(Protocol):
    """A typed interface for the test server."""

    server_name: ClassVar[str] = "ext"

    async def stamps(self) -> list[Stamp]: ...


async def test_a_nativemcp_structured_result_restores_the_exact_type_through_an_interface(
    pool: WorkerPool,
) -> None:
    stamps = await pool.server(ExtAPI).stamps()
    assert stamps == STAMPS
    raw = await pool.call_tool("ext__stamps")
    assert raw.structured_result == msgspec.to_builtins(STAMPS)


async def test_a_type_reference_from_an_external_server_is_never_imported(
    pool: WorkerPool,
) -> None:
    value = await pool.server("ext").typed_meta()
    assert value == {"value": 1}
    assert UNTRUSTED_MODULE not in sys.modules


async def test_tool_errors_are_responses_and_raised_from_typed_methods(pool: WorkerPool) -> None:
    response = await pool.call_tool("ext__fail", {"message": "boom"})
    assert response.result is not None and response.result.is_error
    with pytest.raises(ToolError):
        await pool.server("ext").fail(message="boom")


async def test_an_unknown_full_name_suggests_the_nearest(pool: WorkerPool) -> None:
    with pytest.raises(UnknownTool, match="time__get_current_time"):
        await pool.call_tool("time__get_curent_time", {})


async def test_progress_and_log_notifications_reach_the_callbacks(pool: WorkerPool) -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[tuple[str, Any, str | None]] = []
    done = await pool.server("ext").chatty(
        steps=3,
        on_progress=lambda *a: progress.append(a),
        on_log=lambda *a: logs.append(a),
    )
    assert done == "done"
    assert [p[0] for p in progress] == [1, 2, 3]
    assert [entry[1] for entry in logs] == ["did step 1", "did step 2", "did step 3"]


async def test_each_mcp_log_level_reaches_python_logging_at_its_own_level(
    pool: WorkerPool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="nativemcp.external.ext"):
        assert await pool.server("ext").call_tool("log-every-level", {})
    levels = {
        record.getMessage(): record.levelno
        for record in caplog.records
        if record.name == "nativemcp.external.ext" and record.getMessage().endswith(" message")
    }
    # The pool asks servers for info and up (MCP_LOG_LEVEL).
    assert levels == {
        "a info message": logging.INFO,
        "a notice message": logging.INFO,
        "a warning message": logging.WARNING,
        "a error message": logging.ERROR,
        "a critical message": logging.CRITICAL,
        "a alert message": logging.CRITICAL,
        "a emergency message": logging.CRITICAL,
    }


async def test_a_timeout_raises_and_sends_cancelled_to_the_server(
    pool: WorkerPool, marker_dir: Path
) -> None:
    with pytest.raises(CallTimeout, match=r"ext\.hang"):
        await pool.server("ext").hang(key="timeout", call_options=CallOptions(timeout=0.3))
    await _marker(marker_dir / "cancelled-timeout")


async def test_a_cancelled_caller_sends_cancelled_to_the_server(
    pool: WorkerPool, marker_dir: Path
) -> None:
    started = anyio.Event()

    async def call() -> None:
        started.set()
        await pool.call_tool("ext__hang", {"key": "cancel"}, timeout=None)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await started.wait()
        await anyio.sleep(0.2)
        tg.cancel_scope.cancel()
    await _marker(marker_dir / "cancelled-cancel")


async def test_a_killed_server_fails_its_pending_call_at_once_and_is_restarted(
    tmp_path: Path,
) -> None:
    policy = RestartPolicy(backoff=0.01)
    async with WorkerPool(mcp_servers={"ext": _ext(tmp_path)}, restart=policy) as pool:
        handle: Any = pool._handles["ext"]
        pid = handle.pid
        assert pid is not None
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:

                async def kill_soon() -> None:
                    await anyio.sleep(0.3)
                    os.kill(pid, signal.SIGKILL)

                tg.start_soon(kill_soon)
                with pytest.raises(ServerCrashed, match=r"'ext'.*'hang'"):
                    await pool.call_tool("ext__hang", {"key": "killed"}, timeout=None)
            # The supervisor reconnects: the next call works on a new process.
            response = await pool.call_tool("ext__get-sum", {"a": 1, "b": 1})
        assert response.result is not None and response.result.structured_content
        assert handle.pid != pid
        assert handle.restarts == 1


async def test_a_server_that_cannot_start_is_an_error_naming_it_its_command_and_stderr(
    tmp_path: Path,
) -> None:
    bad = {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no config here')"]}
    with pytest.raises(ServerStartError) as caught:
        async with WorkerPool(mcp_servers={"broken": bad}):
            pass
    message = str(caught.value)
    assert "'broken'" in message and "sys.exit" in message and "no config here" in message


async def test_an_optional_server_that_cannot_start_is_left_out(tmp_path: Path) -> None:
    config = {
        "broken": {
            "command": sys.executable,
            "args": ["-c", "raise SystemExit(3)"],
            "required": False,
        },
        "time": _time(),
    }
    async with WorkerPool(mcp_servers=config) as pool:
        assert pool.names == ["time"]


async def test_allow_list_and_disabled_tools_filter_the_catalog(tmp_path: Path) -> None:
    config = {
        "a": {**_ext(tmp_path), "tools": ["echo", "get-sum"]},
        "b": {**_ext(tmp_path), "disabled_tools": ["hang", "fail"]},
    }
    async with WorkerPool(mcp_servers=config) as pool:
        names = {tool.name for tool in await pool.list_tools()}
    assert {n for n in names if n.startswith("a__")} == {"a__echo", "a__get-sum"}
    assert "b__hang" not in names and "b__fail" not in names and "b__echo" in names


async def test_any_config_key_names_a_server_kept_as_written_beside_a_safe_full_name() -> None:
    keys = ["My Time", "github.com/acme/tool", "時間", "builtin_time"]
    async with WorkerPool(mcp_servers={key: _time() for key in keys}) as pool:
        assert pool.names == keys
        tools = {tool.name: tool for tool in await pool.list_tools()}
        for key in keys:
            full = full_tool_name(safe_server_name(key), "get_current_time", EXTERNAL)
            assert full in tools, sorted(tools)
            assert service_info(tools[full]) == ServiceInfo(key, "get_current_time", EXTERNAL)
            assert parse_tool_name(full, servers=keys).server_name == key
            response = await pool.call_tool(full, {"timezone": "UTC"})
            assert response.result is not None and not response.result.is_error
            assert service_info(response.result.content[0]) == ServiceInfo(
                key, "get_current_time", EXTERNAL
            )
        proxy = pool.server("My Time")
        assert (await proxy.call_tool("get_current_time", {"timezone": "UTC"})).error is None
    assert "My_Time-" in next(name for name in tools if name.startswith("My_Time"))


async def test_the_official_git_server_answers_on_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repo)])
    (repo / "a.txt").write_text("hello\n")
    config = {
        "git": {"command": venv_script("mcp-server-git"), "args": ["--repository", str(repo)]}
    }
    async with WorkerPool(mcp_servers=config) as pool:
        names = {tool.name for tool in await pool.list_tools()}
        assert "git__git_status" in names
        response = await pool.call_tool("git__git_status", {"repo_path": str(repo)})
    assert response.result is not None and not response.result.is_error
    assert "a.txt" in response.result.content[0].text  # type: ignore[union-attr]


async def test_the_config_file_format_of_desktop_clients_is_read(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                    "remote": {
                        "type": "http",
                        "url": "https://example.com/mcp",
                        "headers": {"A": "b"},
                    },
                    "old": {"type": "sse", "url": "http://localhost:1/sse", "disabled": True},
                }
            }
        )
    )
    specs = {spec.name: spec for spec in load_mcp_servers(path)}
    assert set(specs) == {"time", "remote"}
    assert specs["time"].transport == "stdio" and specs["time"].args == ["--local-timezone", "UTC"]
    assert specs["remote"].transport == "http" and specs["remote"].headers == {"A": "b"}
    with pytest.raises(ValueError, match=r"'x'.*command"):
        load_mcp_servers({"x": {"args": []}})
    with pytest.raises(ValueError, match="unknown type"):
        load_mcp_servers({"x": {"type": "carrier-pigeon", "command": "a"}})


async def test_a_streamable_http_server_is_reached_through_the_sdk_client(tmp_path: Path) -> None:
    port = free_port()
    inner = make_server(str(tmp_path)).streamable_http_app()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        """The SDK's app behind a bearer-token check: the entry's headers must arrive."""
        token = (b"authorization", b"Bearer t0k3n")
        if scope["type"] == "http" and token not in scope["headers"]:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await inner(scope, receive, send)

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        await _poll(lambda: server.started)
        url = f"http://127.0.0.1:{port}/mcp"
        config = {
            "remote": {
                "type": "streamable-http",
                "url": url,
                "headers": {"Authorization": "Bearer t0k3n"},
                "timeout": 0.3,
            }
        }
        try:
            # A 401 says so, and how to pass a token, for both HTTP transports.
            for kind in ("http", "sse"):
                entry = {"type": kind, "url": url, "headers": {"Authorization": "Bearer wrong"}}
                with pytest.raises(ServerStartError) as refused:
                    async with WorkerPool(mcp_servers={"nokey": entry}):
                        pass
                message = str(refused.value)
                assert "'nokey'" in message and "HTTP 401 Unauthorized" in message, message
                assert "headers sent (Authorization) were not accepted" in message
                assert '"Authorization": "Bearer ${API_TOKEN}"' in message
            async with WorkerPool(mcp_servers=config) as pool:
                total = await pool.server("remote").get_sum(a=20, b=22)
                assert total.total == 42
                response = await pool.call_tool("remote__echo", {"text": "over http"})
                assert response.result is not None
                assert response.result.content[0].text == "over http"  # type: ignore[union-attr]
                with pytest.raises(CallTimeout, match=r"0\.3 s"):  # the entry's own timeout
                    await pool.call_tool("remote__hang", {"key": "http"})
        finally:
            server.should_exit = True


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as stat:  # a zombie answers kill(0) until reaped
        return stat.read().split()[2] == "Z"


async def test_leaving_the_pool_ends_the_server_process_also_when_the_body_raises(
    tmp_path: Path,
) -> None:
    pid = None
    with pytest.raises(RuntimeError, match="body failed"):
        async with WorkerPool(mcp_servers={"ext": _ext(tmp_path)}) as pool:
            pid = pool._handles["ext"].pid  # type: ignore[attr-defined]
            raise RuntimeError("body failed")
    assert pid is not None and _gone(pid)


async def test_a_server_that_never_answers_is_an_error_within_the_start_timeout() -> None:
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    with anyio.fail_after(30), pytest.raises(ServerStartError, match="did not answer within 1 s"):
        async with WorkerPool(mcp_servers={"silent": silent}, start_timeout=1):
            pass


async def test_the_cli_calls_a_server_of_its_mcp_config_and_names_one_that_fails(
    tmp_path: Path,
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": _time(), "broken": {"command": "false"}}}))
    cli = [sys.executable, "-m", "nativemcp.proxy.cli"]
    data = ["--data-dir", str(tmp_path / "d")]
    ok = {"mcpServers": {"time": _time()}}
    (tmp_path / "ok.json").write_text(json.dumps(ok))
    done = await anyio.run_process(
        [
            *cli,
            "call",
            "time",
            "get_current_time",
            "--args",
            '{"timezone": "UTC"}',
            "--json",
            *data,
            "--mcp-config",
            str(tmp_path / "ok.json"),
        ],
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["timezone"] == "UTC"
    failed = await anyio.run_process(
        [*cli, "search", "q", *data, "--mcp-config", str(config)], check=False
    )
    assert failed.returncode != 0
    assert "MCP server 'broken' (false)" in failed.stderr.decode()


async def test_serve_with_mcp_config_serves_external_tools_beside_builtins(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": _time()}}))
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "nativemcp.proxy.cli", "serve", "workspace"),
            *("--data-dir", str(tmp_path / "d"), "--mcp-config", str(config)),
        ],
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "time__get_current_time" in names
            assert "builtin_workspace__read_file" in names
            result = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["timezone"] == "UTC"
