"""The async sandbox: programs run in pydantic-monty's `AsyncMonty` (asyncio only).

Monty runs each program in a worker subprocess of its own pool (started on the first
run, about 20 ms, then about 0.1 ms a run) and calls back into this process for every
name the program leaves undefined: each tool it may call is such a name, a coroutine
function that goes through the pool's one call path. Monty awaits several at once when
the program gathers them. `AsyncMonty` drives its workers with asyncio, so this module
is the asyncio one; under trio a run goes to the blocking sandbox (`SyncCodeSandbox`)
in a worker thread, each inner call brought back to the event loop (there, cancelling
a run waits for the step it is in, and the calls it started end under their own limits).

A run stops at the first limit it passes: Monty stops the sandbox for duration, memory
and recursion; the run's own cancel scope stops it for its wall-clock duration (tool
time included), its printed output and its number of calls. Cancelling the run
cancels its calls: Monty starts each in a task of its own, which the run cancels and
awaits before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import sniffio

from nativemcp.protocol import NativeMCPResponse, Tool

from ._calls import RunState, plain, run_span
from ._limits import DEFAULT_LIMITS, CodeLimits
from ._outcome import code_error, over_duration
from ._result import CodeResult
from ._sync_sandbox import SyncCodeSandbox

if TYPE_CHECKING:  # the code extra, imported by the first run (not with the pool)
    import pydantic_monty

__all__ = ["CodeSandbox", "ToolCaller"]

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[NativeMCPResponse[Any]]]
"""Calls a tool by its full name with keyword arguments (the pool's `call_tool`)."""

MAX_SANDBOXES: Final = 4
"""Programs that run at once; a further run waits for one to finish."""


class CodeSandbox:
    """The Monty processes a pool's programs run in, started on the first run."""

    def __init__(self) -> None:
        self._monty: pydantic_monty.AsyncMonty | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._lock = anyio.Lock()
        self._closed = False
        self._blocking = SyncCodeSandbox()  # for trio; its processes start when used

    async def _processes(self) -> pydantic_monty.AsyncMonty:
        try:
            import pydantic_monty
        except ImportError as exc:
            raise ImportError(
                "code mode needs the code extra: pip install 'nativemcp[code]'"
            ) from exc
        async with self._lock:
            if self._closed:
                raise RuntimeError("the code sandbox is closed")
            if self._monty is None:
                async with contextlib.AsyncExitStack() as stack:
                    self._monty = await stack.enter_async_context(
                        # One worker kept ready beside the one a run holds, so the next
                        # run does not wait for a process to start.
                        pydantic_monty.AsyncMonty(
                            min_processes=1,
                            max_processes=MAX_SANDBOXES,
                            pre_warm=1,
                            stream_async_calls=True,
                        )
                    )
                    self._stack = stack.pop_all()
            return self._monty

    async def aclose(self) -> None:
        """Stop the sandbox processes (idempotent)."""
        self._closed = True
        stack, self._stack, self._monty = self._stack, None, None
        with anyio.CancelScope(shield=True):
            if stack is not None:
                await stack.aclose()
            await anyio.to_thread.run_sync(self._blocking.close)

    async def run(
        self,
        code: str,
        *,
        tools: Mapping[str, Tool],
        call: ToolCaller,
        inputs: Mapping[str, Any] | None = None,
        limits: CodeLimits | None = None,
    ) -> CodeResult:
        """Run ``code`` on asyncio with ``tools`` (identifier → tool under its full
        name) callable, each through ``call``; elsewhere, on the blocking sandbox.

        Raises:
            CodeError: the program raised (or does not parse, or passed a limit, or its
                sandbox died); the error's ``result`` holds what it printed and called.
            ImportError: the ``code`` extra (pydantic-monty) is not installed.
        """
        if sniffio.current_async_library() != "asyncio":
            return await self._run_blocking(code, tools, call, inputs, limits)
        state = RunState(tools, limits or DEFAULT_LIMITS)
        monty = await self._processes()
        with run_span(tools):
            return await self._run(monty, code, state, call, inputs)

    async def _run_blocking(
        self,
        code: str,
        tools: Mapping[str, Tool],
        call: ToolCaller,
        inputs: Mapping[str, Any] | None,
        limits: CodeLimits | None,
    ) -> CodeResult:
        # The calls come from the sandbox's own threads, not anyio's: a portal brings
        # each back to this event loop.
        async with anyio.from_thread.BlockingPortal() as portal:

            def blocking_call(full_name: str, arguments: dict[str, Any]) -> NativeMCPResponse[Any]:
                return portal.call(call, full_name, arguments)

            def run() -> CodeResult:
                return self._blocking.run(
                    code, tools=tools, call=blocking_call, inputs=inputs, limits=limits
                )

            try:
                return await anyio.to_thread.run_sync(run)
            except Exception as exc:  # raised below, not grouped by the portal's tasks
                error = exc
        raise error

    async def _run(
        self,
        monty: pydantic_monty.AsyncMonty,
        code: str,
        state: RunState,
        call: ToolCaller,
        inputs: Mapping[str, Any] | None,
    ) -> CodeResult:
        import pydantic_monty

        scope = anyio.CancelScope(deadline=anyio.current_time() + state.limits.duration)
        inner: set[asyncio.Task[Any]] = set()

        def on_print(stream: str, text: str) -> None:
            state.on_print(stream, text)
            if state.exceeded is not None:
                scope.cancel()

        def host(name: str) -> Callable[..., Awaitable[Any]]:
            full_name = state.tools[name].name

            async def call_tool(*args: Any, **kwargs: Any) -> Any:
                try:
                    arguments = state.begin(name, args, kwargs)
                except RuntimeError:
                    scope.cancel()  # the call limit: the run stops here
                    raise
                task = asyncio.current_task()
                if task is not None:
                    inner.add(task)
                started = time.perf_counter()
                try:
                    response = await call(full_name, arguments)
                except Exception as exc:  # the program catches it; cancellation is not
                    raise state.failed(name, started, exc) from None
                finally:
                    if task is not None:
                        inner.discard(task)
                return state.finish(name, started, response)

            return call_tool

        lookup = {name: host(name) for name in state.tools}
        value: Any = None
        try:
            with scope:
                async with monty.checkout(limits=state.limits.monty()) as session:
                    value = await session.feed_run(
                        code,
                        inputs=dict(inputs) if inputs else None,
                        external_lookup=lookup,
                        print_callback=on_print,
                    )
        except pydantic_monty.MontyError as exc:
            raise code_error(exc, state) from None
        finally:
            await _cancel_all(inner)
        if scope.cancel_called:
            if state.exceeded is not None:
                state.exceeded.result = state.result()
                raise state.exceeded
            raise over_duration(state)
        return state.result(plain(value))


async def _cancel_all(tasks: set[asyncio.Task[Any]]) -> None:
    """Cancel the calls a stopped program left running and wait for them to end."""
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        with anyio.CancelScope(shield=True):
            await asyncio.gather(*pending, return_exceptions=True)
