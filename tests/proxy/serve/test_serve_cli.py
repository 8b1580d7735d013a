"""`nativemcp serve` as a process: SIGTERM lets in-flight calls finish; stateless
replicas on one PostgreSQL database share their state. (How SERVER is named, on every
verb: tests/proxy/cli/test_cli_servers.py.)"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import anyio
import httpx2
import pytest
from _process import free_port, stop_all, wait_listening
from _scripts import venv_script
from _store_calls import find_the_note, store_a_note
from mcp import Client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio_backends("asyncio")

TESTS = Path(__file__).parents[2]


async def _slow_call_cut_by_sigterm(grace: float, seconds: float) -> object:
    """What a client gets for a ``slow`` call of ``seconds`` when `nativemcp serve`
    (with ``--grace``) gets SIGTERM while the call runs: its first content block, or the
    error it raised."""
    port = free_port()
    argv = ["serve", "--transport", "http", "--port", str(port), "--grace", str(grace)]
    process = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
        [venv_script("nativemcp"), *argv, "_serve_servers:server"],
        cwd=TESTS,  # module:attribute resolves from the current folder
    )
    try:
        wait_listening(port, process)
        started = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            started.set()

        outcome: list[object] = []
        with anyio.fail_after(60):
            try:
                async with (
                    Client(f"http://127.0.0.1:{port}/mcp") as client,
                    anyio.create_task_group() as tg,
                ):

                    async def call() -> None:
                        try:
                            result = await client.call_tool(
                                "slow", {"seconds": seconds}, progress_callback=on_progress
                            )
                        except MCPError as exc:
                            outcome.append(exc)
                        else:
                            outcome.append(result.content[0])

                    # Listed first: the client checks results against the listing, and
                    # a draining server takes no new requests.
                    await client.list_tools()
                    tg.start_soon(call)
                    await started.wait()
                    process.send_signal(signal.SIGTERM)
            except* httpx2.ConnectError:
                pass  # the client's goodbye, sent after the server has gone
        # The signal stops serving; the servers close after the drain, and the exit is clean.
        assert process.wait(30) == 0
        return outcome[0]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.anyio
@pytest.mark.real_process
async def test_sigterm_lets_an_in_flight_call_finish() -> None:
    finished = await _slow_call_cut_by_sigterm(grace=20, seconds=1.5)
    assert getattr(finished, "text", None) == "finished"


@pytest.mark.anyio
@pytest.mark.real_process
async def test_a_call_cut_after_the_grace_gets_a_json_rpc_error_not_a_dropped_connection() -> None:
    cut = await _slow_call_cut_by_sigterm(grace=0.5, seconds=60)
    assert isinstance(cut, MCPError), cut
    assert "shutting down" in cut.error.message and "0.5 s of grace" in cut.error.message
    assert cut.error.data == {"reason": "shutting_down"}


def _text(result: object) -> str:
    return "\n".join(getattr(block, "text", "") for block in getattr(result, "content", []))


@pytest.mark.anyio
@pytest.mark.real_process
async def test_stateless_replicas_on_one_database_share_plans_and_stores(
    tmp_path: Path, postgres_url: str
) -> None:
    script = venv_script("nativemcp")
    ports = [free_port(), free_port()]
    replicas = [
        subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
            [
                script,
                "serve",
                "planning",
                "content-store",
                "--transport",
                "http",
                "--stateless",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / f"replica{n}"),
                "--database-url",
                postgres_url,
            ],
        )
        for n, port in enumerate(ports)
    ]
    try:
        for port, process in zip(ports, replicas, strict=True):
            wait_listening(port, process)
        one, other = (f"http://127.0.0.1:{port}/mcp" for port in ports)
        with anyio.fail_after(60):
            async with Client(f"{one}/planning") as client:
                await client.call_tool("create_goal", {"goal": "ship the release"})
            async with Client(f"{other}/planning") as client:
                state = await client.call_tool("get_current_state", {})
            assert "ship the release" in _text(state)

            store_id = await store_a_note(f"{other}/content-store")
            assert await find_the_note(f"{one}/content-store", store_id) == ["a.md"]
    finally:
        stop_all(replicas)


@pytest.mark.anyio
@pytest.mark.real_process
async def test_two_mcp_sessions_of_serve_browser_never_share_a_browser_session(
    tmp_path: Path,
) -> None:
    from _browser_pages import require_chromium, serving

    require_chromium()
    port = free_port()
    with serving() as site:
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any await
            [venv_script("nativemcp"), "serve", "browser", "--transport", "http",
             "--port", str(port), "--data-dir", str(tmp_path), "--browser-allow", site.base],
        )  # fmt: skip
        try:
            wait_listening(port, server)
            url = f"http://127.0.0.1:{port}/mcp/browser"
            with anyio.fail_after(90):
                # Legacy (initialize) clients carry an MCP session, the scope of their calls;
                # 2026-07-28 clients have none, so serve gives their calls no scope.
                async with (
                    Client(url, mode="legacy") as first,
                    Client(url, mode="legacy") as second,
                ):
                    # Both use the session "default"; each gets a context of its own.
                    for client in (first, second, first):
                        await client.call_tool("navigate", {"url": f"{site.base}/dynamic"})
                    seen = _text(await first.call_tool("snapshot", {}))
                    assert 'Page: "Dynamic (visited=again)"' in seen
                    other = _text(await second.call_tool("snapshot", {}))
                    assert 'Page: "Dynamic (visited=once)"' in other
                    await first.call_tool("close_session", {"session_id": "default"})
                    listed = _text(await second.call_tool("list_sessions", {}))
                    assert "1 open browser session(s)" in listed
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
