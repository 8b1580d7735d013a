"""Resources, prompts, completions, client requests and per-call scope, in a worker and
in-process, through `WorkerPool` proxies."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from nativemcp.protocol import ImageContent, TextContent
from nativemcp.proxy import WorkerPool
from nativemcp.workers import (
    ClientRequestError,
    CompletionRef,
    Context,
    FeatureError,
    PromptMessage,
    Server,
)

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


features = Server("features")


@features.resource("mem://text", mime_type="text/markdown")
def text_resource() -> str:
    """Some markdown."""
    return "# Title"


@features.resource("mem://bytes")
async def bytes_resource() -> bytes:
    return b"\x00\x01\x02"


@features.resource("mem://user/{user}/note/{note}")
def note(user: str, note: str) -> dict[str, str]:
    """One user's note."""
    return {"user": user, "note": note}


@features.prompt()
def greet(name: str, mood: str = "cheerful") -> list[Any]:
    """Greet someone."""
    return [
        f"Greet {name}, {mood}.",
        PromptMessage(role="assistant", content=TextContent(text="Hello!")),
        ImageContent(data="AAAA", mime_type="image/png"),
    ]


@features.completion
async def complete(ref: CompletionRef, argument: str, value: str) -> list[str]:
    return [f"{ref.name}:{argument}:{value}"]


@pytest.fixture(params=["worker", "in-process"])
async def pool(request: pytest.FixtureRequest) -> AsyncIterator[WorkerPool]:
    in_process = ("features", "asking") if request.param == "in-process" else ()

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": text.upper()},
            "model": "m",
        }

    with anyio.fail_after(30):
        async with WorkerPool(
            [f"{__name__}:features", "_servers:asking"],
            in_process=in_process,
            timeout=20,
            sampling_handler=sampling,
        ) as pool:
            yield pool


async def test_resources_list_read_and_match_templates(pool: WorkerPool) -> None:
    proxy = pool.server("features")
    assert [r.uri for r in await proxy.list_resources()] == ["mem://text", "mem://bytes"]
    templates = await proxy.list_resource_templates()
    assert [t.uri_template for t in templates] == ["mem://user/{user}/note/{note}"]
    (text,) = await proxy.read_resource("mem://text")
    assert (text.text, text.mime_type) == ("# Title", "text/markdown")
    (blob,) = await proxy.read_resource("mem://bytes")
    assert blob.blob is not None and base64.b64decode(blob.blob) == b"\x00\x01\x02"
    (data,) = await proxy.read_resource("mem://user/ada/note/7")
    assert data.text == '{"user":"ada","note":"7"}'
    assert data.mime_type == "application/json"


async def test_unknown_resource_names_what_exists(pool: WorkerPool) -> None:
    with pytest.raises(FeatureError, match=r"unknown resource 'mem://nope'.*mem://text"):
        await pool.server("features").read_resource("mem://nope")


async def test_prompts_fill_in_arguments_and_check_them(pool: WorkerPool) -> None:
    proxy = pool.server("features")
    (prompt,) = await proxy.list_prompts()
    assert prompt.name == "greet"
    assert [(a.name, a.required) for a in prompt.arguments or []] == [
        ("name", True),
        ("mood", False),
    ]
    result = await proxy.get_prompt("greet", {"name": "Ada"})
    assert [m.role for m in result.messages] == ["user", "assistant", "user"]
    first = result.messages[0].content
    assert isinstance(first, TextContent) and first.text == "Greet Ada, cheerful."
    assert isinstance(result.messages[2].content, ImageContent)
    with pytest.raises(FeatureError, match="missing name; unknown colour"):
        await proxy.get_prompt("greet", {"colour": "red"})
    with pytest.raises(FeatureError, match="unknown prompt 'nope'; prompts: greet"):
        await proxy.get_prompt("nope")


async def test_completion_hook_answers(pool: WorkerPool) -> None:
    values = await pool.server("features").complete(
        CompletionRef(type="ref/prompt", name="greet"), "name", "A"
    )
    assert values == ["greet:name:A"]
    # The spec's reference object works as well, and a malformed one says what is wrong.
    spec_ref = {"type": "ref/prompt", "name": "greet"}
    assert await pool.server("features").complete(spec_ref, "name", "A") == values
    with pytest.raises(ValueError, match="needs a 'name' string"):
        await pool.server("features").complete({"type": "ref/prompt"}, "name", "A")
    with pytest.raises(ValueError, match="'ref/prompt' or 'ref/resource', not 'prompt'"):
        await pool.server("features").complete({"type": "prompt", "name": "g"}, "name", "A")


async def test_sampling_goes_to_the_pool_handler(pool: WorkerPool) -> None:
    assert await pool.server("asking").sample(question="hi there") == "HI THERE"


