"""Servers for the runtime tests; a module so worker processes can import them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import threading
import time
import uuid
from decimal import Decimal
from typing import Any

import anyio
import msgspec

from nativemcp.protocol import (
    NativeMCPResponse,
    ResourceContents,
    ToolError,
    text_resource_response,
)
from nativemcp.workers import Context, Server, ServerConfig


class Item(msgspec.Struct, rename="camel"):
    file_name: str
    size: int
    added: dt.datetime
    item_id: uuid.UUID


class Listing(msgspec.Struct, rename="camel"):
    contents: list[Item]
    total: int
    has_more: bool


@dataclasses.dataclass
class Money:
    amount: Decimal
    currency: str


server = Server("testing", description="Tools for the runtime tests")

# Per-process state the tests query through tools.
_cancelled: dict[str, anyio.Event] = {}


def _cancel_event(key: str) -> anyio.Event:
    return _cancelled.setdefault(key, anyio.Event())


def make_items(n: int) -> list[Item]:
    base = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    return [
        Item(
            file_name=f"file{i}.md",
            size=i * 100,
            added=base + dt.timedelta(minutes=i),
            item_id=uuid.UUID(int=i),
        )
        for i in range(n)
    ]


@server.tool
def listing(count: int = 20) -> Listing:
    """A page of items."""
    items = make_items(count)
    return Listing(contents=items, total=count, has_more=False)


@server.tool
def items(count: int = 20) -> list[Item]:
    """Items as a bare list."""
    return make_items(count)


@server.tool
def money(amount: Decimal) -> Money:
    """Echo an amount of money."""
    return Money(amount=amount, currency="EUR")


@server.tool
def echo(text: str) -> str:
    """Echo text back."""
    return text


@server.tool
def blob(size: int) -> str:
    """A string of `size` characters."""
    return "x" * size


@server.tool
def pid() -> int:
    """The worker's process id."""
    return os.getpid()


@server.tool
def chatty(lines: int = 3) -> int:
    """Prints and logs; returns how many lines it printed."""
    for number in range(lines):
        print(f"printed line {number}")
    logging.getLogger("tests.chatty").warning("logged from the worker")
    return lines


@server.tool
async def progress(ctx: Context, steps: int = 3) -> str:
    """Reports progress and logs, then returns."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"did step {step}")
    return "finished"


@server.tool
async def hang(ctx: Context, key: str) -> str:
    """Waits forever (until cancelled); records the cancellation under `key`."""
    await ctx.report_progress(0, None, "started")
    try:
        await anyio.sleep_forever()
    except BaseException:
        _cancel_event(key).set()
        raise
    return "never"


@server.resource("test://hang/{key}")
async def hanging_resource(key: str) -> str:
    """A resource that never reads (until cancelled); records the cancellation."""
    try:
        await anyio.sleep_forever()
    except BaseException:
        _cancel_event(key).set()
        raise
    return "never"


@server.tool
async def was_cancelled(key: str) -> bool:
    """Whether the call started with `key` was cancelled (waits briefly for it)."""
    event = _cancel_event(key)
    with anyio.move_on_after(5):
        await event.wait()
    return event.is_set()


@server.tool
def fail(message: str) -> int:
    """Raises an ordinary exception."""
    raise RuntimeError(message)


@server.tool
def refuse(store_id: str) -> int:
    """Raises a deliberate tool error."""
    raise ToolError(f"Store {store_id!r} not found", structured_content={"storeId": store_id})


@server.tool
def card(title: str) -> NativeMCPResponse[dict[str, Any]]:
    """Text then a resource."""
    return text_resource_response(
        f"Made a card titled {title}",
        ResourceContents(uri="ui://tests/card/1", mime_type="text/html", text="<p>card</p>"),
        value={"title": title},
    )


@server.tool
def scope() -> dict[str, Any]:
    """The current session and thread."""
    return {"session": server.session_id, "thread": server.thread_id}


_saw_cancel: dict[str, bool] = {}


@server.tool
def sleepy(ctx: Context, key: str, seconds: float) -> str:
    """A cooperative sync tool: sleeps in steps until done or cancelled."""
    anyio.from_thread.run(ctx.report_progress, 0, None, "started")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ctx.cancelled:
            _saw_cancel[key] = True
            return "stopped"
        time.sleep(0.01)
    return "slept"


@server.tool
def saw_cancel(key: str) -> bool:
    """Whether `sleepy` with `key` saw its cancellation (waits briefly for it)."""
    deadline = time.monotonic() + 10
    while key not in _saw_cancel and time.monotonic() < deadline:
        time.sleep(0.01)
    return _saw_cancel.get(key, False)


@server.tool
def block(seconds: float) -> str:
    """A sync tool that blocks and cannot be stopped."""

    time.sleep(seconds)
    return "done"


class _Crowd:
    """How many `crowd` calls run at once, the most seen, and their starting order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.order: list[int] = []


