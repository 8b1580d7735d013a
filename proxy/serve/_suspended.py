"""Tool calls suspended while a 2026-07-28 client answers their input requests.

On protocol 2026-07-28 a server may not send requests to its client. A tool's
``ctx.sample``/``ctx.elicit`` instead suspends the call: the pool call keeps running in
the bridge's task group (its request waits), and the client's ``tools/call`` is answered
with an ``InputRequiredResult`` carrying the request(s) and a ``requestState`` naming the
suspended call. The client fulfils the requests and retries ``tools/call`` with the
responses and the echoed state; the answers go to the waiting tool, and the retry is
answered with the final result or the next ``InputRequiredResult``.

The state is an unguessable key plus a round number, used once. The SDK's
``RequestStateBoundary`` seals it (AES-GCM under a process-local key, bound to the
method, tool name, arguments and an expiry), so a forged, altered, replayed-elsewhere or
expired echo is refused before it gets here; a sealed state whose call is gone (expired,
finished, already resumed) is refused here with a clear message. A call whose client
does not come back within ``timeout`` seconds is cancelled (its worker stops the tool).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Self

import anyio
import anyio.abc
import mcp_types as types
import msgspec
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import INPUT_KEY_META_KEY, INVALID_PARAMS, ClientRequestError

__all__ = [
    "DEFAULT_INPUT_TIMEOUT",
    "MAX_CLIENT_REQUEST",
    "ClientAsk",
    "SuspendedCalls",
    "client_request",
    "input_key",
]

_logger = logging.getLogger("nativemcp.serve")

DEFAULT_INPUT_TIMEOUT: Final = 300.0
"""Seconds a suspended call waits for its client's retry before it is cancelled."""

MAX_CLIENT_REQUEST: Final = 1_000_000
"""The largest request to a client (its params as JSON, in bytes) that serve sends.
The official SDK's Streamable HTTP client reads at most 1 MiB per event and drops the
connection's stream past it; this leaves room for the JSON-RPC envelope and SSE framing."""

_RESULT_TYPES: Final[dict[str, type[types.Result]]] = {
    "sampling/createMessage": types.CreateMessageResult,
    "elicitation/create": types.ElicitResult,
    "roots/list": types.ListRootsResult,
}

INPUT_SETTLE: Final = 0.02
"""Seconds a call's first unsent request waits for another before its round goes out.

A tool that asks several things at once (a gather of ``ctx.elicit``, ``ctx.sample``,
roots) sends them over its pipe within microseconds of each other; without the wait
the round could go out with the first alone (the conformance suite's
``input-required-result-multiple-input-requests`` failed so, now and then)."""
INPUT_SETTLE_MAX: Final = 0.2
"""Seconds at most that requests arriving one after another hold their round back."""

