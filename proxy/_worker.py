"""A server in its own worker process: start-up handshake, calls, crash recovery, shutdown.

One supervisor task per worker owns the process: it spawns it, waits for READY under a
bounded timeout, waits until the channel closes, then fails every pending call with
`ServerCrashed` and restarts the worker (bounded restarts with backoff). Calls are
correlated by id in a pending map; the timeout is around the wait only, and the entry
is always popped, so late replies are dropped. Nothing blocks the event loop: frames go
through a non-blocking socket channel (written in the loop's own pass, read by its
protocol callback), and process exit is awaited by polling the non-blocking exit code.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import anyio
import anyio.abc
import anyio.to_thread
import msgspec
import sniffio

from nativemcp.protocol import FeatureError, NativeMCPResponse, Tool
from nativemcp.protocol.wire import (
    Answer,
    Ask,
    Call,
    Cancel,
    FeatureRequest,
    FromWorker,
    GetServiceContext,
    ListTools,
    Log,
    Notify,
    Ping,
    Ready,
    Reply,
    Result,
    Shutdown,
    Spans,
    StartFailed,
    SwitchContext,
    encode_frame,
    unpack_reply,
)
from nativemcp.workers import (
    CallTimeout,
    ClientRequest,
    ServerClosed,
    ServerCrashed,
    ServerError,
    ServerStartError,
    describe_exit,
)
from nativemcp.workers.channel import FrameReader

from ._handle import (
    CallOptions,
    Expected,
    LogHandler,
    ProgressCallback,
    ResourceListener,
    answer_client_request,
    call_deadline,
    deliver,
)
from ._link import AnyioBackend, Backend, Deadlines, Inbox, Link
from ._restart import Supervised
from ._worker_base import (
    EXIT_STATUS_WAIT,
    KILL_GRACE,
    SHUTDOWN_GRACE,
    TERMINATE_GRACE,
    WorkerBase,
    emit_log,
)
from ._worker_start import WorkerSettings
from .telemetry import TRACING, emit_worker_spans, wire_context

__all__ = ["WorkerProcess", "start_failure"]

_logger = logging.getLogger("nativemcp.worker")


def _current_backend(task_group: anyio.abc.TaskGroup) -> Backend:
    """The asyncio fast path on asyncio (and uvloop), else the anyio implementation
    whose tasks run in ``task_group``."""
    if sniffio.current_async_library() == "asyncio":
        # Imported on first use: trio callers never load the asyncio fast path.
        from ._asyncio_link import AsyncioBackend

        return AsyncioBackend()
    return AnyioBackend(task_group)


_Item = Reply | Result | Notify | Ask | BaseException
_decoder: Final = msgspec.msgpack.Decoder(FromWorker)


class _Connection:
    """One live worker process and its channel; frames are dispatched as they arrive."""

    def __init__(self, process: Any, label: str, backend: Backend) -> None:
        self.process = process
        self.label = label
        self.channel: Link | None = None
        self.ready: Ready | None = None
        self.handshake: Inbox[Ready | StartFailed | None] = backend.inbox()
        self.pending: dict[int, tuple[str, Inbox[_Item]]] = {}
        self.next_id = 0

    @property
    def is_open(self) -> bool:
        return self.channel is not None and self.channel.is_open

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def send(self, frame: bytes, *, alone: bool = False) -> None:
        """Queue a frame for the next loop pass (never blocks; dropped once closed);
        ``alone``: no other frame is coming, send it now."""
        if self.channel is not None:
            self.channel.write(frame, alone=alone)

    def on_message(self, message: Any) -> None:
        if isinstance(message, Reply):  # the common case first
            entry = self.pending.get(message.id)
            if entry is not None:  # else: a late reply to a timed-out or cancelled call
                entry[1].put(message)
        elif isinstance(message, Log):
            emit_log(self.ready.name if self.ready else self.label, message)
        elif isinstance(message, Spans):  # sent before its call's reply
            emit_worker_spans(message)
        elif isinstance(message, Ready | StartFailed):
            self.handshake.put(message)
        elif isinstance(message, Ask):
            entry = self.pending.get(message.call)
            if entry is not None:
                entry[1].put(message)
            else:  # the call is gone: answer so the tool does not wait forever
                self.send(encode_frame(Answer(id=message.id, error="the call has ended")))
        else:
            entry = self.pending.get(message.id)
            if entry is not None:  # else: a late reply to a timed-out or cancelled call
                entry[1].put(message)

    def fail_pending(self, make_error: Callable[[str], BaseException]) -> None:
        for tool, inbox in list(self.pending.values()):
            inbox.put(make_error(tool))
        self.pending.clear()


async def _wait_exit(process: Any, timeout: float) -> bool:
    """True when ``process`` has exited within ``timeout`` seconds (never blocks the loop).

    Polls the non-blocking ``exitcode`` (a WNOHANG wait) with a short, growing interval:
    several tasks may wait for the same process, which a shared sentinel fd forbids.
    """
    delay = 0.002
    with anyio.move_on_after(timeout):
        while process.exitcode is None:
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
    return process.exitcode is not None


async def _stop_process(process: Any, grace: float) -> None:
    """Escalate until the process is gone: (grace) → terminate → kill → reap. Shielded."""
    with anyio.CancelScope(shield=True):
        if await _wait_exit(process, grace):
            return
        process.terminate()
        if await _wait_exit(process, TERMINATE_GRACE):
            return
        process.kill()
        await _wait_exit(process, KILL_GRACE)


class WorkerProcess(WorkerBase, Supervised):
    """A server in its own process, restarted when it crashes."""

    trusts_type_refs = True
    default_timeout: float | None = None
    _logger = _logger

    def __init__(self, settings: WorkerSettings) -> None:
        super().__init__(settings)
        self._init_supervision()
        self._conn: _Connection | None = None
        self._backend: Backend | None = None
        # Keyed by the identity of the call's inbox (ids restart with each connection).
        self._deadlines: Deadlines[tuple[Inbox[_Item], str, float]] | None = None
        self.on_resource_updated: ResourceListener | None = None

    # -- lifecycle -------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The live worker's process id (None between a crash and the restart)."""
        return self._conn.process.pid if self._conn is not None else None

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Supervise the worker until closed; ``task_status.started()`` after the first READY.

        Raises:
            ServerStartError: the first start failed (later failures are retried).
        """
        failure: ServerStartError | None = None
        try:
            # The links' own tasks (other backends than asyncio) live as long as this.
            async with anyio.create_task_group() as links:
                self._backend = _current_backend(links)
                self._deadlines = Deadlines(self._backend, self._time_out)
                try:
                    await self._supervise(task_status)
                except ServerStartError as exc:
                    failure = exc  # raised bare below, not in the task group's group
                links.cancel_scope.cancel()
        finally:
            self._finished.set()
        if failure is not None:
            raise failure

    async def _supervise(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        recent: list[float] = []
        backoff = self._restart.backoff
        while not self._closing:
            try:
                conn = await self._spawn()
            except ServerStartError as exc:
                if not started:
                    raise
                if not self._retry(exc, recent, backoff):
                    return
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, self._restart.max_backoff)
                continue
            self._conn = conn
            self._connected.set()
            if not started:
                started = True
                task_status.started()
            served_from = time.monotonic()
            await self._serve(conn)
            if self._closing:
                return
            if time.monotonic() - served_from >= self._restart.healthy_after:
                recent.clear()
                backoff = self._restart.backoff
            process = conn.process
            if not self._restart.allow_restart(recent):
                self._give_up(
                    ServerCrashed(server=self.name, exitcode=process.exitcode, pid=process.pid)
                )
                return
            _logger.error(
                "worker for server %r (pid %s) %s; restarting in %.2f s",
                self.name,
                process.pid,
                _exit_text(process),
                backoff,
            )
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, self._restart.max_backoff)
            self._restarted()

    def _what(self) -> str:
        return f"worker for server {self.name!r}"

    async def _spawn(self) -> _Connection:
        # Shielded: a started process must be seen through (closed below).
        with anyio.CancelScope(shield=True):
            process, parent_sock = await anyio.to_thread.run_sync(self._settings.launch)
        assert self._backend is not None
        conn = _Connection(process, self.label, self._backend)
        try:
            conn.channel = await self._backend.open(
                parent_sock, FrameReader(_decoder, self._max_frame, conn.on_message)
            )
            # A channel that closes before READY wakes the handshake with None.
            conn.channel.on_closed(lambda: conn.handshake.put(None))
            with anyio.fail_after(self._settings.start_timeout):
                message = await conn.handshake.get()
                if message is None:
                    await _wait_exit(process, EXIT_STATUS_WAIT)
                    raise self._settings.exited_error(process.exitcode)
                if isinstance(message, StartFailed):
                    raise self._settings.failed_error(message)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                if conn.channel is not None:
                    conn.channel.close()
                else:
                    parent_sock.close()
                await _stop_process(process, 0.5)
            if isinstance(exc, TimeoutError):
                raise self._settings.timeout_error() from exc
            raise
        conn.ready = message
        self.take_ready(message)
        return conn

    async def _serve(self, conn: _Connection) -> None:
        assert conn.channel is not None
        try:
            error = await conn.channel.wait_closed()
            if error is not None and not isinstance(error, OSError):
                _logger.error("worker channel of %r failed: %s", self.name, error)
        finally:
            with anyio.CancelScope(shield=True):
                self._connected = anyio.Event()
                self._conn = None
                conn.channel.close()
                await _stop_process(conn.process, EXIT_STATUS_WAIT)
                process = conn.process
                if self._closing:
                    conn.fail_pending(
                        lambda tool: ServerClosed(
                            f"pool closed during a call to {self.name}.{tool}", server=self.name
                        )
                    )
                else:
                    # Whether it restarts is logged by `run`, once it has decided.
                    conn.fail_pending(
                        lambda tool: ServerCrashed(
                            server=self.name, exitcode=process.exitcode, pid=process.pid, tool=tool
                        )
                    )

    async def aclose(self) -> None:
        """Shut the worker down: shutdown message → grace → terminate → kill. Shielded,
        bounded, idempotent."""
        with anyio.CancelScope(shield=True):
            self._closing = True
            self._connected.set()
            conn = self._conn
            if conn is not None:
                conn.send(encode_frame(Shutdown()))
                await _stop_process(conn.process, SHUTDOWN_GRACE)
            with anyio.move_on_after(SHUTDOWN_GRACE + TERMINATE_GRACE + KILL_GRACE):
                await self._finished.wait()

    # -- calls -----------------------------------------------------------------------

    async def _connection(self, what: str) -> _Connection:
        return await self._live(self._open_connection, what)

    def _open_connection(self) -> _Connection | None:
        conn = self._conn
        return conn if conn is not None and conn.is_open else None

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Run ``tool`` in the worker and return its response.

        Raises:
            CallTimeout: no reply within the options' time limit (the call is
                cancelled in the worker).
            ServerCrashed: the worker died before replying.
            ServerClosed: the pool is closing.
            FrameTooLarge: the arguments exceed the frame limit.
        """
        return unpack_reply(await self._call(tool, arguments, options, value_only=False))

    async def call_value(
        self, tool: str, arguments: dict[str, Any], expected: Expected, options: CallOptions
    ) -> Any:
        """Run ``tool`` and return its value as ``expected.type``, decoded in one pass.

        Raises:
            ToolError: the tool answered with an error.
            UnwrapError: the value does not convert to ``expected.type``.
            ServerError: as `call`.
        """
        # Value only: the worker skips the model's text, which this caller never reads.
        reply = await self._call(tool, arguments, options, value_only=True)
        return expected.from_reply(reply, tool)

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        options: CallOptions,
        *,
        value_only: bool,
    ) -> Reply:
        timeout = options.limit
        on_progress = options.on_progress
        scope = options.scope
        backend = self._backend
        assert backend is not None
        deadline = math.inf if timeout is None else backend.now() + timeout
        conn = self._conn
        if conn is None or not conn.is_open:
            # Slow path: the worker is (re)starting; wait for it within the call's time.
            try:
                with anyio.fail_after(deadline - backend.now()):
                    conn = await self._connection(f"call {tool!r}")
            except TimeoutError as exc:
                raise CallTimeout(server=self.name, tool=tool, timeout=timeout or 0.0) from exc
        call_id = conn.new_id()
        session_id, thread_id = scope if scope is not None else (None, None)
        frame = encode_frame(
            Call(
                id=call_id,
                tool=tool,
                arguments=arguments,
                progress=on_progress is not None,
                session_id=session_id,
                thread_id=thread_id,
                value_only=value_only,
                trace=None if TRACING.tracer is None else wire_context(call_id),
                caller=options.caller,
            )
        )
        self.check_call_frame(frame, tool)
        inbox: Inbox[_Item] = backend.inbox()
        conn.pending[call_id] = (tool, inbox)
        # A deadline on the worker's one timer rather than a cancel scope per call: at
        # the deadline the call's inbox gets the timeout error, so it wakes at once.
        deadlines = self._deadlines
        if timeout is not None and deadlines is not None:
            deadlines.add(id(inbox), deadline, (inbox, tool, timeout))
        try:
            # The only call in flight goes out at once; concurrent ones are batched.
            conn.send(frame, alone=len(conn.pending) == 1)
            item = await inbox.get()
            if type(item) is Reply:  # the usual first item: no notification, no request
                return item
            return await self._await_reply(
                conn, inbox, item, on_progress, options.on_log, options.on_request
            )
        except (CallTimeout, anyio.get_cancelled_exc_class()):
            conn.send(encode_frame(Cancel(id=call_id)))  # the worker stops the tool
            raise
        finally:
            if timeout is not None and deadlines is not None:
                deadlines.discard(id(inbox))
            conn.pending.pop(call_id, None)

    def _time_out(self, due: tuple[Inbox[_Item], str, float]) -> None:
        # The error is made only when a call does time out, not for every call.
        inbox, tool, timeout = due
        inbox.put(CallTimeout(server=self.name, tool=tool, timeout=timeout))

    async def _await_reply(
        self,
        conn: _Connection,
        inbox: Inbox[_Item],
        item: _Item,
        on_progress: ProgressCallback | None,
        on_log: LogHandler | None,
        on_request: ClientRequest | None,
    ) -> Reply:
        """Handle ``item`` and the call's next items until its reply comes."""
        while True:
            if isinstance(item, Reply):
                return item
            if isinstance(item, Notify):
                await deliver(item.notification, on_progress, on_log, self.on_resource_updated)
            elif isinstance(item, Ask):
                # The tool waits for this answer, so awaiting it here holds up nothing.
                value, error, code = await answer_client_request(
                    on_request, item.method, item.params
                )
                conn.send(encode_frame(Answer(id=item.id, value=value, error=error, code=code)))
            elif isinstance(item, BaseException):
                raise item
            item = await inbox.get()

    async def _request(self, make: Callable[[int], Any], what: str, options: CallOptions) -> Any:
        conn: _Connection | None = None
        call_id = 0
        try:
            with call_deadline(self.name, what, options.limit):
                conn = await self._connection(what)
                call_id = conn.new_id()
                assert self._backend is not None
                inbox: Inbox[_Item] = self._backend.inbox()
                conn.pending[call_id] = (what, inbox)
                conn.send(encode_frame(make(call_id)))
                while True:
                    item = await inbox.get()
                    if isinstance(item, BaseException):
                        raise item
                    if isinstance(item, Result):
                        if item.error is not None and item.code is not None:
                            raise FeatureError(item.error, code=item.code)
                        if item.error is not None:
                            raise ServerError(
                                f"server {self.name!r} could not {what}: {item.error}",
                                server=self.name,
                            )
                        return item.value
        except (CallTimeout, anyio.get_cancelled_exc_class()):
            if conn is not None and call_id:
                conn.send(encode_frame(Cancel(id=call_id)))  # the worker stops the request
            raise
        finally:
            if conn is not None and call_id:
                conn.pending.pop(call_id, None)

    async def list_tools(self, options: CallOptions) -> list[Tool]:
        """The worker's current tool list."""
        return self.take_tools(
            await self._request(lambda i: ListTools(id=i), "list tools", options)
        )

    async def get_service_context(self, options: CallOptions) -> str:
        """The server's service-context text."""
        return str(
            await self._request(lambda i: GetServiceContext(id=i), "get service context", options)
        )

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, options: CallOptions
    ) -> None:
        """Scope the worker's later calls to ``(session_id, thread_id)``."""
        await self._request(
            lambda i: SwitchContext(id=i, session_id=session_id, thread_id=thread_id),
            "switch context",
            options,
        )

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any:
        """Answer a resources/prompts/completion request (spec-shaped JSON result).

        Raises:
            FeatureError: the server refused it (unknown resource or prompt, bad params).
            ServerError: the worker timed out, crashed or is closed.
        """
        return await self._request(
            lambda i: FeatureRequest(
                id=i,
                method=method,
                params=params,
                trace=None if TRACING.tracer is None else wire_context(i),
            ),
            method,
            options,
        )

    async def ping(self, options: CallOptions) -> None:
        """Round-trip an empty message."""
        await self._request(lambda i: Ping(id=i), "ping", options)


