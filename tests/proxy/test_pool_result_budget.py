"""The agent loop's result budget: a large result cut, kept whole, and read back.

Through `WorkerPool.run_tool_call`, as a model's calls arrive: the first message never
over the pool's budget, a planted fact past the cut found with one ``read_result``
call, kept in the content store when the pool runs it (and found there with the store's
own tools), in memory otherwise; another owner's ``read_result`` refused; the app's own
call still gets the whole value.
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from nativemcp.protocol import (
    CallToolResult,
    ImageContent,
    NativeMCPResponse,
    TextContent,
    structured_response,
    unwrap,
)
from nativemcp.proxy import AgentLoop, WorkerPool
from nativemcp.proxy.llm import DEFAULT_RESULT_BUDGET, RESULTS_URI, count_tokens
from nativemcp.workers import Server
from nativemcp.workers.content_store import ContentStoreAPI

pytestmark = [pytest.mark.anyio]

_FACT = "ERROR payment gateway timeout for order 77-zulu-4410"
_ROWS = 10_000


def _big() -> Server:
    server = Server("big", description="Large results")

    @server.tool
    def read_log() -> str:
        """A server log of 20,000 lines."""
        lines = [f"2026-05-01 INFO request {i} served in {i % 97} ms" for i in range(20_000)]
        lines[19_000] = f"2026-05-01 {_FACT}"
        return "\n".join(lines)

    @server.tool
    def rows() -> NativeMCPResponse[Any]:
        """10,000 rows of a table, as JSON text and structured content (as many
        external servers answer)."""
        table = [{"id": i, "city": f"city-{i}", "score": i % 13} for i in range(_ROWS)]
        table[9_876]["city"] = "Quagmire Falls"
        value = {"total": _ROWS, "rows": table}
        return structured_response(json.dumps(value), value)

    @server.tool
    def screenshot() -> NativeMCPResponse[Any]:
        """A 2,400 x 1,800 screenshot."""
        out = io.BytesIO()
        Image.new("RGB", (2400, 1800), (250, 250, 250)).save(out, format="PNG")
        data = base64.b64encode(out.getvalue()).decode()
        return NativeMCPResponse(
            result=CallToolResult(
                content=[
                    TextContent(text="the page"),
                    ImageContent(data=data, mime_type="image/png"),
                ]
            )
        )

    return server


def _call(name: str, arguments: dict[str, Any], call_id: str = "t1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _text(message: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in message["content"] if block["type"] == "text")


def _result_id(text: str) -> str:
    found = re.search(re.escape(RESULTS_URI) + r"(r[0-9a-f]{16})", text)
    assert found is not None, text[-500:]
    return found.group(1)


async def _cut_and_found(pool: WorkerPool, budget: int) -> str:
    """Read the log through the agent loop; find the fact past the cut; the result id."""
    first = await pool.run_tool_call(
        _call("big__read_log", {}), provider="anthropic", result_owner="alice"
    )
    text = _text(first)
    assert count_tokens(text) <= budget
    assert _FACT not in text and "lines 1-" in text
    result_id = _result_id(text)
    found = await pool.run_tool_call(
        _call("read_result", {"id": result_id, "query": "payment gateway timeout"}),
        provider="anthropic",
        result_owner="alice",
    )
    assert not found["is_error"], found
    assert _FACT in _text(found) and count_tokens(_text(found)) <= budget
    return result_id


async def _read(pool: WorkerPool, arguments: dict[str, Any]) -> str:
    message = await pool.run_tool_call(
        _call("read_result", arguments), provider="anthropic", result_owner="alice"
    )
    assert not message["is_error"], message
    return _text(message)


async def _refused_to_another_owner(pool: WorkerPool, result_id: str) -> None:
    theirs = await pool.run_tool_call(
        _call("read_result", {"id": result_id, "from_line": 1}),
        provider="anthropic",
        result_owner="mallory",
    )
    assert theirs["is_error"] and "no kept result" in _text(theirs)
    assert "INFO request" not in _text(theirs)


async def test_without_a_content_store_a_cut_result_is_kept_in_memory_for_its_owner() -> None:
    with anyio.fail_after(60):
        async with WorkerPool([_big()], in_process=["big"], result_budget=1000) as pool:
            assert pool.result_budget == 1000
            result_id = await _cut_and_found(pool, 1000)
            await _refused_to_another_owner(pool, result_id)
            # Lines past the cut, read in order, are the log's own.
            on = await _read(pool, {"id": result_id, "from_line": 19_001, "to_line": 19_001})
            assert on.split("\n")[1] == f"2026-05-01 {_FACT}"


async def test_with_the_content_store_a_cut_result_is_kept_there_and_searchable(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(90):
        async with WorkerPool(
            [_big()],
            in_process=["big"],
            data_dir=tmp_path,
            builtins=["content-store"],
            result_budget=1000,
        ) as pool:
            result_id = await _cut_and_found(pool, 1000)
            await _refused_to_another_owner(pool, result_id)
            on = await _read(pool, {"id": result_id, "from_line": 19_001, "to_line": 19_002})
            assert on.split("\n")[1:] == [
                f"2026-05-01 {_FACT}",
                "2026-05-01 INFO request 19001 served in 86 ms",
            ]
            # The store's own tools find it: one store for the owner, the result in it.
            store = pool.server(ContentStoreAPI)
            (kept,) = [s for s in (await store.list_stores()).stores if "results" in s.name]
            listed = await store.list_content(store_id=kept.store_id)
            assert [item.filename for item in listed.contents] == [f"{result_id}.txt"]
            hits = await store.keyword_similarity_search(store_id=kept.store_id, query="zulu-4410")
            assert hits.results and _FACT in hits.results[0].context


async def test_a_structured_result_is_summarised_for_the_model_and_whole_for_the_app() -> None:
    with anyio.fail_after(60):
        async with WorkerPool([_big()], in_process=["big"], result_budget=800) as pool:
            message = await pool.run_tool_call(
                _call("big__rows", {}), provider="anthropic", result_owner="alice"
            )
            text = _text(message)
            assert count_tokens(text) <= 800
            assert "summarised by shape" in text and '"total":10000' in text
            assert "Quagmire Falls" not in text
            found = await _read(pool, {"id": _result_id(text), "query": "Quagmire Falls"})
            assert '"city":"Quagmire Falls"' in found
            # The app's own call is untouched: every row, as the tool returned it.
            whole = unwrap(await pool.call_tool("big__rows"), dict)
            assert len(whole["rows"]) == _ROWS
            assert whole["rows"][9_876]["city"] == "Quagmire Falls"


async def test_a_large_image_reaches_the_model_scaled_and_read_result_gives_the_original(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(60):
        async with WorkerPool(
            [_big()], in_process=["big"], data_dir=tmp_path, builtins=["content-store"]
        ) as pool:
            original = (await pool.call_tool("big__screenshot")).result
            message = await pool.run_tool_call(
                _call("big__screenshot", {}), provider="anthropic", result_owner="alice"
            )
            note = _text(message)
            (image,) = [block for block in message["content"] if block["type"] == "image"]
            assert "scaled down" in note and "2400x1800" in note
            scaled = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"])))
            assert scaled.size == (1568, 1176)
            back = await pool.run_tool_call(
                _call("read_result", {"id": _result_id(note), "image": 1}),
                provider="anthropic",
                result_owner="alice",
            )
            (whole,) = [block for block in back["content"] if block["type"] == "image"]
            assert original is not None and whole["source"]["data"] == original.content[1].data  # type: ignore[union-attr]
            await _refused_to_another_owner(pool, _result_id(note))


async def test_the_default_budget_applies_and_none_turns_it_off() -> None:
    with anyio.fail_after(60):
        async with WorkerPool([_big()], in_process=["big"]) as pool:
            assert pool.result_budget == DEFAULT_RESULT_BUDGET
            message = await pool.run_tool_call(_call("big__read_log", {}), provider="anthropic")
            assert count_tokens(_text(message)) <= DEFAULT_RESULT_BUDGET
        async with WorkerPool([_big()], in_process=["big"], result_budget=None) as pool:
            names = [d["name"] for d in await pool.tool_definitions("anthropic")]
            assert "read_result" not in names
            message = await pool.run_tool_call(_call("big__read_log", {}), provider="anthropic")
            assert _FACT in _text(message)  # whole, as before budgets
            unknown = await pool.run_tool_call(
                _call("read_result", {"id": "r0000000000000000"}), provider="anthropic"
            )
            assert unknown["is_error"] and "read_result" in _text(unknown)


def test_a_budget_below_the_minimum_is_refused_when_the_pool_is_made() -> None:
    with pytest.raises(ValueError, match="result_budget must be a whole number of tokens"):
        WorkerPool([], result_budget=50)


async def test_an_agent_loop_built_over_a_pool_holds_results_to_its_own_budget() -> None:
    with anyio.fail_after(60):
        async with WorkerPool([_big()], in_process=["big"], result_budget=None) as pool:
            loop = AgentLoop(pool, result_budget=500)
            assert loop.result_budget == 500 and pool.result_budget is None
            whole = await pool.run_tool_call(
                _call("big__read_log", {}), provider="anthropic", result_owner="alice"
            )
            assert _FACT in _text(whole)  # the pool's own loop has no budget
            cut = await loop.run_tool_call(
                _call("big__read_log", {}), provider="anthropic", result_owner="alice"
            )
            assert count_tokens(_text(cut)) <= 500 and _FACT not in _text(cut)
            found = await loop.run_tool_call(
                _call("read_result", {"id": _result_id(_text(cut)), "query": "payment gateway"}),
                provider="anthropic",
                result_owner="alice",
            )
            assert _FACT in _text(found)
            await loop.aclose()
