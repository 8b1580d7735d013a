"""The 2026-07-28 Tasks extension toward an external server (`TasksClaim`): a pool whose
``mcpServers`` entry is nativemcp's own ``serve`` over Streamable HTTP, which offers the
extension and runs a call of a tool that declares task support as a task. The sources
behind serve are `tests/_raw_mcp_server.py` processes listing their tools with
``execution.taskSupport``. The pool's call follows the task (``tasks/get``, its status
message reported as progress), answers its input requests with the pool's own
elicitation handler (``tasks/update``), returns its result as a plain call's, and
cancels it (``tasks/cancel``) when the call's time limit passes, which reaches the
source as ``notifications/cancelled``. A recorder in front of serve notes each
request's ``Mcp-Method``, so these tests see the task methods travel."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp_http import serving
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script

from nativemcp.proxy import CallTimeout, WorkerPool, http_app

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

RAW = Path(__file__).parents[1] / "_raw_mcp_server.py"
OPTIONAL = {"taskSupport": "optional"}
ECHO = {"name": "echo", "inputSchema": {"type": "object"}, "execution": OPTIONAL}
ASK = {"name": "ask", "inputSchema": {"type": "object"}, "execution": OPTIONAL}
PLAIN = {"name": "pid", "inputSchema": {"type": "object"}}  # no task support


def _raw(config: dict[str, Any]) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(RAW), json.dumps(config)]}


def _sources(methods: Path) -> dict[str, Any]:
    """``tasks``: echo (and ask, answered at once); ``held``: ask, held until a second
    call that never comes, its methods written to ``methods``."""
    return {
        "tasks": _raw({"tools": [ECHO, ASK, PLAIN], "progress_on": "echo"}),
        "held": _raw({"tools": [ASK], "ask_together": 2, "methods_file": str(methods)}),
    }


def _recording(app: Any, methods: list[str]) -> Any:
    """``app``, noting each request's ``Mcp-Method`` header in ``methods``."""

    async def recorder(scope: dict[str, Any], receive: Any, send: Any) -> None:
        method = dict(scope.get("headers", [])).get(b"mcp-method")
        if scope["type"] == "http" and method:
            methods.append(method.decode())
        await app(scope, receive, send)

    return recorder


async def _elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"text": f"answered {params['message']}"}}


@asynccontextmanager
async def _through_serve(
    tmp_path: Path, seen: list[str], *, database_url: str | None = None, **options: Any
) -> AsyncIterator[WorkerPool]:
    """A pool whose one entry, ``hub``, is serve (in this process, over real HTTP;
    stateless on ``database_url`` if given); ``options``: the pool's, past its
    elicitation handler."""
    hub = WorkerPool(
        builtins=[],
        mcp_servers=_sources(tmp_path / "methods"),
        relay_client_requests=True,  # as serve runs it: the sources may ask our client
        database_url=database_url,
        data_dir=tmp_path / "hub",
    )
    app = http_app(hub, stateless=database_url is not None)
    async with serving(_recording(app, seen)) as base:
        entry = {"type": "http", "url": f"{base}/mcp"}
        options = {"elicitation_handler": _elicit, **options}
        async with WorkerPool(
            builtins=[], mcp_servers={"hub": entry}, timeout=30, **options
        ) as pool:
            yield pool


def _heard_cancel(methods: Path) -> bool:
    return "notifications/cancelled" in methods.read_text()


async def _cancelled_at_source(methods: Path) -> None:
    """Wait until the held source heard ``notifications/cancelled``."""
    while not _heard_cancel(methods):  # noqa: ASYNC110 - the state lives in another process
        await anyio.sleep(0.02)


def _text(response: Any) -> str:
    assert response.result is not None, response
    return str(response.result.content[0].text)


async def test_a_task_of_the_server_is_followed_to_its_result(tmp_path: Path) -> None:
    seen: list[str] = []
    with anyio.fail_after(60):
        async with _through_serve(tmp_path, seen) as pool:
            progress: list[str | None] = []
            done = await pool.call_tool(
                "hub__tasks__echo",
                {"text": "hello"},
                on_progress=lambda p, t, m: progress.append(m),
            )
            tasks_after_echo = [m for m in seen if m.startswith("tasks/")]
            # A tool without task support stays a plain call.
            plain = await pool.call_tool("hub__tasks__pid", {})
    assert _text(done) == "hello" and done.error is None
    assert progress == ["halfway"]  # the task's statusMessage
    assert tasks_after_echo and set(tasks_after_echo) == {"tasks/get"}
    assert _text(plain).isdigit()
    assert [m for m in seen if m.startswith("tasks/")] == tasks_after_echo


async def test_a_tasks_input_request_is_answered_by_the_pools_handler(tmp_path: Path) -> None:
    seen: list[str] = []
    with anyio.fail_after(60):
        # One round of input allows the task's one request.
        async with _through_serve(tmp_path, seen, input_rounds=1) as pool:
            done = await pool.call_tool("hub__tasks__ask", {"key": "k1"})
    assert _text(done) == "k1: answered a reply for k1"
    assert "tasks/update" in seen and "tasks/get" in seen