ClientAsk = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""A tool's request to its client: ``await ask(method, params)`` -> the result's JSON."""


@dataclass(eq=False)
class _Question:
    method: str
    params: dict[str, Any]
    sent: bool = False
    answer: dict[str, Any] | None = None
    error: str | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)


@dataclass(eq=False)
class _Call:
    key: str
    round: int = 0
    questions: dict[str, _Question] = field(default_factory=dict)
    asked: int = 0
    done: bool = False
    outcome: Any = None  # the handler's result, or the exception it raised
    driver: Any = None  # the request now waiting on the call (its context), if any
    changed: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    timer: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    watched: bool = False  # its expiry watch runs (from the first time it waits)

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class SuspendedCalls(anyio.AsyncContextManagerMixin):
    """The calls of one bridge that wait for their client's input (2026-07-28).

    Use as an async context manager: the suspended calls run in its task group and are
    cancelled when it exits.

    Args:
        timeout: seconds a call waits for its client to come back before it is
            cancelled.
    """

    def __init__(self, timeout: float = DEFAULT_INPUT_TIMEOUT) -> None:
        if not (math.isfinite(timeout) and timeout > 0):
            raise ValueError(f"the input timeout must be a positive number of seconds: {timeout!r}")
        self.timeout = timeout
        self._calls: dict[str, _Call] = {}
        self._group: anyio.abc.TaskGroup | None = None

    @property
    def running(self) -> bool:
        """True inside ``async with``: calls can be suspended."""
        return self._group is not None

    def __len__(self) -> int:
        return len(self._calls)

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Self]:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                try:
                    yield self
                finally:
                    self._group = None
                    group.cancel_scope.cancel()
        finally:
            self._calls.clear()

    async def start(
        self,
        driver: Any,
        run: Callable[[ClientAsk, Callable[[], Any]], Awaitable[Any]],
    ) -> Any:
        """Run ``run(ask, current_driver)`` in the background and answer for its first step:
        its result (or exception), or an ``InputRequiredResult`` when it asks the client.

        ``current_driver()`` is the context of the request now waiting on the call (None
        while it waits for the client): progress and log messages go there.

        Raises:
            RuntimeError: not running (outside ``async with``).
        """
        if self._group is None:
            raise RuntimeError("SuspendedCalls is not running: enter it with 'async with'")
        call = _Call(key=secrets.token_urlsafe(24))
        call.driver = driver
        self._calls[call.key] = call

        async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
            key, params = input_key(params)
            client_request(method, params)  # refuses a bad one before suspending
            call.asked += 1
            question = _Question(method, params)
            if key is None or key in call.questions:
                key = str(call.asked)
            call.questions[key] = question
            call.wake()
            await question.ready.wait()
            if question.error is not None:
                raise ClientRequestError(question.error)
            assert question.answer is not None
            return question.answer

        async def body() -> None:
            with call.scope:
                try:
                    call.outcome = await run(ask, lambda: call.driver)
                except Exception as exc:  # the waiting request raises it
                    call.outcome = exc
                # Kept until a request collects it (a retry may come after the call
                # ended on its own, e.g. timed out) or the watch expires it.
                call.done = True
                call.wake()

        self._group.start_soon(body)
        return await self._drive(call, driver)

    async def resume(self, driver: Any, state: str, responses: Mapping[str, Any] | None) -> Any:
        """Deliver a retry's ``responses`` to the call its (verified) ``state`` names and
        answer for its next step, as `start` does.

        Raises:
            MCPError: INVALID_PARAMS when the state names no waiting call (it expired,
                finished, or this state was already used).
        """
        key, _, round_text = state.rpartition(".")
        call = self._calls.get(key)
        if call is None or round_text != str(call.round) or call.driver is not None:
            raise MCPError(
                INVALID_PARAMS,
                "this requestState resumes no waiting call: it was already used, or the "
                f"call expired (calls wait {self.timeout:g} s for their client) or "
                "finished; call the tool again",
                {"reason": "invalid_request_state"},
            )
        for request_id, question in list(call.questions.items()):
            if not question.sent:
                continue
            raw = (responses or {}).get(request_id)
            if raw is None:
                question.sent = False  # not answered: asked again in the next round
                continue
            del call.questions[request_id]
            question.answer, question.error = _checked(question.method, raw)
            question.ready.set()
        return await self._drive(call, driver)

    async def _drive(self, call: _Call, driver: Any) -> Any:
        call.driver = driver
        call.timer.deadline = math.inf
        settled = False
        try:
            while True:
                if call.done:
                    self._calls.pop(call.key, None)
                    call.timer.cancel()
                    if isinstance(call.outcome, BaseException):
                        raise call.outcome
                    return call.outcome
                unsent = {i: q for i, q in call.questions.items() if not q.sent}
                if unsent and not settled:
                    await _settle(call)  # the requests sent beside it join its round
                    settled = True
                    continue
                if unsent:
                    for question in unsent.values():
                        question.sent = True
                    call.round += 1
                    return types.InputRequiredResult(
                        input_requests={i: _request(q) for i, q in unsent.items()},
                        request_state=f"{call.key}.{call.round}",
                    )
                await call.changed.wait()
        finally:
            # Whether answered or gone (the client hung up), the call now waits for a
            # retry, for a bounded time.
            call.driver = None
            if not call.done:
                call.timer.deadline = anyio.current_time() + self.timeout
                if not call.watched and self._group is not None:
                    # Started only now: a call that never asks costs no watch task.
                    call.watched = True
                    self._group.start_soon(self._watch, call)

    async def _watch(self, call: _Call) -> None:
        """Cancel ``call`` when its client does not come back by its deadline."""
        with call.timer:
            await anyio.sleep_forever()
        if not call.done:
            _logger.info("a suspended call's client did not come back: cancelled")
            call.scope.cancel()
        self._calls.pop(call.key, None)


async def _settle(call: _Call) -> None:
    """Wait until ``call`` has sent no new request for `INPUT_SETTLE` seconds (at most
    `INPUT_SETTLE_MAX` in all), or has ended."""
    deadline = anyio.current_time() + INPUT_SETTLE_MAX
    while not call.done:
        left = deadline - anyio.current_time()
        if left <= 0:
            return
        changed = call.changed
        with anyio.move_on_after(min(INPUT_SETTLE, left)) as quiet:
            await changed.wait()
        if quiet.cancelled_caught:
            return


def input_key(params: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The key a tool named its request by (``ctx.elicit(..., key=...)``), and the
    request's params without it."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or INPUT_KEY_META_KEY not in meta:
        return None, params
    rest = {k: v for k, v in meta.items() if k != INPUT_KEY_META_KEY}
    key = meta[INPUT_KEY_META_KEY]
    stripped = {k: v for k, v in params.items() if k != "_meta"}
    if rest:
        stripped["_meta"] = rest
    return (key if isinstance(key, str) and key else None), stripped


def _request(question: _Question) -> types.InputRequest:
    return client_request(question.method, question.params)[0]


def _checked(method: str, raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(answer, error)``: the client's response as the tool's answer, or why it is not one."""
    try:
        result = _RESULT_TYPES[method].model_validate(raw)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return None, f"the client's response to {method} is malformed: {exc}"
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped, None


