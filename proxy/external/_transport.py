"""How the pool's client reaches one external server: the transport its entry names.

`ServerTransport` is a part `ExternalServer` holds: it makes the official client for
each connection (stdio through ``_stdio``, Streamable HTTP, or SSE for old servers, with
the entry's OAuth where it has one) and notes what an HTTP server said at the last
connect (a 401 or 403, the session id). `refusal` and `describe` word a failed
connect, `too_many_rounds` a call that asked for input more often than the pool allows.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import TYPE_CHECKING, Any, Final

from .._sdk_seam import mcp_http_client
from ._client_side import ServerRequests
from ._mcp_config import ExternalServerSpec
from ._session_id import SessionId
from ._stderr import Stderr
from ._stdio import StdioLink, stdio_transport
from ._tool_listing import usable_tools_only
from .oauth import ServerAuthorization

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

__all__ = [
    "MCP_LOG_LEVEL",
    "ServerTransport",
    "client_info",
    "describe",
    "refusal",
    "too_many_rounds",
]

MCP_LOG_LEVEL: Final = "info"
"""The level of ``notifications/message`` asked of servers (newer MCP sends none unless
asked): info and up, so debug chatter does not travel with every call."""


class ServerTransport:
    """The client side of one server's connections: ``spec`` (its entry),
    ``max_frame`` (the longest stdio line), ``authorization`` (its OAuth client, None
    without one) and ``requests`` (its requests back to the pool)."""

    def __init__(
        self,
        spec: ExternalServerSpec,
        *,
        max_frame: int,
        authorization: ServerAuthorization | None,
        requests: ServerRequests,
    ) -> None:
        self._spec = spec
        self._max_frame = max_frame
        self._authorization = authorization
        self._requests = requests
        self.refused: int | None = None
        """An HTTP server's 401 or 403 at the last connect (None: none)."""
        self.session_id = SessionId()
        """The session id the last HTTP connection was issued."""

    def client(
        self,
        stderr: Stderr | None,
        link: StdioLink | None,
        *,
        on_log: Any,
        on_message: Any,
    ) -> tuple[Client, Any]:
        """A new SDK client for one connection (stdio: its stderr and link), and the
        HTTP client under it (None: stdio or SSE, whose client the SDK makes)."""
        from mcp import Client

        spec = self._spec
        server: Any
        http: Any = None
        if spec.transport == "stdio":
            assert spec.command is not None and stderr is not None and link is not None
            server = stdio_transport(
                spec.command,
                spec.args,
                env=spec.env,
                cwd=spec.cwd,
                errlog=stderr.writer,
                link=link,
                max_line=self._max_frame,
            )
        elif spec.transport == "http":
            assert spec.url is not None
            from mcp.client.streamable_http import streamable_http_client

            http = self.http_client(headers=spec.headers, auth=self._auth())
            server = streamable_http_client(spec.url, http_client=http)
        else:
            assert spec.url is not None
            from mcp.client.sse import sse_client

            server = sse_client(
                spec.url,
                headers=spec.headers,
                httpx_client_factory=self.http_client,
                auth=self._auth(),
            )
        if not spec.required:
            server = usable_tools_only(server, self._spec.name)
        client = Client(
            server,
            client_info=client_info(),
            logging_callback=on_log,
            message_handler=on_message,
            log_level=MCP_LOG_LEVEL,
            input_required_max_rounds=self._requests.side.input_rounds,
            **self._requests.callbacks(),
        )
        return client, http

    async def prepare(self) -> None:
        """Read the server's kept grant (off the event loop) before `client` makes the
        connection's OAuth provider from it."""
        if self._authorization is not None:
            await self._authorization.prepare()

    def _auth(self) -> Any:
        return self._authorization.auth() if self._authorization is not None else None

    def http_client(
        self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
    ) -> Any:
        """The SDK's HTTP client, noting a refusal: the SDK's Streamable HTTP client
        reports a 401 only as "Server returned an error response"."""
        client = mcp_http_client(headers=headers, timeout=timeout, auth=auth)

        async def note_refusal(response: Any) -> None:
            if response.status_code in (401, 403):
                self.refused = int(response.status_code)

        client.event_hooks["response"].append(note_refusal)
        self.session_id = SessionId.of(client)
        return client


@functools.cache
def client_info() -> mcp_types.Implementation:
    """How the pool introduces itself to a server: nativemcp and its version (the
    SDK's default is its own package, ``mcp``)."""
    import mcp_types

    try:
        version = importlib.metadata.version("nativemcp")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        version = "0+unknown"
    return mcp_types.Implementation(name="nativemcp", version=version)


def refusal(status: int, spec: ExternalServerSpec) -> str:
    """Why an HTTP server refused us, and how to give it credentials."""
    what = "401 Unauthorized" if status == 401 else "403 Forbidden"
    given = (
        f"the headers sent ({', '.join(sorted(spec.headers))}) were not accepted"
        if spec.headers
        else "no headers were sent"
    )
    return (
        f"refused the connection: HTTP {what} ({given}); pass a token in the entry's "
        '"headers", e.g. {"Authorization": "Bearer ${API_TOKEN}"} with API_TOKEN set in '
        'the environment, or for a server that signs in with OAuth add "oauth": {} to the '
        "entry and run: nativemcp auth login " + spec.name
    )


def describe(exc: BaseException) -> str:
    """What failed, each exception of a group named by its type."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def too_many_rounds(name: str, tool: str, rounds: int) -> mcp_types.ErrorData:
    """The error of a call whose server asked for input more than ``rounds`` times."""
    import mcp_types

    from nativemcp.protocol import INTERNAL_ERROR

    message = (
        f"{name}.{tool} asked for input more than {rounds} times in one call, "
        f"the most a call may (input_rounds {rounds}: nativemcp serve "
        "--input-rounds N, WorkerPool(input_rounds=N))"
    )
    data = {"reason": "too_many_input_rounds", "inputRounds": rounds}
    return mcp_types.ErrorData(code=INTERNAL_ERROR, message=message, data=data)
