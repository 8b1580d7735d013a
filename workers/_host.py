"""The worker process: loads one server and serves it over the frame channel.

Started by the proxy with `multiprocess` (spawn or forkserver). Stdout and stderr are
not the channel: ``print`` output and log records are forwarded as `Log` frames to the
parent's ``logging`` (`_log_forwarding`). The worker exits when told to shut down or
when the channel closes (the parent is gone), so it never outlives its pool; with the
parent's pid it also exits as soon as that process dies, whatever it runs
(`_parent_watch`).

Threads, not the event loop, read the channel (`ReaderThreads`): sync tools that take no
`Context` run where their call was read, and everything else (async tools, pings,
features, context switches) is handed to the event loop in batches. Every thread writes
through one `FrameWriter`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import threading
from collections.abc import Coroutine
from typing import Any, Final

import anyio
import anyio.abc
import msgspec

from nativemcp.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ClientRequestError,
    FeatureError,
    NativeMCPResponse,
    error_response,
)
from nativemcp.protocol.wire import (
    Answer,
    Ask,
    Call,
    Cancel,
    FeatureRequest,
    GetServiceContext,
    ListTools,
    Notify,
    Ping,
    Ready,
    Result,
    Shutdown,
    StartFailed,
    SwitchContext,
    ToWorker,
    encode_frame,
    frame_fits,
    pack_reply,
    payload_size,
)

from ._config import ServerConfig, ServerSource, load_server
from ._context import Notification, ProgressNotification
from ._feature_dispatch import answer_feature
from ._frame_writer import FrameWriter
from ._log_forwarding import forward_output
from ._parent_watch import die_with_parent
from ._readers import Job, ReaderThreads
from ._server import TOOL_THREADS, Server
from ._threads import loop_thread_marker
from .channel import Inbox
from .telemetry import worker_tracing

__all__ = ["worker_main"]

try:  # uvloop halves the event loop's cost per message; it is optional
    import uvloop  # noqa: F401

    _HAS_UVLOOP = True
except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
    _HAS_UVLOOP = False

_SHUTDOWN_HOOK_TIMEOUT: Final = 5.0
"""How long the server's shutdown hooks may take before the worker exits anyway."""
_CLOSE_TIMEOUT: Final = 1.0
"""How long the last frames may take to reach the parent (it may be gone)."""