_crowd = _Crowd()


@server.tool
def crowd(seconds: float, index: int) -> int:
    """A sync tool that holds its thread for ``seconds``; returns how many ran at once."""
    with _crowd.lock:
        _crowd.now += 1
        _crowd.most = max(_crowd.most, _crowd.now)
        _crowd.order.append(index)
    time.sleep(seconds)
    with _crowd.lock:
        _crowd.now -= 1
        return _crowd.most


@server.tool
def crowd_seen() -> dict[str, Any]:
    """The most `crowd` calls that ran at once, and the order they started in; resets."""
    with _crowd.lock:
        seen = {"most": _crowd.most, "order": list(_crowd.order)}
        _crowd.most, _crowd.order = 0, []
    return seen


@server.tool(inline=True)
def block_inline(seconds: float, marker: str) -> str:
    """Blocks the worker's event loop itself (an inline tool), after creating `marker`."""
    from pathlib import Path

    Path(marker).touch()
    time.sleep(seconds)
    return "done"


@server.service_context
def _context() -> str:
    return f"testing server, session {server.session_id}"


def broken_factory(config: ServerConfig) -> Server:
    """A server factory that fails while loading."""
    raise RuntimeError("the database is missing")


def slow_factory(config: ServerConfig) -> Server:
    """A server factory that never finishes loading."""

    time.sleep(60)
    return server


def _render_listing(value: Listing) -> str:
    # The log record shows the parent (and the value-only tests) that text was rendered.
    logging.getLogger("tests.render").info("rendered %d items", value.total)
    return f"{value.total} files: " + ", ".join(item.file_name for item in value.contents)


@server.tool(render=_render_listing)
def rendered_listing(count: int = 2) -> Listing:
    """A listing whose text comes from a renderer that logs each time it runs."""
    return listing(count)


@server.tool(render=_render_listing, inline=True)
def rendered_listing_inline(count: int = 2) -> Listing:
    """`rendered_listing` on the worker's event loop."""
    return listing(count)


# A server whose tools ask their client (sampling, elicitation) and report their scope.
asking = Server("asking")


@asking.tool
async def sample(question: str, ctx: Context) -> str:
    answer = await ctx.sample(question)
    return answer.text


@asking.tool
async def elicit(ctx: Context) -> str:
    answer = await ctx.elicit("name?", {"type": "object", "properties": {}})
    return f"{answer.action}:{answer.content}"


@asking.tool(task_support="optional")
async def sample_both(first: str, second: str, ctx: Context) -> str:
    """Asks its client two questions at once; answers both, in order."""
    answers: dict[str, str] = {}

    async def ask(question: str) -> None:
        answers[question] = (await ctx.sample(question)).text

    async with anyio.create_task_group() as group:
        group.start_soon(ask, first)
        group.start_soon(ask, second)
    return f"{answers[first]} {answers[second]}"


@asking.tool(name="scope")
def asking_scope(ctx: Context) -> str:
    return f"{ctx.session_id}/{ctx.thread_id}"


def notes_server() -> Server:
    """Two note tools kept in memory, for the tool search tests (run in process)."""
    notes = Server("notes", description="Notes kept in memory")

    @notes.tool
    def add_note(title: str, body: str) -> str:
        """Save a new note under a title."""
        return f"saved {title}"

    @notes.tool
    def list_notes() -> list[str]:
        """Every note's title."""
        return []

    return notes
