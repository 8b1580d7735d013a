"""The pool as an external server's MCP client: sampling, elicitation and roots.

An external server may ask its client to sample the model (``sampling/createMessage``),
ask the user (``elicitation/create``, form or URL mode) or list the roots it may work
in (``roots/list``). The pool declares to each external server only what it can
answer (`ClientSide`: the handlers it was given, its roots, or callers that relay the
requests as ``nativemcp serve`` does) and routes each request to whoever answers it:

- the call it belongs to: its ``CallOptions.on_request`` (under ``serve``, the MCP
  client that made the call, on that call's stream). A request made while the server
  answers a call runs in that call's task (the 2026-07-28 protocol's input rounds) or,
  on the handshake protocol, arrives while the call is the only one in flight;
- otherwise the pool itself (its handlers, its roots).

What nobody can answer goes back to the server as an error it can show.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from nativemcp.protocol import INTERNAL_ERROR, INVALID_REQUEST
from nativemcp.workers import ClientRequest, ClientRequestError

from .._handle import CallOptions, answer_client_request

if TYPE_CHECKING:
    import mcp_types

__all__ = ["DEFAULT_INPUT_ROUNDS", "ClientSide", "ServerRequests", "roots_answer"]

DEFAULT_INPUT_ROUNDS: Final = 10
"""Rounds of input one call of an external server may take by default (the official
SDK's client's default, kept; `nativemcp serve --input-rounds` sets it)."""

_CALL: Final[contextvars.ContextVar[CallOptions | None]] = contextvars.ContextVar(
    "nativemcp_external_call", default=None
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClientSide:
    """What the pool answers as an external server's client, and its own answerer."""

    sampling: bool = False
    """Declare ``sampling``: the pool has a sampling handler, or its callers relay."""
    elicitation: bool = False
    """Declare ``elicitation`` (form and URL mode)."""
    roots: bool = False
    """Declare ``roots`` (with ``listChanged``): the pool was given roots."""
    apps: bool = False
    """Declare MCP Apps (``io.modelcontextprotocol/ui``): the app shows them."""
    answer: ClientRequest | None = None
    """Answers a request that belongs to no call (the pool's handlers and roots)."""
    input_rounds: int = DEFAULT_INPUT_ROUNDS
    """Rounds of input (``InputRequiredResult``s of a 2026-07-28 server) one call may
    take; past them the call answers a JSON-RPC error naming the limit."""


class ServerRequests:
    """One external server's requests to its client, routed to their answerers."""

    def __init__(self, server: str, side: ClientSide) -> None:
        self.server = server
        self.side = side
        self._calls: dict[int, CallOptions] = {}
        self._next = 0

    @contextlib.contextmanager
    def during(self, options: CallOptions) -> Iterator[None]:
        """Mark a call in flight: the server's requests meanwhile may belong to it."""
        self._next += 1
        key = self._next
        self._calls[key] = options
        token = _CALL.set(options)
        try:
            yield
        finally:
            _CALL.reset(token)
            del self._calls[key]

    def current_call(self) -> CallOptions | None:
        """The call whose task this runs in (None outside any call)."""
        return _CALL.get()

    async def answer_request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[Any, mcp_types.ErrorData | None]:
        """Answer the server's request ``method`` as an input round's request is answered
        (a Tasks extension task's ``inputRequests``): its result, or the error saying why
        nobody could."""
        import mcp_types

        result, error, code = await answer_client_request(self._answerer(method), method, params)
        if error is not None:
            return None, mcp_types.ErrorData(code=code or INVALID_REQUEST, message=error)
        return result, None

    def _answerer(self, method: str) -> ClientRequest | None:
        options = _CALL.get()
        if options is not None:  # asked inside its call (an input round)
            return options.on_request or self.side.answer
        if not self._calls:
            return self.side.answer
        # Asked outside any call (the handshake protocol): the answerer every call in
        # flight shares. Compared by equality, not identity: the pool's own answerer
        # is a bound method, a new object for each call.
        first, *others = [call.on_request for call in self._calls.values()]
        if any(other != first for other in others):
            return _ambiguous(self.server, method, len(self._calls))
        return first or self.side.answer

    def callbacks(self) -> dict[str, Any]:
        """The SDK client's keyword arguments for what the pool declares (a callback
        given is a capability declared; MCP Apps and Tasks extensions advertised)."""
        import mcp_types

        found: dict[str, Any] = {}
        if self.side.sampling:

            async def sampling(context: Any, params: mcp_types.CreateMessageRequestParams) -> Any:
                return await self._answer("sampling/createMessage", params, _sampling_result)

            found["sampling_callback"] = sampling
            found["sampling_capabilities"] = mcp_types.SamplingCapability(
                tools=mcp_types.SamplingToolsCapability()
            )
        if self.side.elicitation:

            async def elicitation(context: Any, params: Any) -> Any:
                return await self._answer(
                    "elicitation/create", params, mcp_types.ElicitResult.model_validate
                )

            found["elicitation_callback"] = elicitation
        if self.side.roots:

            async def list_roots(context: Any) -> Any:
                return await self._answer(
                    "roots/list", None, mcp_types.ListRootsResult.model_validate
                )

            found["list_roots_callback"] = list_roots
        from ._task_extension_client import TasksClaim

        # The Tasks extension always (the SDK advertises it at 2026-07-28 only).
        found["extensions"] = [TasksClaim(self, self.side.input_rounds)]
        if self.side.apps:
            from mcp.client.extension import advertise
            from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

            found["extensions"].append(advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]}))
        return found

    async def _answer(self, method: str, params: Any, build: Any) -> Any:
        import mcp_types

        payload: dict[str, Any] = (
            params.model_dump(by_alias=True, mode="json", exclude_none=True)
            if params is not None
            else {}
        )
        result, error = await self.answer_request(method, payload)
        if error is not None:
            return error
        try:
            return build(result)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            return mcp_types.ErrorData(
                code=INTERNAL_ERROR, message=f"the answer to {method} is malformed: {exc}"
            )


def roots_answer(uris: tuple[str, ...]) -> dict[str, Any]:
    """The ``roots/list`` result for the roots ``uris``, each named for its folder."""
    return {
        "roots": [{"uri": uri, "name": uri.rstrip("/").rpartition("/")[2] or uri} for uri in uris]
    }


def _sampling_result(result: Any) -> Any:
    import mcp_types

    try:
        return mcp_types.CreateMessageResult.model_validate(result)
    except ValueError:  # tool use in the answer: the richer result type
        return mcp_types.CreateMessageResultWithTools.model_validate(result)


def _ambiguous(server: str, method: str, calls: int) -> ClientRequest:
    async def refuse(method_: str, params: dict[str, Any]) -> dict[str, Any]:
        raise ClientRequestError(
            f"MCP server {server!r} sent {method} while {calls} calls from different "
            "callers were in flight; nativemcp cannot tell which caller should answer it"
        )

    return refuse