class _Worker:
    def __init__(self, server: Server, writer: FrameWriter, max_frame: int) -> None:
        self.server = server
        self.writer = writer
        self.max_frame = max_frame
        self.idle = True  # False while the dispatcher awaits a message's handling
        # Calls run as plain asyncio tasks: a third of the cost of a task-group task,
        # and a Cancel frame cancels the task itself.
        self.running: dict[int, asyncio.Task[None]] = {}
        # Requests from running calls to their clients (sampling, elicitation), by id.
        self.asks: dict[int, asyncio.Future[Answer]] = {}
        self.next_ask = 0

    async def ask(self, call_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a call's request to its client (through the parent) and await the answer."""
        self.next_ask += 1
        ask_id = self.next_ask
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.asks[ask_id] = future
        try:
            self.writer.write(
                encode_frame(Ask(id=ask_id, call=call_id, method=method, params=params))
            )
            answer = await future
        finally:
            self.asks.pop(ask_id, None)
        if answer.error is not None:
            raise ClientRequestError(answer.error, code=answer.code)
        return dict(answer.value or {})

    def on_answer(self, answer: Answer) -> None:
        future = self.asks.get(answer.id)
        if future is not None and not future.done():
            future.set_result(answer)

    async def answer_feature(self, request: FeatureRequest) -> None:
        tracing = worker_tracing(request.trace, self.server.name)
        try:
            if tracing is None:
                value = await answer_feature(self.server, request.method, request.params)
            else:
                value = await tracing.run_feature(
                    request,
                    self.server.name,
                    lambda: answer_feature(self.server, request.method, request.params),
                    self.writer.write,
                )
        except FeatureError as exc:
            result = Result(id=request.id, error=exc.message, code=exc.code)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            logging.getLogger("nativemcp.worker").exception("%s failed", request.method)
            result = Result(id=request.id, error=f"{type(exc).__name__}: {exc}")
        else:
            result = Result(id=request.id, value=value)
        frame = encode_frame(result)
        spans = tracing.spans_frame() if tracing is not None else b""
        self.writer.write(spans + frame if spans else frame)  # spans: see `run_direct`

    def start_call(self, call: Call) -> None:
        if self.server.direct_mode(call.tool) == "inline":
            self.writer.write(self.run_direct(call))  # a plain sync tool runs on the spot
            return
        self.start_request(call.id, self.run_call(call))

    def start_request(self, request_id: int, work: Coroutine[Any, Any, None]) -> None:
        """Run a call or a request as a task that a `Cancel` for its id cancels (the
        parent sends one when its caller times out or is cancelled)."""
        task = asyncio.get_running_loop().create_task(work)
        self.running[request_id] = task
        task.add_done_callback(lambda _: self.running.pop(request_id, None))

    async def cancel_all(self) -> None:
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=_SHUTDOWN_HOOK_TIMEOUT)

    async def run_call(self, call: Call) -> None:
        async def notify(notification: Notification) -> None:
            # Progress goes only to a caller that asked for it; log messages always go.
            if call.progress or not isinstance(notification, ProgressNotification):
                self.writer.write(encode_frame(Notify(id=call.id, notification=notification)))

        async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
            return await self.ask(call.id, method, params)

        scope = (
            (call.session_id, call.thread_id)
            if call.session_id is not None or call.thread_id is not None
            else None
        )
        context = self.server.make_context(
            call.tool,
            request_id=call.id,
            notify=notify,
            request=request,
            scope=scope,
            caller=call.caller,
        )
        tracing = worker_tracing(call.trace, self.server.name)
        spans = b""
        try:
            if tracing is None:
                response = await self.server.call_tool(
                    call.tool, call.arguments, context=context, value_only=call.value_only
                )
            else:
                response, spans = await tracing.run_async(
                    call,
                    self.server.name,
                    lambda: self.server.call_tool(
                        call.tool, call.arguments, context=context, value_only=call.value_only
                    ),
                    self.writer.write,
                )
        except asyncio.CancelledError:
            return  # the caller gave up (timeout or cancellation): no reply is wanted
        frame = reply_frame(call, response, self.max_frame)
        self.writer.write(spans + frame if spans else frame)  # spans: see `run_direct`

    def run_direct(self, call: Call) -> bytes:
        """Run a sync tool that takes no `Context` on this thread; its reply frame."""
        tracing = worker_tracing(call.trace, self.server.name)
        if tracing is None:
            response = self.server.run_direct(call.tool, call.arguments, value_only=call.value_only)
            return reply_frame(call, response, self.max_frame)
        # The spans go just before the reply, in the same write.
        response, spans = tracing.run(
            call,
            self.server.name,
            lambda: self.server.run_direct(call.tool, call.arguments, value_only=call.value_only),
        )
        return spans + reply_frame(call, response, self.max_frame)

    async def answer(self, request_id: int, get: Any) -> None:
        try:
            value = await get()
            self.writer.write(encode_frame(Result(id=request_id, value=value)))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            logging.getLogger("nativemcp.worker").exception("request failed")
            self.writer.write(
                encode_frame(Result(id=request_id, error=f"{type(exc).__name__}: {exc}"))
            )


def reply_frame(call: Call, response: NativeMCPResponse[Any], max_frame: int) -> bytes:
    """The frame answering ``call``: its response, or an error naming why it cannot go."""
    problem: str | None = None
    try:
        frame = encode_frame(pack_reply(call.id, response))
    except (TypeError, ValueError, OverflowError) as exc:
        logging.getLogger("nativemcp.worker").exception("cannot encode a reply")
        problem = f"the result of {call.tool!r} cannot be encoded: {exc}"
    else:
        if not frame_fits(payload_size(frame), max_frame):
            problem = (
                f"the result of {call.tool!r} is {payload_size(frame)} bytes, over the "
                f"frame limit of {max_frame} bytes; ask for less (page or filter)"
            )
    if problem is None:
        return frame
    return encode_frame(
        pack_reply(call.id, error_response(problem, code=INTERNAL_ERROR, id=call.id))
    )


