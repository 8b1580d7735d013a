"""The fixture for the official MCP conformance suite, written with nativemcp's own API.

`nativemcp serve --transport http tests/conformance_server.py:server` serves it; the
suite (`@modelcontextprotocol/conformance`) then checks every server scenario. The
tool, resource and prompt names are the suite's (its scenario sources name them).
"""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

import anyio

from nativemcp.protocol import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    NativeMCPResponse,
    ResourceContents,
    TextContent,
    error_response,
)
from nativemcp.workers import ClientRequestError, CompletionRef, Context, PromptMessage, Server

TEST_IMAGE_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="  # noqa: E501
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

server = Server("conformance", description="Every MCP server feature, for the conformance suite")


def _blocks(*content: Any) -> NativeMCPResponse[None]:
    return NativeMCPResponse(result=CallToolResult(content=list(content)))


@server.tool
def test_simple_text() -> str:
    """Tests simple text content response"""
    return "This is a simple text response for testing."


@server.tool
def test_image_content() -> NativeMCPResponse[None]:
    """Tests image content response"""
    return _blocks(ImageContent(data=TEST_IMAGE_BASE64, mime_type="image/png"))


@server.tool
def test_audio_content() -> NativeMCPResponse[None]:
    """Tests audio content response"""
    return _blocks(AudioContent(data=TEST_AUDIO_BASE64, mime_type="audio/wav"))


@server.tool
def test_embedded_resource() -> NativeMCPResponse[None]:
    """Tests embedded resource content response"""
    return _blocks(
        EmbeddedResource(
            resource=ResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            )
        )
    )


@server.tool
def test_multiple_content_types() -> NativeMCPResponse[None]:
    """Tests response with multiple content types (text, image, resource)"""
    return _blocks(
        TextContent(text="Multiple content types test:"),
        ImageContent(data=TEST_IMAGE_BASE64, mime_type="image/png"),
        EmbeddedResource(
            resource=ResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text='{"test": "data", "value": 123}',
            )
        ),
    )


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution"""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications"""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(0.05)
    return "Progress test completed"


@server.tool
def test_error_handling() -> str:
    """Tests error response handling"""
    raise RuntimeError("This tool intentionally returns an error for testing")


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)"""
    answer = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {answer.text or 'No response'}"


_USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)"""
    answer = await ctx.elicit(message, _USER_SCHEMA)
    return f"User response: action={answer.action}, content={json.dumps(answer.content or {})}"


_DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)"""
    answer = await ctx.elicit("Please provide user information", _DEFAULTS_SCHEMA)
    return f"Elicitation result: action={answer.action}, content={json.dumps(answer.content)}"


_ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Simple enum without titles",
            "enum": ["active", "inactive", "pending"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Enum with titled options (oneOf)",
            "oneOf": [
                {"const": "low", "title": "Low Priority"},
                {"const": "medium", "title": "Medium Priority"},
                {"const": "high", "title": "High Priority"},
            ],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Multi-select without titles",
            "items": {"type": "string", "enum": ["read", "write", "execute"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Multi-select with titled options",
            "items": {
                "anyOf": [
                    {"const": "feature", "title": "New Feature"},
                    {"const": "bug", "title": "Bug Fix"},
                    {"const": "docs", "title": "Documentation"},
                ]
            },
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy enum with enumNames",
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        },
    },
    "required": ["untitledSingle", "titledSingle", "untitledMulti", "titledMulti", "legacyEnum"],
}


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema variations per SEP-1330"""
    answer = await ctx.elicit(
        "Please select values using different enum schema types", _ENUMS_SCHEMA
    )
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tests JSON Schema 2020-12 keyword preservation in tools/list."""
    return "json_schema_2020_12_tool"


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE polling (SEP-1699); here the stream stays open for the whole call"""
    await ctx.info("Before disconnect")
    await anyio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# -- resources ---------------------------------------------------------------------


@server.resource("test://static-text", mime_type="text/plain")
def static_text_resource() -> str:
    """A static text resource for testing"""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary_resource() -> bytes:
    """A static binary resource (image) for testing"""
    return base64.b64decode(TEST_IMAGE_BASE64)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_resource(id: str) -> str:
    """A resource template with parameter substitution"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to for updates"""
    return "Watched resource content"


