"""The blocking sandbox: programs run in pydantic-monty's sync `Monty` pool.

For `SyncWorkerPool.run_code`, and for `WorkerPool.run_code` off asyncio (trio), where
it runs in a worker thread. The program is driven step by step (``feed_start`` /
``resume``): each tool call it makes is started on a thread of the sandbox's own and
answered as a future, so calls the program gathers run at once; when it awaits, the
loop waits for the first of them to finish. The run's wall-clock duration is checked
between steps; a blocking call cannot be cancelled, so a call still running when the
run stops ends under its own time limit.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from nativemcp.protocol import NativeMCPResponse, Tool

from ._calls import RunState, plain, run_span
from ._limits import DEFAULT_LIMITS, CodeLimits
from ._outcome import code_error, over_duration
from ._result import CodeResult

if TYPE_CHECKING:
    import pydantic_monty

__all__ = ["SyncCodeSandbox", "SyncToolCaller"]

SyncToolCaller = Callable[[str, dict[str, Any]], NativeMCPResponse[Any]]
"""Calls a tool by its full name with keyword arguments, blocking (a sync pool's)."""

CALL_THREADS: Final = 8
"""Tool calls that run at once across the sandbox's programs."""


class _Stop(Exception):
    """The run passed a limit the loop counts (duration, output, calls)."""


class SyncCodeSandbox:
    """The Monty processes a blocking pool's programs run in, started on the first run."""

    def __init__(self) -> None:
        self._monty: pydantic_monty.Monty | None = None
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()
        self._closed = False

    def _processes(self) -> tuple[pydantic_monty.Monty, concurrent.futures.Executor]:
        try:
            import pydantic_monty
        except ImportError as exc:
            raise ImportError(
                "code mode needs the code extra: pip install 'nativemcp[code]'"
            ) from exc
        with self._lock:
            if self._closed:
                raise RuntimeError("the code sandbox is closed")
            if self._monty is None or self._threads is None:
                # Left by close(), which the pool's close calls: threads first, then Monty.
                self._monty = self._stack.enter_context(
                    pydantic_monty.Monty(min_processes=1, pre_warm=1)
                )
                self._threads = concurrent.futures.ThreadPoolExecutor(
                    CALL_THREADS, thread_name_prefix="nativemcp-code"
                )
                self._stack.callback(self._threads.shutdown, wait=True, cancel_futures=True)
            return self._monty, self._threads

    def close(self) -> None:
        """Stop the sandbox processes and the call threads (idempotent)."""
        with self._lock:
            self._closed = True
            self._monty = self._threads = None
            stack, self._stack = self._stack, contextlib.ExitStack()
        stack.close()

    def run(
        self,
        code: str,
        *,
        tools: Mapping[str, Tool],
        call: SyncToolCaller,
        inputs: Mapping[str, Any] | None = None,
        limits: CodeLimits | None = None,
    ) -> CodeResult:
        """Run ``code``, blocking, each tool call through ``call`` on a call thread.

        Raises:
            CodeError: as `CodeSandbox.run` raises it.
            ImportError: the ``code`` extra (pydantic-monty) is not installed.
        """
        import pydantic_monty

        state = RunState(tools, limits or DEFAULT_LIMITS)
        monty, threads = self._processes()
        with run_span(tools):
            try:
                value = _Steps(state, call, threads).run(monty, code, inputs)
            except pydantic_monty.MontyError as exc:
                raise code_error(exc, state) from None
            except _Stop:
                error = state.exceeded or over_duration(state)
                error.result = state.result()
                raise error from None
        return state.result(plain(value))


def _never_called(*args: Any, **kwargs: Any) -> Any:
    """What a tool's name is bound to in the sandbox: its calls stop at `_Steps`."""
    raise AssertionError("a tool call is answered by the step loop")


class _Steps:
    """One program driven snapshot by snapshot; its calls run on ``threads``."""

    def __init__(
        self, state: RunState, call: SyncToolCaller, threads: concurrent.futures.Executor
    ) -> None:
        self.state = state
        self.call = call
        self.threads = threads
        self.deadline = time.monotonic() + state.limits.duration
        self.pending: dict[int, concurrent.futures.Future[Any]] = {}

    def run(self, monty: pydantic_monty.Monty, code: str, inputs: Mapping[str, Any] | None) -> Any:
        import pydantic_monty

        state = self.state
        with monty.checkout(limits=state.limits.monty()) as session:
            # The tools' names resolve to host functions (read, not only called: `f =
            # tool` works); each call still stops here, and `_start` answers it.
            lookup = {name: _never_called for name in state.tools}
            step = session.feed_start(
                code,
                inputs=dict(inputs) if inputs else None,
                external_lookup=lookup,
                print_callback=state.on_print,
            )
            while not isinstance(step, pydantic_monty.MontyComplete):
                if state.exceeded is not None or time.monotonic() > self.deadline:
                    raise _Stop
                if isinstance(step, pydantic_monty.FunctionSnapshot):
                    if step.is_os_function:  # a file, the clock: Monty's own answer
                        step = step.resume_not_handled()
                    else:
                        step = step.resume(self._start(step))
                elif isinstance(step, pydantic_monty.FutureSnapshot):
                    step = step.resume(self._settled(step.pending_call_ids))
                else:  # a name read, not called: a tool's, or Monty's own NameError
                    step = step.resume_auto()
            return step.output

    def _start(self, step: pydantic_monty.FunctionSnapshot) -> Any:
        """Start the call ``step`` asks for; its answer to give the program."""
        name = str(step.function_name)
        if name not in self.state.tools:
            return {"exc_type": "NameError", "message": f"name {name!r} is not defined"}
        try:
            arguments = self.state.begin(name, step.args, step.kwargs)
        except (RuntimeError, TypeError) as exc:
            return {"exception": exc}
        # In the run's context: the call's span is a child of the run_code span.
        context = contextvars.copy_context()
        self.pending[step.call_id] = self.threads.submit(context.run, self._one, name, arguments)
        return {"future": ...}

    def _one(self, name: str, arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            response = self.call(self.state.tools[name].name, arguments)
        except Exception as exc:  # the program catches it
            raise self.state.failed(name, started, exc) from None
        return self.state.finish(name, started, response)

    def _settled(self, ids: list[int]) -> dict[int, Any]:
        """The answers of the first of ``ids`` to finish (all that have by then)."""
        futures = [self.pending[i] for i in ids if i in self.pending]
        left = self.deadline - time.monotonic()
        done, _ = concurrent.futures.wait(
            futures, timeout=max(left, 0), return_when=concurrent.futures.FIRST_COMPLETED
        )
        if not done:
            raise _Stop
        answers: dict[int, Any] = {}
        for call_id in ids:
            future = self.pending.get(call_id)
            if future is None or not future.done():
                continue
            del self.pending[call_id]
            error = future.exception()
            answers[call_id] = (
                {"exception": error} if error is not None else {"return_value": future.result()}
            )
        return answers