_REQUEST_TAGS: Final = frozenset({"ping", "list_tools", "service_context", "switch_context"})
"""Tags of the requests answered with a `Result` (a `Call` gets a `Reply`)."""


def _undecodable_answer(payload: bytes, error: msgspec.MsgspecError) -> bytes | None:
    """The frame answering a request that does not decode, when its id can be read.

    A call whose tool name or argument keys are not strings, say, still carries its
    tag and id up front (messages are arrays): that call fails alone, with an error
    naming the problem, and the worker serves on. None when there is nobody to answer
    (no readable id, or a message that takes no answer).
    """
    try:
        raw = msgspec.msgpack.decode(payload)
    except msgspec.MsgspecError:
        return None
    if not (
        isinstance(raw, list)
        and len(raw) >= 2
        and isinstance(raw[0], str)
        and type(raw[1]) is int
        and 0 <= raw[1] < 2**63
    ):
        return None
    tag, request_id = raw[0], raw[1]
    problem = f"the worker could not read this {tag!r} request: {error}"
    if tag == "call":
        return encode_frame(
            pack_reply(request_id, error_response(problem, code=INVALID_PARAMS, id=request_id))
        )
    if tag in _REQUEST_TAGS:
        return encode_frame(Result(id=request_id, error=problem))
    return None