def start_failure(errors: Sequence[Exception]) -> Exception:
    """What a pool raises when servers failed to start: the one error, or all of them in
    a group. Servers that failed alike (each worker re-ran a script without its guard)
    are one error naming them all. A `ServerError` loses its traceback: the frames of a
    worker that failed to start say nothing to the caller; its message says why, and
    what to do."""
    alike: dict[tuple[type[Exception], str], list[Exception]] = {}
    for error in errors:
        server = getattr(error, "server", None)
        cause = str(error).replace(repr(server), "{server}") if server else str(error)
        alike.setdefault((type(error), cause), []).append(error)
    distinct = [_one_of(same) for same in alike.values()]
    if len(distinct) == 1:
        error = distinct[0]
        return error.with_traceback(None) if isinstance(error, ServerError) else error
    return ExceptionGroup("several servers failed to start", distinct)


def _one_of(same: list[Exception]) -> Exception:
    """One error for servers that failed alike: the first, naming every server."""
    first = same[0]
    if len(same) == 1 or not isinstance(first, ServerStartError):
        return first
    names = [str(getattr(error, "server", "")) for error in same]
    listed = ", ".join(map(repr, names[:-1])) + f" and {names[-1]!r}"
    return ServerStartError(str(first).replace(repr(names[0]), listed), server=names[0])


def _exit_text(process: Any) -> str:
    return describe_exit(process.exitcode)