def client_request(
    method: str, params: dict[str, Any]
) -> tuple[types.InputRequest, type[types.Result]]:
    """A request to the client (a tool's, or an external server's passed on) as the SDK's
    request, and the type of its result: sampling, elicitation in form or URL mode,
    roots.

    Raises:
        ClientRequestError: an unknown method, malformed params, or params larger than
            `MAX_CLIENT_REQUEST` as JSON.
    """
    _, params = input_key(params)  # the tool's name for it is serve's, not the client's
    try:
        size = len(msgspec.json.encode(params))
    except (TypeError, msgspec.EncodeError):
        size = 0  # not JSON: the check below says how
    if size > MAX_CLIENT_REQUEST:
        raise ClientRequestError(
            f"the {method} request is {size:,} bytes as JSON, more than the "
            f"{MAX_CLIENT_REQUEST:,} serve sends a client (MCP clients such as the "
            "official SDK's read at most 1 MiB per message): ask with less, e.g. a "
            "summary, or a link in URL mode"
        )
    try:
        if method == "sampling/createMessage":
            return types.CreateMessageRequest(
                params=types.CreateMessageRequestParams.model_validate(params)
            ), types.CreateMessageResult
        if method == "elicitation/create":
            shape = (
                types.ElicitRequestURLParams
                if params.get("mode") == "url"
                else types.ElicitRequestFormParams
            )
            return types.ElicitRequest(params=shape.model_validate(params)), types.ElicitResult
        if method == "roots/list":
            return types.ListRootsRequest(), types.ListRootsResult
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ClientRequestError(f"malformed {method} request: {exc}") from exc
    raise ClientRequestError(f"a tool may not send {method!r} to its client")