async def test_elicitation_without_a_handler_is_a_clear_tool_error(pool: WorkerPool) -> None:
    response = await pool.server("asking").call_tool("elicit", {})
    assert response.result is not None and response.result.is_error
    block = response.result.content[0]
    assert isinstance(block, TextContent)
    assert "elicitation_handler" in block.text


async def test_scope_travels_with_each_call(pool: WorkerPool) -> None:
    proxy = pool.server("asking")
    await proxy.switch_context("default-session", "t0")
    scoped = await proxy.call_tool("scope", {}, session_id="s1", thread_id="t1")
    unscoped = await proxy.call_tool("scope", {})
    assert scoped.result is not None and unscoped.result is not None
    assert [b.text for b in scoped.result.content if isinstance(b, TextContent)] == ["s1/t1"]
    assert [b.text for b in unscoped.result.content if isinstance(b, TextContent)] == [
        "default-session/t0"
    ]


def test_template_placeholders_must_be_the_parameters() -> None:
    server = Server("bad")
    with pytest.raises(ValueError, match="placeholders"):

        @server.resource("x://{a}/{b}")
        def wrong(a: str) -> str:
            return a


async def test_sample_with_no_client_at_all_says_how_to_get_one() -> None:
    ctx = Context(server_name="s", tool_name="t")
    with pytest.raises(ClientRequestError, match="sampling_handler"):
        await ctx.sample("hello")


async def test_stored_items_and_workspace_exports_are_resources(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with WorkerPool(
            data_dir=tmp_path / "data",
            workspace_root=tmp_path / "root",
            builtins=["content-store", "workspace"],
            in_process=(),
        ) as pool:
            store = pool.server("content-store")
            created = await store.create_store(name="notes")
            added = await store.add_content(
                store_id=created.store_id, content="첫 줄\n둘째 줄", filename="a.md"
            )
            uri = f"nativemcp://content-store/{created.store_id}/{added.content_id}"
            listed = await store.list_resources()
            assert [(r.uri, r.name) for r in listed] == [(uri, "a.md")]
            (contents,) = await store.read_resource(uri)
            assert contents.text == "첫 줄\n둘째 줄"
            with pytest.raises(FeatureError, match="no content 'nope'"):
                await store.read_resource(f"nativemcp://content-store/{created.store_id}/nope")

            ws = pool.server("workspace")
            await ws.write_file(path="report one.md", content="# exported")
            export = await ws.export_file(path="report one.md")
            await ws.export_zip(files=["report one.md"], package_name="report")
            # The export card's app page first (a declared resource), then the exports.
            app, resource, package = await ws.list_resources()
            assert (app.uri, app.mime_type) == (
                "ui://nativemcp/export-card.html",
                "text/html;profile=mcp-app",
            )
            assert resource.uri.startswith("workspace:///exports/files/")
            assert resource.uri.endswith(".md") and " " not in resource.uri
            assert resource.name == Path(export.export_path).name
            # The mime type the listing gives is the one the read gives; text is text.
            (text,) = await ws.read_resource(resource.uri)
            assert (resource.mime_type, text.mime_type) == ("text/markdown", "text/markdown")
            assert (text.text, text.blob) == ("# exported", None)
            (blob,) = await ws.read_resource(package.uri)
            assert (package.mime_type, blob.mime_type) == ("application/zip", "application/zip")
            assert blob.blob is not None and base64.b64decode(blob.blob)[:2] == b"PK"


@pytest.mark.parametrize("in_process", [(), ("asking",)], ids=["worker", "in-process"])
async def test_a_tool_may_wait_on_two_client_requests_at_once(in_process: tuple[str, ...]) -> None:
    # The handler answers only once both questions are pending together: asked one
    # after the other, the first would wait for the second forever (fail_after).
    pending: list[str] = []
    both = anyio.Event()

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        text = params["messages"][0]["content"]["text"]
        pending.append(text)
        if len(pending) == 2:
            both.set()
        await both.wait()
        content = {"type": "text", "text": text.upper()}
        return {"role": "assistant", "content": content, "model": "m"}

    with anyio.fail_after(30):
        async with WorkerPool(
            ["_servers:asking"], in_process=in_process, timeout=20, sampling_handler=sampling
        ) as pool:
            answer = await pool.server("asking").sample_both(first="one", second="two")
    assert answer == "ONE TWO"
    assert sorted(pending) == ["one", "two"]


async def test_a_tool_declares_task_support_in_its_listing() -> None:
    with anyio.fail_after(30):
        async with WorkerPool(["_servers:asking"], in_process=()) as pool:
            tools = {tool.name: tool for tool in await pool.list_tools()}
    both = tools["asking__sample_both"].execution
    assert both is not None and both.task_support == "optional"
    assert tools["asking__sample"].execution is None