class _Switches:
    """Context switches passed to the event loop and not yet done: until they are, every
    call goes to the loop too, to queue behind them (later calls see the new scope)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = 0

    def __bool__(self) -> bool:
        return self._pending > 0

    def begin(self) -> None:
        with self._lock:
            self._pending += 1

    def end(self) -> None:
        with self._lock:
            self._pending -= 1


def _start_readers(
    sock: socket.socket, worker: _Worker, inbox: Inbox[Any], switches: _Switches
) -> ReaderThreads:
    """Start the threads that read ``sock``: a sync tool that takes no `Context` runs
    where its call was read; everything else goes to the event loop, in batches, through
    ``inbox`` (or starts there at once while the loop is idle)."""
    loop = asyncio.get_running_loop()
    server, writer, max_frame = worker.server, worker.writer, worker.max_frame
    for_loop: list[ToWorker] = []  # read in this batch, for the event loop

    def route(message: ToWorker) -> Job | None:
        # On the reading thread: sync tools that take no Context run off the loop.
        if isinstance(message, Call) and not switches:
            mode = server.direct_mode(message.tool)
            if mode == "inline":
                writer.write(worker.run_direct(message))
                return None
            if mode == "thread":
                return Job(message.id, lambda: worker.run_direct(message))
        elif isinstance(message, Cancel) and readers.abandon(message.id):
            return None
        elif isinstance(message, SwitchContext):
            switches.begin()
        for_loop.append(message)
        return None

    def to_loop() -> None:
        if for_loop:
            batch = for_loop.copy()
            for_loop.clear()
            with contextlib.suppress(RuntimeError):  # the loop closed: the worker is exiting
                loop.call_soon_threadsafe(deliver, batch)

    def deliver(batch: list[ToWorker]) -> None:
        for message in batch:
            # Calls start as they arrive, unless messages wait in order before them (a
            # context switch in progress): then they queue behind, in the inbox.
            if isinstance(message, Call) and not len(inbox) and worker.idle:
                worker.start_call(message)
            else:
                inbox.put(message)

    def on_undecodable(payload: bytes, error: msgspec.MsgspecError) -> None:
        answer = _undecodable_answer(payload, error)
        if answer is None:
            logging.getLogger("nativemcp.worker").warning(
                "dropped a message that does not decode (%d bytes): %s", len(payload), error
            )
        else:
            writer.write(answer)

    def on_end(error: BaseException | None) -> None:
        # The parent is gone (or the stream is out of step): stop as if told to.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(inbox.put, None)

    readers = ReaderThreads(
        sock,
        msgspec.msgpack.Decoder(ToWorker),
        max_frame,
        writer,
        route=route,
        on_undecodable=on_undecodable,
        after_batch=to_loop,
        on_end=on_end,
        limit=TOOL_THREADS,
        thread_setup=lambda: loop_thread_marker(loop),
    )
    readers.start()
    return readers


async def _serve(
    sock: socket.socket, source: ServerSource, config: ServerConfig, max_frame: int
) -> None:
    sock.setblocking(True)  # read by blocking threads; writes never block (FrameWriter)
    writer = FrameWriter(sock)
    forward_output(writer, config.options.get("log_level", logging.INFO))
    try:
        server = load_server(source, config)
    except Exception as exc:
        writer.write(encode_frame(StartFailed(message=f"{type(exc).__name__}: {exc}")))
        writer.close(_CLOSE_TIMEOUT)
        return
    worker = _Worker(server, writer, max_frame)
    writer.write(
        encode_frame(
            Ready(
                name=server.name,
                version=server.version,
                description=server.description,
                tools=server.list_tools(),
                pid=os.getpid(),
            )
        )
    )
    inbox: Inbox[Any] = Inbox()
    switches = _Switches()
    _start_readers(sock, worker, inbox, switches)
    try:
        await _dispatch(inbox, worker, switches)
    finally:
        with anyio.CancelScope(shield=True):
            await worker.cancel_all()
            with anyio.move_on_after(_SHUTDOWN_HOOK_TIMEOUT):
                await server.aclose()
            writer.close(_CLOSE_TIMEOUT)


async def _dispatch(inbox: Inbox[Any], worker: _Worker, switches: _Switches) -> None:
    server = worker.server
    while True:
        message = await inbox.get()
        match message:
            case Call():
                worker.start_call(message)
            case Cancel(id=call_id):
                task = worker.running.get(call_id)
                if task is not None:
                    task.cancel()
            case Ping(id=request_id):
                worker.writer.write(encode_frame(Result(id=request_id)))
            case ListTools(id=request_id):
                worker.writer.write(encode_frame(Result(id=request_id, value=server.list_tools())))
            case FeatureRequest():
                worker.start_request(message.id, worker.answer_feature(message))
            case Answer():
                worker.on_answer(message)
            case GetServiceContext(id=request_id):
                worker.start_request(
                    request_id, worker.answer(request_id, server.get_service_context)
                )
            case SwitchContext(id=request_id, session_id=session_id, thread_id=thread_id):
                # Awaited here, before reading on, so later calls see the new scope.
                async def switch(s: str | None = session_id, t: str | None = thread_id) -> None:
                    await server.switch_context(s, t)

                worker.idle = False
                try:
                    await worker.answer(request_id, switch)
                finally:
                    worker.idle = True
                    switches.end()
            case Shutdown() | None:
                return


def worker_main(
    sock: socket.socket,
    source: ServerSource,
    config: ServerConfig,
    max_frame: int,
    parent_pid: int | None = None,
) -> None:
    """The worker process's entry point: serve ``source`` over ``sock`` until told to stop.

    With ``parent_pid`` the worker exits as soon as that process dies (`die_with_parent`).
    """
    if parent_pid is not None:
        die_with_parent(parent_pid)
    try:
        anyio.run(
            _serve, sock, source, config, max_frame, backend_options={"use_uvloop": _HAS_UVLOOP}
        )
    except KeyboardInterrupt:  # the parent's Ctrl-C reaches the whole process group
        pass
    finally:
        sock.close()
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        # A sync tool abandoned by its caller still runs in a thread: exiting normally
        # would wait for it. Nobody wants its result; leave without it.
        for stream in (sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(0)