async def test_a_stateless_serve_on_postgresql_runs_the_task_from_its_row(
    tmp_path: Path, postgres_url: str
) -> None:
    # There an answered request stays listed until the runner's next heartbeat: it is
    # answered once, and the task goes on.
    seen: list[str] = []
    with anyio.fail_after(60):
        async with _through_serve(tmp_path, seen, database_url=postgres_url) as pool:
            done = await pool.call_tool("hub__tasks__ask", {"key": "k3"})
    assert _text(done) == "k3: answered a reply for k3"
    assert seen.count("tasks/update") == 1 and "tasks/get" in seen


async def test_a_call_past_its_time_limit_cancels_the_task_on_the_server(tmp_path: Path) -> None:
    seen: list[str] = []
    methods = tmp_path / "methods"
    with anyio.fail_after(60):
        async with _through_serve(tmp_path, seen) as pool:
            with pytest.raises(CallTimeout):
                await pool.call_tool("hub__held__ask", {"key": "k"}, timeout=1.5)
            # The pool sent tasks/cancel; serve stops the task's call to the source.
            await _cancelled_at_source(methods)
    assert "tasks/cancel" in seen


async def test_an_input_request_nobody_answers_fails_the_call_and_cancels_the_task(
    tmp_path: Path,
) -> None:
    seen: list[str] = []
    # Relayed, yet called directly: elicitation is declared and nobody answers it.
    relayed: dict[str, Any] = {"elicitation_handler": None, "relay_client_requests": True}
    with anyio.fail_after(60):
        async with _through_serve(tmp_path, seen, **relayed) as pool:
            failed = await pool.call_tool("hub__tasks__ask", {"key": "k1"})
    assert failed.error is not None
    message = failed.error.message
    assert "task asked elicitation/create" in message and "has no elicitation_handler" in message
    assert "tasks/update" not in seen and "tasks/cancel" in seen


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Every process a test starts, stopped (by its pid) after it."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    stop_all(started)


def _serve(config: Path, data: Path, processes: list[subprocess.Popen[bytes]]) -> int:
    """``nativemcp serve --transport http`` of ``config``, listening: its port."""
    port = free_port()
    serve = subprocess.Popen(
        [
            *(venv_script("nativemcp"), "serve", "--mcp-config", str(config)),
            *("--transport", "http", "--port", str(port), "--data-dir", str(data)),
        ],
        stdout=subprocess.DEVNULL,
    )
    processes.append(serve)
    wait_listening(port, serve)
    return port


@pytest.mark.real_process
async def test_through_a_serve_process_the_call_returns_the_tasks_result_and_cancels(
    tmp_path: Path, processes: list[subprocess.Popen[bytes]]
) -> None:
    config = tmp_path / "mcp.json"
    methods = tmp_path / "methods"
    config.write_text(json.dumps({"mcpServers": _sources(methods)}), encoding="utf-8")
    port = _serve(config, tmp_path / "data", processes)
    entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
    with anyio.fail_after(90):
        async with WorkerPool(
            builtins=[], mcp_servers={"hub": entry}, elicitation_handler=_elicit, timeout=30
        ) as pool:
            done = await pool.call_tool("hub__tasks__echo", {"text": "from afar"})
            asked = await pool.call_tool("hub__tasks__ask", {"key": "k2"})
            with pytest.raises(CallTimeout):
                await pool.call_tool("hub__held__ask", {"key": "k"}, timeout=1.5)
            await _cancelled_at_source(methods)
    assert _text(done) == "from afar"
    assert _text(asked) == "k2: answered a reply for k2"


async def test_a_failing_status_poll_leaves_a_2025_tasks_good_result_as_it_is(
    tmp_path: Path,
) -> None:
    required = {**ECHO, "execution": {"taskSupport": "required"}}
    source = _raw({"tools": [required], "failing_polls": True})
    progress: list[str | None] = []
    with anyio.fail_after(30):
        async with WorkerPool(builtins=[], mcp_servers={"raw": source}, timeout=20) as pool:
            done = await pool.call_tool(
                "raw__echo", {"text": "kept"}, on_progress=lambda p, t, m: progress.append(m)
            )
    assert _text(done) == "kept" and done.error is None
    assert progress == []  # the task gave no status message before its poll failed


def test_a_task_reported_completed_without_a_result_is_an_error_not_an_empty_success() -> None:
    from mcp.shared.exceptions import MCPError

    from nativemcp.proxy.external._task_extension_client import DetailedTask, _ended

    task = DetailedTask(task_id="t1", status="completed")
    with pytest.raises(MCPError, match="completed but sent no result") as raised:
        _ended(task, "hub", "echo")
    assert raised.value.error.code == -32603
    kept = DetailedTask(task_id="t2", status="completed", result={"content": []})
    assert _ended(kept, "hub", "echo") is not None
