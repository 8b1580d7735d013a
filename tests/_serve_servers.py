"""Servers for the MCP boundary tests; a module so worker processes can import them."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from nativemcp.protocol import ToolError
from nativemcp.workers import Context, Server


class Point(msgspec.Struct):
    x: int
    y: int


class Answer(msgspec.Struct):
    name: str


server = Server("shapes", description="Typed tools for the MCP boundary tests")


@server.tool
def move(point: Point, dx: int = 1) -> Point:
    """Move a point right by dx."""
    return Point(x=point.x + dx, y=point.y)


@server.tool
def corners(size: int) -> list[Point]:
    """The corners of a square (a bare list: its typed form differs from its JSON form)."""
    return [Point(0, 0), Point(size, 0), Point(size, size), Point(0, size)]


@server.tool
async def count(ctx: Context, steps: int = 3) -> int:
    """Count up, reporting progress and logging each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"counted {step}")
    return steps


@server.tool
def refuse(reason: str) -> int:
    """Always fails with a coded tool error."""
    raise ToolError(reason, code=4001)


@server.tool
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model."""
    answer = await ctx.sample(question, max_tokens=20)
    return f"model says {answer.text}"


@server.tool
async def ask_user(ctx: Context) -> str:
    """Ask the user for a name."""
    answer = await ctx.elicit("Your name?", Answer)
    return f"hello {answer.content.name}" if answer.action == "accept" else answer.action


@server.tool
async def ask_named(ctx: Context) -> str:
    """Ask the model, then the user, each request under a name of the tool's."""
    model = await ctx.sample("capital of France?", max_tokens=20, key="capital")
    user = await ctx.elicit("Your name?", Answer, key="who")
    return f"{model.text}, {user.content.name if user.action == 'accept' else user.action}"


@server.tool
def whoami(ctx: Context) -> str:
    """The call's session scope."""
    return f"{ctx.session_id}/{ctx.thread_id}"


@server.tool
def caller(ctx: Context) -> str:
    """Who is calling, as the call's Context says: subject, client and scopes."""
    who = ctx.caller
    if who is None:
        return "nobody"
    return f"{who.subject} via {who.client_id} with {' '.join(sorted(who.scopes))!r}"


@server.service_context
def _context() -> str:
    return "Shapes live on an integer grid."


@server.resource("shapes://unit", mime_type="application/json")
def unit() -> Point:
    """The unit point."""
    return Point(1, 1)


@server.resource("shapes://square/{size}")
def square(size: str) -> str:
    """A square's description."""
    return f"a square of side {size}"


@server.prompt()
def describe(shape: str, tone: str = "plain") -> str:
    """Ask for a description of a shape."""
    return f"Describe a {shape} in a {tone} tone."


@server.completion
def complete(ref: object, argument: str, value: str) -> list[str]:
    """Shapes starting with the typed prefix."""
    return [s for s in ("circle", "square", "star") if s.startswith(value)]


other = Server("other", description="A second server, for the catalog route")


@other.tool
def ping_other() -> str:
    """Answer pong."""
    return "pong"


@server.tool
async def slow(ctx: Context, seconds: float = 1.0) -> str:
    """Report that it started, then take ``seconds``."""
    await ctx.report_progress(0, 1, "started")
    await anyio.sleep(seconds)
    return "finished"


@server.tool
async def touch(uri: str, ctx: Context) -> str:
    """Report that a resource changed."""
    await ctx.resource_updated(uri)
    return "touched"


@server.tool
async def ask_twice(topic: str, ctx: Context) -> str:
    """Ask the client's model, then the user: two rounds of input."""
    draft = await ctx.sample(f"a name for {topic}", max_tokens=20)
    confirmed = await ctx.elicit(f"Call it {draft.text}?", Answer)
    if confirmed.action != "accept":
        return f"{draft.text}, {confirmed.action}"
    return f"{draft.text}, then {confirmed.content.name}"


@server.tool
async def ask_and_note(path: str, ctx: Context) -> str:
    """Ask the user, writing to ``path`` whether the call finished or was cancelled."""
    from pathlib import Path

    try:
        answer = await ctx.elicit("Your name?", Answer)
    except anyio.get_cancelled_exc_class():
        # Written without awaiting: an await in a cancelled call would not run.
        Path(path).write_text("cancelled")  # noqa: ASYNC240
        raise
    Path(path).write_text("finished")  # noqa: ASYNC240
    return answer.action


@server.tool
async def ask_both(ctx: Context) -> str:
    """Ask the client's model two questions at once."""
    first, second = await _gather(ctx.sample("one", max_tokens=5), ctx.sample("two", max_tokens=5))
    return f"{first.text} | {second.text}"


@server.tool
async def ask_both_a_moment_apart(ctx: Context) -> str:
    """Ask the client's model two questions at once, the second a few ms after the
    first (as a tool's gathered requests may reach serve)."""

    async def later() -> Any:
        await anyio.sleep(0.005)
        return await ctx.sample("two", max_tokens=5)

    first, second = await _gather(ctx.sample("one", max_tokens=5), later())
    return f"{first.text} | {second.text}"


async def _gather(*awaitables: Any) -> list[Any]:
    results: list[Any] = [None] * len(awaitables)

    async def run(index: int, awaitable: Any) -> None:
        results[index] = await awaitable

    async with anyio.create_task_group() as tg:
        for index, awaitable in enumerate(awaitables):
            tg.start_soon(run, index, awaitable)
    return results


routed = Server("routed", description="A tool whose schema asks for a routing header")


@routed.tool(
    input_schema={
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "key": {"type": "string"},
        },
        "required": ["region", "key"],
    }
)
def fetch(region: str, key: str) -> str:
    """Read a key in a region (2026-07-28 clients mirror the region into a header)."""
    return f"{region}/{key}"
