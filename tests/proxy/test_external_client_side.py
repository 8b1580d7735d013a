"""External servers ask the pool for sampling, elicitation and roots: npm's
``@modelcontextprotocol/server-everything`` (from `.ci/node`), which lists
``trigger-sampling-request``, ``trigger-elicitation-request``, ``trigger-url-elicitation``
and ``get-roots-list`` only to a client that declared those capabilities.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from _node import node_env, node_tool
from _scripts import venv_script

from nativemcp.proxy import CallOptions, CallTimeout, WorkerPool

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

ASKING = {
    "everything__trigger-sampling-request",
    "everything__trigger-elicitation-request",
    "everything__trigger-url-elicitation",
    "everything__get-roots-list",
}


def _everything() -> dict[str, Any]:
    return {
        "command": node_tool("mcp-server-everything"),
        "args": ["stdio"],
        "env": {"PATH": node_env()["PATH"]},
    }


def _text(response: Any) -> str:
    assert response.result is not None, response
    return "\n".join(getattr(block, "text", "") for block in response.result.content)


async def test_a_pool_without_handlers_or_roots_declares_none_and_is_offered_none() -> None:
    async with WorkerPool(mcp_servers={"everything": _everything()}) as pool:
        names = {tool.name for tool in await pool.list_tools()}
    assert "everything__echo" in names
    assert not names & ASKING


async def test_sampling_elicitation_and_roots_reach_the_pools_handlers(tmp_path: Path) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(("sampling", params))
        text = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": f"echo: {text}"},
            "model": "m",
        }

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append((params.get("mode", "form"), params))
        return (
            {"action": "accept", "content": {}}
            if params.get("mode") != "url"
            else {"action": "decline"}
        )

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    async with WorkerPool(
        mcp_servers={"everything": _everything()},
        sampling_handler=sample,
        elicitation_handler=elicit,
        roots=[first],
    ) as pool:
        names = {tool.name for tool in await pool.list_tools()}
        assert names >= ASKING
        with anyio.fail_after(30):
            sampled = await pool.call_tool(
                "everything__trigger-sampling-request", {"prompt": "hello there", "maxTokens": 5}
            )
            assert "echo: " in _text(sampled) and "hello there" in _text(sampled)
            roots = await pool.call_tool("everything__get-roots-list", {})
            assert first.as_uri() in _text(roots)
            await pool.set_roots([second])
            # The server asks again on roots/list_changed, in its own time.
            while second.as_uri() not in _text(  # noqa: ASYNC110 - state in another process
                await pool.call_tool("everything__get-roots-list", {})
            ):
                await anyio.sleep(0.05)
            elicited = await pool.call_tool("everything__trigger-elicitation-request", {})
            assert elicited.result is not None and not elicited.result.is_error
            url = await pool.call_tool(
                "everything__trigger-url-elicitation", {"url": "https://example.com/login"}
            )
            assert "decline" in _text(url).lower()
            # A caller's own on_request answers its call instead of the pool's handler.
            mine: list[str] = []

            async def own(method: str, params: dict[str, Any]) -> dict[str, Any]:
                mine.append(method)
                return {
                    "role": "assistant",
                    "content": {"type": "text", "text": "mine"},
                    "model": "m",
                }

            own_call = await pool.call_tool(
                "everything__trigger-sampling-request",
                {"prompt": "x"},
                options=CallOptions(on_request=own),
            )
            assert "mine" in _text(own_call) and mine == ["sampling/createMessage"]
    kinds = [kind for kind, _ in asked]
    assert kinds.count("sampling") == 1 and "form" in kinds and "url" in kinds
    (url_params,) = [params for kind, params in asked if kind == "url"]
    assert url_params["url"] == "https://example.com/login"


async def test_root_on_the_command_line_is_what_an_external_server_lists(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"everything": _everything()}}), encoding="utf-8")
    done = await anyio.run_process(
        [
            venv_script("nativemcp"),
            *("call", "everything", "get-roots-list", "--mcp-config", str(config)),
            *("--root", str(tmp_path), "--data-dir", str(tmp_path / "data")),
        ],
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert tmp_path.as_uri() in done.stdout.decode()


async def test_a_tool_that_runs_only_as_a_task_is_called_like_any_other() -> None:
    """server-everything's simulate-research-query has execution.taskSupport 'required':
    the pool creates the task, reports its status messages as progress, and returns
    its result, from call_tool, a typed proxy and run_tool_call alike."""
    name = "everything__simulate-research-query"
    async with WorkerPool(mcp_servers={"everything": _everything()}, timeout=60) as pool:
        assert name in {tool.name for tool in await pool.list_tools()}
        progress: list[str | None] = []
        found: dict[str, Any] = {}
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": name, "arguments": '{"topic": "birds"}'},
        }
        research = pool.server("everything").tool("simulate-research-query")

        async def direct() -> None:
            found["direct"] = await pool.call_tool(
                name, {"topic": "cats"}, on_progress=lambda p, t, m: progress.append(m)
            )

        async def typed() -> None:
            found["typed"] = await research(topic="dogs")

        async def loop() -> None:
            found["loop"] = await pool.run_tool_call(call, provider="openai")

        with anyio.fail_after(60):
            # The three ways at once (each task takes the server seconds of its own).
            async with anyio.create_task_group() as group:
                for way in (direct, typed, loop):
                    group.start_soon(way)
            response = found["direct"]
            assert response.result is not None and not response.result.is_error
            assert "Research Report: cats" in _text(response)
            assert progress and all(progress), progress  # the task's status messages
            assert "Research Report: dogs" in str(found["typed"])
            assert "Research Report: birds" in found["loop"]["content"]
            # A time limit abandons the task (tasks/cancel), and the server goes on.
            with pytest.raises(CallTimeout):
                await pool.call_tool(name, {"topic": "slow"}, timeout=0.5)
            again = await pool.call_tool("everything__echo", {"message": "still here"})
            assert "still here" in _text(again)