# -- prompts -----------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments"""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that includes an embedded resource"""
    return [
        EmbeddedResource(
            resource=ResourceContents(
                uri=resourceUri,
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
        ),
        "Please process the embedded resource above.",
    ]


@server.prompt()
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes image content"""
    return [
        PromptMessage(
            role="user", content=ImageContent(data=TEST_IMAGE_BASE64, mime_type="image/png")
        ),
        "Please analyze the image above.",
    ]


@server.completion
def complete(ref: CompletionRef, argument: str, value: str) -> list[str]:
    """Suggestions for prompt arguments: none here (the suite checks the shape)."""
    return []


# -- 2026-07-28: the Tasks extension (SEP-2663) --------------------------------------
# Tools with task support run as tasks for a client that declares the extension; the
# suite's tasks scenarios name these.


@server.tool
def greet(name: str) -> str:
    """Greets by name (sync-only: never a task)"""
    return f"Hello, {name}!"


@server.tool(task_support="optional")
async def slow_compute(seconds: float = 1, label: str = "") -> str:
    """Sleeps `seconds` then answers (task-supporting; cancelled while it sleeps)"""
    await anyio.sleep(seconds)
    return f"computed {label or 'result'} after {seconds:g} s"


@server.tool(task_support="required")
async def failing_job() -> str:
    """Fails as a tool (isError) after about a second (task support required)"""
    await anyio.sleep(1)
    raise RuntimeError("failing_job failed, as it always does")


@server.tool(task_support="optional")
def protocol_error_job() -> NativeMCPResponse[None]:
    """Fails with a JSON-RPC (protocol) error, not a tool error"""
    return error_response("protocol_error_job failed at the protocol level")


@server.tool(task_support="optional")
async def confirm_delete(ctx: Context, filename: str = "example.txt") -> str:
    """Asks the user to confirm once (one elicitation), then answers"""
    answer = await ctx.elicit(f"Delete {filename}?", _CONFIRM_SCHEMA)
    return f"delete {filename}: action={answer.action}, content={json.dumps(answer.content)}"


_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
_NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


@server.tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once (two elicitations pending together)"""
    answers: dict[str, Any] = {}

    async def ask(key: str, message: str) -> None:
        answers[key] = (await ctx.elicit(message, _NAME_SCHEMA)).content

    async with anyio.create_task_group() as group:
        group.start_soon(ask, "first", "First name?")
        group.start_soon(ask, "second", "Second name?")
    return f"multi_input: {json.dumps(answers, sort_keys=True)}"


@server.tool(task_support="optional")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks the user's name, then runs on as a task"""
    answer = await ctx.elicit("What is your name?", _NAME_SCHEMA)
    return f"Hello, {(answer.content or {}).get('name')}!"


# -- 2026-07-28: stateless requests (SEP-2575) ---------------------------------------


@server.tool
async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling, so a client that did not declare it is refused"""
    answer = await ctx.sample("Say hello", max_tokens=10)
    return f"LLM response: {answer.text}"


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user through the response (never a request of its own on the stream)"""
    answer = await ctx.elicit("What is your name?", _NAME_SCHEMA)
    return f"Hello, {(answer.content or {}).get('name')}!"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Logs at info (sent only to a request that asked for a log level)"""
    await ctx.info("test_logging_tool ran")
    return "logged"


# -- 2026-07-28: custom headers (SEP-2243) -------------------------------------------

_HEADER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "query": {"type": "string"},
    },
    "required": ["region", "query"],
}


@server.tool(input_schema=_HEADER_SCHEMA)
def test_custom_header(region: str, query: str) -> str:
    """Mirrors `region` into the Mcp-Param-Region header (x-mcp-header)"""
    return f"{query} in {region}"


# -- 2026-07-28: input-required results (SEP-2322) -----------------------------------
# serve suspends the tool at each request to its client and answers the call with an
# InputRequiredResult; the client's retry resumes it. The keys are the suite's.


def _name(answer: Any) -> str:
    return str((answer.content or {}).get("name"))


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (inputRequests key user_name), then greets"""
    answer = await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")
    return f"Hello, {_name(answer)}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model (key capital_question), then answers with its text"""
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=50, key="capital_question"
    )
    return f"The model said: {answer.text}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client's roots (key client_roots), then lists them"""
    roots = await ctx.request_client("roots/list", {}, key="client_roots")
    return "Roots: " + ", ".join(root.get("uri", "?") for root in roots.get("roots", []))


_OK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation (key confirm); its retry's requestState resumes the call"""
    answer = await ctx.elicit("Please confirm", _OK_SCHEMA, key="confirm")
    return f"state-ok: the retry resumed the call (action={answer.action})"


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation; a retry whose requestState was altered is refused"""
    answer = await ctx.elicit("Please confirm", _OK_SCHEMA, key="confirm")
    return f"confirmed (action={answer.action})"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for a name, a greeting and the roots at once (three inputRequests)"""
    got: dict[str, Any] = {}

    async def name() -> None:
        got["name"] = _name(await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name"))

    async def greeting() -> None:
        got["greeting"] = (
            await ctx.sample("Generate a greeting", max_tokens=50, key="greeting")
        ).text

    async def roots() -> None:
        got["roots"] = len(
            (await ctx.request_client("roots/list", {}, key="client_roots")).get("roots", [])
        )

    async with anyio.create_task_group() as group:
        for ask in (name, greeting, roots):
            group.start_soon(ask)
    return f"name={got['name']}, greeting={got['greeting']}, roots={got['roots']}"


_COLOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks twice, one round after the other (keys step1, step2)"""
    name = _name(await ctx.elicit("Step 1: What is your name?", _NAME_SCHEMA, key="step1"))
    color = await ctx.elicit("Step 2: What is your favorite color?", _COLOR_SCHEMA, key="step2")
    return f"{name} likes {(color.content or {}).get('color')}"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the client declared: elicitation where it can, sampling where it can"""
    asked: list[str] = []
    # A request the client did not declare is refused at once (never sent): skip it.
    with contextlib.suppress(ClientRequestError):
        asked.append(_name(await ctx.elicit("What is your name?", _NAME_SCHEMA, key="user_name")))
    with contextlib.suppress(ClientRequestError):
        asked.append((await ctx.sample("Say hello", max_tokens=20, key="greeting")).text)
    return f"answered: {asked}"
