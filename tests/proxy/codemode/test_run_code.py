"""`WorkerPool.run_code` through real worker processes and a real Monty sandbox: tools
called by name with keywords, unwrapped values, tool errors the program catches,
gathered calls at once, the caller's profile, cancellation and telemetry.

These run on asyncio (pydantic-monty's `AsyncMonty`); test_blocking_run_code.py runs trio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import msgspec
import pytest
from _servers import make_items
from _telemetry import Recorded
from opentelemetry.trace import SpanKind

from nativemcp.protocol import CodeError, UnknownTool
from nativemcp.proxy import CallOptions, WorkerPool
from nativemcp.proxy.codemode import CodeResult
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=10) as pool:
        yield pool


async def test_a_program_calls_tools_by_name_with_keywords_and_gets_their_unwrapped_values(
    pool: WorkerPool,
) -> None:
    code = (
        "page = await testing__listing(count=3)\n"
        "items = await testing__items(count=2)\n"
        "print(page['total'], [c['fileName'] for c in page['contents']])\n"
        "{'sizes': [i['size'] for i in items], 'echo': await testing__echo(text='hé')}"
    )
    result = await pool.run_code(code)
    # The values the program got are the tools' typed values as plain data.
    listing = msgspec.to_builtins(make_items(3))
    assert result.output == f"3 {[item['fileName'] for item in listing]}\n"
    assert result.value == {"sizes": [0, 100], "echo": "hé"}
    assert [(c.name, c.tool, c.ok) for c in result.calls] == [
        ("testing__listing", "testing__listing", True),
        ("testing__items", "testing__items", True),
        ("testing__echo", "testing__echo", True),
    ]
    assert all(c.duration > 0 for c in result.calls)


async def test_a_tool_error_raises_in_the_program_with_the_tools_text_and_is_recorded(
    pool: WorkerPool,
) -> None:
    code = (
        "try:\n"
        "    await testing__refuse(store_id='s9')\n"
        "except RuntimeError as exc:\n"
        "    print('caught:', exc)\n"
        "'went on'"
    )
    result = await pool.run_code(code)
    assert result.output == "caught: testing__refuse: Store 's9' not found\n"
    assert result.value == "went on"
    (call,) = result.calls
    assert not call.ok
    assert call.error == "Store 's9' not found"


async def test_an_uncaught_tool_error_ends_the_run_with_its_text_and_what_ran_before(
    pool: WorkerPool,
) -> None:
    with pytest.raises(CodeError) as caught:
        await pool.run_code("print('first')\nawait testing__fail(message='boom')")
    assert "boom" in str(caught.value)
    partial = caught.value.result
    assert isinstance(partial, CodeResult)
    assert partial.output == "first\n"
    assert [c.ok for c in partial.calls] == [False]


async def test_gathered_calls_run_at_once(pool: WorkerPool) -> None:
    await pool.call_tool("testing__crowd_seen")  # resets the count
    code = (
        "import asyncio\n"
        "await asyncio.gather(*[testing__crowd(seconds=0.3, index=i) for i in range(3)])\n"
        "await testing__crowd_seen()"
    )
    result = await pool.run_code(code)
    assert result.value["most"] == 3
    assert sorted(result.value["order"]) == [0, 1, 2]


async def test_a_tool_outside_the_profile_is_not_a_name_the_program_knows(
    pool: WorkerPool,
) -> None:
    profile = ToolProfile.of(["testing__echo"])
    result = await pool.run_code("await testing__echo(text='in')", profile=profile)
    assert result.value == "in"
    with pytest.raises(CodeError, match="NameError: name 'testing__pid' is not defined"):
        await pool.run_code("await testing__pid()", profile=profile)
    with pytest.raises(CodeError, match="NameError"):
        await pool.run_code("await testing__pid()", allowed=lambda name: name != "testing__pid")
    with pytest.raises(UnknownTool, match="testing__pid"):
        await pool.describe_tools(["testing__pid"], profile=profile)


async def test_a_program_cannot_call_run_code_or_the_meta_tools(pool: WorkerPool) -> None:
    for name in ("run_code", "search_tools", "describe_tools", "call_tool"):
        with pytest.raises(CodeError, match=f"NameError: name '{name}' is not defined"):
            await pool.run_code(f"await {name}(code='1')")


async def test_inputs_are_globals_the_program_starts_with(pool: WorkerPool) -> None:
    result = await pool.run_code(
        "await testing__echo(text=name * n)", inputs={"name": "ab", "n": 2}
    )
    assert result.value == "abab"
    with pytest.raises(ValueError, match="testing__echo"):
        await pool.run_code("1", inputs={"testing__echo": 1})


async def test_cancelling_the_run_cancels_its_inner_calls(pool: WorkerPool) -> None:
    with anyio.move_on_after(1) as scope:
        await pool.run_code("await testing__hang(key='codemode-cancel')")
    assert scope.cancelled_caught
    assert (await pool.call_tool("testing__was_cancelled", {"key": "codemode-cancel"})).result
    answer = await pool.run_code("await testing__was_cancelled(key='codemode-cancel')")
    assert answer.value is True
    assert (await pool.run_code("1 + 1")).value == 2


async def test_every_inner_call_is_a_child_span_of_one_run_code_span(recorded: Recorded) -> None:
    async with WorkerPool(["_servers:server"], timeout=10) as traced:
        await traced.run_code(
            "import asyncio\nawait asyncio.gather(testing__echo(text='a'), testing__pid())"
        )
    (run,) = [s for s in recorded.spans if s.name == "run_code"]
    calls = [s for s in recorded.spans if s.kind == SpanKind.CLIENT]
    assert sorted(s.name for s in calls) == ["tools/call echo", "tools/call pid"]
    assert run.context is not None
    for span in calls:
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id


async def test_describe_tools_gives_typed_stubs_by_full_name_or_identifier(
    pool: WorkerPool,
) -> None:
    stubs = await pool.describe_tools(["testing__listing", "testing__echo", "testing__items"])
    # The item shape both listings give is written once, named after its key.
    assert "Content={fileName:str,size:int,added:str,itemId:str}\n" in stubs
    assert (
        "async def testing__listing(count:int=20)->{contents:list[Content],total:int,"
        'hasMore:bool}:"""A page of items."""\n'
    ) in stubs
    # No output schema: the stub returns Any, and the header says what that is.
    assert 'async def testing__echo(text:str)->Any:"""Echo text back."""\n' in stubs
    assert "# Any: no output schema: the JSON in its text, else the text\n" in stubs
    assert "->Any" not in await pool.describe_tools(["testing__listing"])
    # A list the SDK wraps as {"result": [...]} arrives bare, and its stub says so.
    assert "async def testing__items(count:int=20)->list[Content]:" in stubs
    assert stubs.startswith("# await tool(k=v), keywords only; asyncio.gather runs calls")


async def test_each_inner_calls_progress_reaches_the_run_naming_the_call(pool: WorkerPool) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    options = CallOptions(on_progress=lambda p, t, m: seen.append((p, t, m)))
    program = (
        "import asyncio\n"
        "await testing__progress(steps=2)\n"
        "await asyncio.gather(testing__progress(steps=1), testing__progress(steps=1))"
    )
    await pool.run_code(program, options=options)
    assert seen[:2] == [(1, 2, "testing__progress: step 1"), (2, 2, "testing__progress: step 2")]
    assert seen[2:] == [(1, 1, "testing__progress: step 1")] * 2


async def test_each_inner_calls_log_messages_reach_the_run_with_a_logger_naming_the_call(
    pool: WorkerPool,
) -> None:
    heard: list[tuple[str, object, str | None]] = []
    options = CallOptions(on_log=lambda level, data, logger: heard.append((level, data, logger)))
    program = "await testing__progress(steps=2)\nawait testing__echo(text='quiet')"
    await pool.run_code(program, options=options)
    assert heard == [
        ("info", "did step 1", "testing__progress"),
        ("info", "did step 2", "testing__progress"),
    ]
