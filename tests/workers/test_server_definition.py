"""The server-definition API, in-process: schemas, responses, errors and hooks."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, TypedDict

import msgspec
import pytest

from nativemcp.protocol import (
    INVALID_PARAMS,
    ToolAnnotations,
    ToolError,
    text_response,
    unwrap,
)
from nativemcp.workers import Context, ProgressNotification, Server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


class Point(msgspec.Struct, rename="camel"):
    x_value: int
    y_value: int


@dataclasses.dataclass
class Box:
    corner: Point
    label: str = "box"


class Totals(TypedDict):
    count: int


demo = Server("demo", version="1.2.3", description="A demo")


@demo.tool
def make_point(x: int, y: int = 0) -> Point:
    """Make a point."""
    return Point(x_value=x, y_value=y)


@demo.tool(name="boxed", title="Box it", render=lambda box: f"a box labelled {box.label}")
async def make_box(corner: Point, label: str = "box") -> Box:
    return Box(corner=corner, label=label)


@demo.tool(annotations=ToolAnnotations(read_only_hint=True))
def count(values: list[int]) -> Totals:
    """Count values."""
    return {"count": len(values)}


@demo.tool
def numbers(n: int) -> list[int]:
    return list(range(n))


@demo.tool
def nothing() -> None:
    return None


@demo.tool
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@demo.tool
def full(text: str) -> Any:
    return text_response(text.upper())


@demo.tool
async def with_progress(ctx: Context, steps: int) -> int:
    for step in range(steps):
        await ctx.report_progress(step + 1, steps)
    return steps


@demo.tool(threaded=True)
def blocking(n: int) -> int:
    return n * 2


def _tool(name: str) -> Any:
    return next(tool for tool in demo.list_tools() if tool.name == name)


def test_input_schema_comes_from_the_parameters() -> None:
    schema = _tool("make_point").input_schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert schema["properties"]["x"] == {"type": "integer"}
    assert schema["properties"]["y"] == {"type": "integer", "default": 0}
    assert schema["required"] == ["x"]


def test_context_parameters_are_not_part_of_the_schema() -> None:
    assert set(_tool("with_progress").input_schema["properties"]) == {"steps"}


def test_output_schema_is_an_object_and_wraps_non_objects() -> None:
    assert _tool("make_point").output_schema["properties"]["xValue"] == {"type": "integer"}
    wrapped = _tool("numbers").output_schema
    assert wrapped["required"] == ["result"]
    assert wrapped["properties"]["result"]["type"] == "array"
    assert _tool("greeting").output_schema is None


def test_title_description_and_annotations_are_listed() -> None:
    assert _tool("boxed").title == "Box it"
    assert _tool("make_point").description == "Make a point."
    assert _tool("count").annotations == ToolAnnotations(read_only_hint=True)


async def test_a_typed_value_becomes_rich_text_plus_structured_content() -> None:
    response = await demo.call_tool("make_point", {"x": 3, "y": 4})
    assert response.result is not None
    assert response.result.structured_content == {"xValue": 3, "yValue": 4}
    text = response.result.content[0].text  # type: ignore[union-attr]
    assert "xValue: 3" in text
    assert unwrap(response, Point) == Point(x_value=3, y_value=4)


async def test_a_custom_renderer_writes_the_text_and_struct_arguments_convert() -> None:
    response = await demo.call_tool("boxed", {"corner": {"xValue": 1, "yValue": 2}})
    assert response.result is not None
    assert response.result.content[0].text == "a box labelled box"  # type: ignore[union-attr]
    assert unwrap(response, Box) == Box(corner=Point(x_value=1, y_value=2))


async def test_lists_strings_none_and_full_responses() -> None:
    assert unwrap(await demo.call_tool("numbers", {"n": 3}), list[int]) == [0, 1, 2]
    assert unwrap(await demo.call_tool("greeting", {"name": "Ann"}), str) == "Hello, Ann!"
    empty = await demo.call_tool("nothing", {})
    assert empty.result is not None and empty.result.content == []
    assert unwrap(await demo.call_tool("full", {"text": "hi"}), str) == "HI"
    assert unwrap(await demo.call_tool("count", {"values": [1, 2]}), Totals) == {"count": 2}


async def test_threaded_sync_tools_run_and_return() -> None:
    assert unwrap(await demo.call_tool("blocking", {"n": 21}), int) == 42


async def test_progress_reaches_the_context_notify_callback() -> None:
    seen: list[Any] = []

    async def notify(notification: Any) -> None:
        seen.append(notification)

    context = Context(server_name="demo", tool_name="with_progress", notify=notify)
    await demo.call_tool("with_progress", {"steps": 2}, context=context)
    assert seen == [
        ProgressNotification(progress=1, total=2),
        ProgressNotification(progress=2, total=2),
    ]


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "missing required field `x`"),
        ({"x": "one"}, "$.x"),
        ({"x": 1, "z": 2}, "unknown field `z`"),
    ],
)
async def test_invalid_arguments_are_32602_naming_the_field(
    arguments: dict[str, Any], fragment: str
) -> None:
    response = await demo.call_tool("make_point", arguments)
    assert response.error is not None
    assert response.error.code == INVALID_PARAMS
    assert fragment in response.error.message


async def test_non_object_arguments_are_refused() -> None:
    response = await demo.call_tool("make_point", ["x"])  # type: ignore[arg-type]
    assert response.error is not None and response.error.code == INVALID_PARAMS


async def test_unknown_tool_lists_every_available_tool() -> None:
    response = await demo.call_tool("missing", {})
    assert response.error is not None
    assert response.error.code == INVALID_PARAMS
    assert all(name in response.error.message for name in demo.tool_names)


async def test_hooks_scope_and_service_context() -> None:
    server = Server("hooks")
    seen: list[tuple[str | None, str | None]] = []
    closed: list[bool] = []

    @server.on_switch_context
    async def switched(session: str | None, thread: str | None) -> None:
        seen.append((session, thread))

    @server.service_context
    def context() -> str:
        return f"session {server.session_id}"

    @server.on_shutdown
    def shutdown() -> None:
        closed.append(True)

    await server.switch_context("s1", "t1")
    assert seen == [("s1", "t1")]
    assert await server.get_service_context() == "session s1"
    await server.aclose()
    await server.aclose()
    assert closed == [True]


async def test_a_tool_error_is_an_is_error_result_with_its_data() -> None:
    server = Server("errors")

    @server.tool
    def lookup(store_id: str) -> int:
        raise ToolError(f"Store {store_id} not found", structured_content={"storeId": store_id})

    response = await server.call_tool("lookup", {"store_id": "s9"})
    assert response.result is not None and response.result.is_error
    assert response.result.structured_content == {"storeId": "s9"}
    with pytest.raises(ToolError, match="s9"):
        unwrap(response)


def test_declaration_errors_are_clear() -> None:
    server = Server("bad")
    with pytest.raises(ValueError, match="needs a type"):

        @server.tool
        def untyped(x) -> int:  # type: ignore[no-untyped-def]
            return 1

    @server.tool
    def once() -> int:
        return 1

    with pytest.raises(ValueError, match="already has a tool"):
        server.tool(name="once")(once)
    with pytest.raises(ValueError, match="must not contain"):
        Server("a__b")


def test_a_module_level_server_pickles_by_reference() -> None:
    assert pickle.loads(pickle.dumps(demo)) is demo
    local = Server("local")
    with pytest.raises(TypeError, match="define it at module level"):
        pickle.dumps(local)


# -- MCP Apps ------------------------------------------------------------------------------

apps_server = Server("apps_demo")


@apps_server.app("ui://apps_demo/page.html", permissions=["clipboardWrite"])
def page() -> str:
    """The page."""
    return "<!DOCTYPE html><p>hi</p>"


@apps_server.tool(ui="ui://apps_demo/page.html")
def shown() -> str:
    return "shown"


@apps_server.tool(ui="ui://apps_demo/page.html", visibility=["app"])
def refresh() -> str:
    return "fresh"


def test_a_tool_with_a_ui_names_its_page_and_who_may_call_it() -> None:
    tools = {tool.name: tool for tool in apps_server.list_tools()}
    assert tools["shown"].meta is not None
    assert tools["shown"].meta["ui"] == {"resourceUri": "ui://apps_demo/page.html"}
    assert tools["refresh"].meta is not None
    assert tools["refresh"].meta["ui"] == {
        "resourceUri": "ui://apps_demo/page.html",
        "visibility": ["app"],
    }


@pytest.mark.anyio
async def test_an_app_page_is_read_as_an_mcp_app_with_its_permissions() -> None:
    (contents,) = await apps_server.read_resource("ui://apps_demo/page.html")
    assert contents.mime_type == "text/html;profile=mcp-app"
    assert contents.meta == {"ui": {"permissions": {"clipboardWrite": {}}}}
    assert contents.text == "<!DOCTYPE html><p>hi</p>"


def test_a_ui_that_is_not_a_ui_uri_or_visibility_without_a_ui_is_refused() -> None:
    server = Server("apps_bad")
    with pytest.raises(ValueError, match="ui:// URI"):
        server.tool(ui="https://example.com/page.html")
    with pytest.raises(ValueError, match="pass ui="):
        server.tool(visibility=["app"])
    with pytest.raises(ValueError, match="ui:// URI"):
        server.app("page.html")
