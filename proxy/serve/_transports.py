"""Serving a pool's servers to MCP clients: over stdio, or as an ASGI app (Streamable HTTP).

```python
async with WorkerPool(["myapp.tools:server"]) as pool:
    await serve_stdio(pool)                      # Claude Desktop, Cursor, VS Code...

app = http_app(WorkerPool(["myapp.tools:server"]), token="s3cret")   # uvicorn app
```

Both are the official `mcp` package's transports around `McpBridge`. Over HTTP the whole
pool answers at ``/mcp`` and each server at ``/mcp/<name>``; every route has its own
Streamable HTTP session manager. The HTTP app is safe by default: DNS-rebinding checks
on Host and Origin (localhost names, plus an allow-list), an optional bearer token
(answered 401 when missing or wrong), and a request-body size limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hmac
import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from nativemcp.protocol import safe_server_name

from .._pool import WorkerPool
from ..external import Consents, UserServers
from ..http_edge import CanonicalHost, local_only, respond
from ..llm._budget import check_budget
from ..tool_search import ToolProfile
from ._bridge import McpBridge
from ._client_sessions import ClientSessions
from ._defaults import (
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_TASK_TTL,
    DEFAULT_MAX_TASKS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    DEFAULT_SESSIONS_PER_CLIENT,
)
from ._edge import McpApp
from ._request_ids import RequestIds
from ._search_mode import warn_unmatched
from ._selection import gather_instructions, select_servers
from ._suspended import DEFAULT_INPUT_TIMEOUT
from .auth import Authorization, ConsentCallback, ConsentOrigin, ResourceServer, ScopeGate
from .fast import FastPath
from .tasks import check_task_limits

__all__ = [
    "Drain",
    "http_app",
    "serve_stdio",
]


async def serve_stdio(
    pool: WorkerPool,
    servers: Sequence[str] | None = None,
    *,
    name: str = "nativemcp",
    timeout: float = 0,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    max_tasks: int = DEFAULT_MAX_TASKS,
    max_task_ttl: float = DEFAULT_MAX_TASK_TTL,
    profile: ToolProfile | None = None,
    result_budget: int | None = None,
) -> None:
    """Serve ``servers`` of a running pool (default: all) over this process's stdin/stdout.

    Runs until the client closes stdin. With one server its tools keep their names;
    with several they are listed under full names (``builtin_server__tool``,
    ``server__tool``). A tool's
    request to a 2026-07-28 client suspends its call for up to ``input_timeout``
    seconds (see `McpBridge`); a 2025-11-25 client holds at most ``max_tasks`` tasks,
    each for at most ``max_task_ttl`` seconds (see `ServedTasks`).
    ``profile``: which tools are offered, and whether through the meta-tools
    ``search_tools`` and ``call_tool`` (see `ToolProfile`). ``result_budget``: tokens
    per tool result (None: no limit; see `McpBridge`).

    Raises:
        ValueError: a named server is not running in the pool, a limit is not
            positive, or a server acts for each user (``"grantScope": "user"``).
    """
    check_users(pool, None)  # stdio has no users: no server may act for each
    names = select_servers(pool, servers)
    await warn_unmatched(pool, profile)
    instructions = await gather_instructions(pool, names)
    bridge = McpBridge(
        pool,
        names,
        name=name,
        timeout=timeout,
        instructions=instructions,
        input_timeout=input_timeout,
        max_tasks=max_tasks,
        max_task_ttl=max_task_ttl,
        profile=profile,
        result_budget=result_budget,
    )
    pool.add_resource_listener(bridge.features.resource_updated)
    server = bridge.server()
    async with bridge, stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _BearerToken:
    """Answers 401 unless ``Authorization: Bearer <token>`` carries the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
            # The scheme is case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
            scheme, _, credentials = given.strip().partition(b" ")
            # A constant-time comparison: the token must not leak through timing.
            matches = hmac.compare_digest(credentials.strip(), self._expected)
            if scheme.lower() != b"bearer" or not matches:
                body = json.dumps(
                    {
                        "error": "unauthorized",
                        "error_description": "a valid bearer token is required",
                    }
                ).encode()
                headers = [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="nativemcp"'),
                    (b"content-length", str(len(body)).encode()),
                ]
                await respond(send, 401, body, headers)
                return
        await self.app(scope, receive, send)


class Drain:
    """Counts in-flight POST requests (tool calls ride them) and, once draining, answers
    new ones 503, so a shutdown can wait for the calls already running."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.draining = False
        self._idle = anyio.Event()

    async def wait_idle(self, grace: float) -> bool:
        """Stop taking requests; True when the in-flight ones finished within ``grace`` s."""
        self.draining = True
        if self.in_flight == 0:
            return True
        with anyio.move_on_after(grace):
            await self._idle.wait()
        return self.in_flight == 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.draining:
            headers = [(b"retry-after", b"1"), (b"connection", b"close")]
            await respond(send, 503, b"shutting down", headers)
            return
        self.in_flight += 1
        self._idle = anyio.Event() if self.in_flight == 1 else self._idle
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()


@dataclasses.dataclass(frozen=True)
class _Session:
    """How every route's MCP sessions run: one value for the bridge and its manager."""

    timeout: float
    stateless: bool
    security: TransportSecuritySettings
    max_body_size: int
    input_timeout: float
    idle_timeout: float | None
    max_tasks: int
    max_task_ttl: float
    fast_path: bool
    auth: Authorization | None
    profile: ToolProfile | None = None
    result_budget: int | None = None


class _Routes:
    """The ``/mcp`` and ``/mcp/<name>`` endpoints; their session managers start with the app."""

    def __init__(
        self,
        pool: WorkerPool,
        servers: Sequence[str] | None,
        *,
        name: str,
        session: _Session,
        sessions_per_client: int | None,
    ) -> None:
        self._pool = pool
        self._servers = servers
        self._name = name
        self._session = session
        # One count across every route: a client's sessions at /mcp and /mcp/<name> add up.
        self._per_client = (
            ClientSessions(sessions_per_client, session.idle_timeout)
            if sessions_per_client and not session.stateless
            else None
        )
        self._ids = RequestIds(session.max_body_size)
        self._bridges: list[McpBridge] = []
        self._managers: dict[str | None, StreamableHTTPSessionManager] = {}
        self._fast: dict[str | None, FastPath] = {}
        self._routed: dict[StreamableHTTPSessionManager, McpBridge] = {}
        self._handlers: dict[str | None, ASGIApp] = {}
        auth = session.auth
        self._gate = ScopeGate(auth, session.max_body_size) if auth and auth.scope_map else None
        # A config key (`My Time`, `github.com/acme/tool`) is awkward in a URL: the part
        # of full tool names that stands for it answers too.
        self._aliases: dict[str, str] = {}

    async def _manager(
        self, servers: list[str], name: str
    ) -> tuple[StreamableHTTPSessionManager, FastPath | None]:
        instructions = await gather_instructions(self._pool, servers)
        session = self._session
        bridge = McpBridge(
            self._pool,
            servers,
            name=name,
            timeout=session.timeout,
            instructions=instructions,
            # Stateless replicas: a retry may reach another process than the suspended call.
            suspend=not session.stateless,
            input_timeout=session.input_timeout,
            max_tasks=session.max_tasks,
            max_task_ttl=session.max_task_ttl,
            scopes=session.auth.scope_map if session.auth else None,
            profile=session.profile,
            result_budget=session.result_budget,
        )
        self._bridges.append(bridge)
        self._pool.add_resource_listener(bridge.features.resource_updated)
        server = bridge.server()
        manager = StreamableHTTPSessionManager(
            app=server,
            stateless=session.stateless,
            security_settings=session.security,
            max_request_body_size=session.max_body_size,
            session_idle_timeout=session.idle_timeout,
        )
        self._routed[manager] = bridge
        fast = None
        if session.fast_path:
            fast = FastPath(
                bridge,
                server,
                session.security,
                session.max_body_size,
                stateless=session.stateless,
            )
        return manager, fast

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Any = None) -> AsyncIterator[None]:
        """Start the pool (unless already running) and every route's session manager."""
        async with contextlib.AsyncExitStack() as stack:
            if not self._pool.is_running:
                await stack.enter_async_context(self._pool)
            check_users(self._pool, self._session.auth)
            servers = select_servers(self._pool, self._servers)
            await warn_unmatched(self._pool, self._session.profile)
            routes: list[tuple[str | None, list[str], str]] = [(None, servers, self._name)]
            routes += [(server_name, [server_name], server_name) for server_name in servers]
            for key, served, name in routes:
                manager, fast = await self._manager(served, name)
                self._managers[key] = manager
                if fast is not None:
                    self._fast[key] = fast
                if key is not None:
                    self._aliases[safe_server_name(key)] = key
            self._handlers = {key: self._handler(key) for key in self._managers}
            for manager in self._managers.values():
                await stack.enter_async_context(manager.run())
            for bridge in self._bridges:
                await stack.enter_async_context(bridge)
            try:
                yield
            finally:
                self._handlers.clear()
                self._managers.clear()
                self._fast.clear()
                self._routed.clear()
                self._aliases.clear()
                self._bridges.clear()

    def fast_answers(self) -> int:
        """Requests the fast path answered so far, on every route."""
        return sum(fast.answered for fast in self._fast.values())

    def stop_calls(self, reason: str) -> int:
        """Stop the tool calls running on every route, each answered with ``reason``."""
        return sum(bridge.calls.stop_calls(reason) for bridge in self._bridges)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("name")
        key = self._aliases.get(name, name) if name else name
        handle = self._handlers.get(key)
        if handle is None:
            body = (
                f"no MCP server at this path; servers: {', '.join(k for k in self._managers if k)}"
            )
            headers = [(b"content-type", b"text/plain; charset=utf-8")]
            await respond(send, 404, body.encode(), headers)
            return
        await self._ids(handle, scope, receive, send)

    def _handler(self, key: str | None) -> ASGIApp:
        """The route's chain after the request ids: the scope gate, the sessions per
        client, the fast path, the SDK's session manager (built once per route)."""
        manager = self._managers[key]
        handle: ASGIApp = manager.handle_request
        fast = self._fast.get(key)
        # Each layer wraps the one before under a name of its own: a closure reads its
        # name when called, so a name reused below would make a layer call itself.
        if fast is not None:  # after every check: the token's, Host's, size's, ids'
            sdk = handle

            async def handle(scope: Scope, receive: Receive, send: Send) -> None:
                await fast(sdk, scope, receive, send)

        if self._per_client is not None:  # and the sessions-per-client limit before it
            per_client, inner_per_client = self._per_client, handle

            async def handle(scope: Scope, receive: Receive, send: Send) -> None:
                await per_client(inner_per_client, scope, receive, send)

        if self._gate is not None:
            gate, tools, gated = self._gate, self._routed[manager].tools, handle

            async def handle(scope: Scope, receive: Receive, send: Send) -> None:
                await gate(gated, tools, scope, receive, send)

        return handle


def http_app(
    pool: WorkerPool,
    servers: Sequence[str] | None = None,
    *,
    name: str = "nativemcp",
    token: str | None = None,
    auth: Authorization | None = None,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    stateless: bool = False,
    max_body_size: int = DEFAULT_MAX_BODY,
    timeout: float = 0,
    input_timeout: float = DEFAULT_INPUT_TIMEOUT,
    session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    sessions_per_client: int | None = DEFAULT_SESSIONS_PER_CLIENT,
    max_tasks: int = DEFAULT_MAX_TASKS,
    max_task_ttl: float = DEFAULT_MAX_TASK_TTL,
    profile: ToolProfile | None = None,
    fast_path: bool = True,
    result_budget: int | None = None,
) -> Starlette:
    """An ASGI app serving the pool over Streamable HTTP: ``/mcp`` and ``/mcp/<name>``.

    Its lifespan starts the pool if not running yet (then closes it) and the session
    managers; mounted in another app, run it from the host's (``lifespan_context``).
    ``app.state.fast_answers()`` counts the fast path's answers; ``app.state.stop_calls(
    reason)`` stops the calls running, each answering an error saying ``reason``.

    Args:
        servers: which of the pool's servers to serve (default: all).
        token: every request needs ``Authorization: Bearer <token>`` (401): one shared
            secret, every caller the same (per-caller state stays per MCP session).
        auth: serve as an OAuth 2.1 protected resource (see `Authorization`): every
            request needs an access token from its issuer (401 names the resource
            metadata), the scope map decides which tools each caller sees and calls
            (403 ``insufficient_scope``), per-caller state is the subject's.
        allowed_hosts: Host header values accepted besides the local names (each
            ``host:port``, or ``host:*`` for any port): the DNS-rebinding allow-list.
        allowed_origins: Origin header values accepted besides local origins.
        stateless: no sessions: any replica behind a load balancer serves any request.
            No sampling or elicitation then (a tool's request to its client fails with a
            `ClientRequestError` saying so), nor tasks (a call's ``task`` is ignored).
        max_body_size: the largest request body in bytes (larger: 413).
        timeout: seconds per tool call (0: no limit).
        input_timeout: seconds a suspended call waits for its 2026-07-28 client's retry.
        session_idle_timeout: seconds an idle session lives on (None: for ever).
        sessions_per_client: sessions one client address may hold open (None: no limit).
        max_tasks: tasks (2025-11-25 task-augmented calls) one session may hold at once;
            one more is refused. A task counts until its ttl passes or its session ends.
        max_task_ttl: the longest ttl granted to a task, in seconds.
        profile: which tools every route offers (globs on full names), and whether
            through the meta-tools ``search_tools`` and ``call_tool`` (see `ToolProfile`).
        fast_path: answer plain requests straight from the pool, without the SDK's
            session machinery, with the same answers (see `FastPath`: which requests,
            in which era); False sends every request through the SDK's.
        result_budget: tokens per tool result (None: no limit): one over it is cut and
            kept for its caller, and ``read_result`` reads the rest (see `McpBridge`).

    Raises:
        ValueError: a limit out of range, both ``token`` and ``auth``, or a per-user server.
    """
    _check_limits(max_tasks, max_task_ttl, result_budget, token, auth, pool)
    session = _Session(
        timeout=timeout,
        stateless=stateless,
        security=local_only(allowed_hosts, allowed_origins),
        max_body_size=max_body_size,
        input_timeout=input_timeout,
        idle_timeout=session_idle_timeout,
        max_tasks=max_tasks,
        max_task_ttl=max_task_ttl,
        auth=auth,
        profile=profile,
        fast_path=fast_path,
        result_budget=result_budget,
    )
    routes = _Routes(
        pool, servers, name=name, session=session, sessions_per_client=sessions_per_client
    )
    return _asgi_app(routes, token, auth, pool)


def check_users(pool: WorkerPool, auth: Authorization | None) -> None:
    """Refuse to serve a server that acts for each user without knowing the users.

    Raises:
        ValueError: an entry says ``"grantScope": "user"`` and ``auth`` is None.
    """
    per_user = [name for name, h in pool.handles.items() if isinstance(h, UserServers)]
    if per_user and auth is None:
        raise ValueError(
            f'MCP server {per_user[0]!r} has "grantScope": "user": it acts for each '
            "user serve authenticates, so serve needs OAuth (serve --auth-issuer URL "
            "--auth-audience AUD, or http_app(auth=...)); over stdio or a static token "
            'there is no user: drop "grantScope" to use the pool\'s own grant'
        )


class PoolConsents:
    """The pending consents of ``pool``'s per-user servers (one `Consents` each), read
    once the pool runs (its servers are fixed then): what serve's consent routes ask
    on every request costs a look-up, not a walk of the pool's handles."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool
        self._found: list[Consents] | None = None

    def __call__(self) -> list[Consents]:
        """The pool's `Consents` (none before it runs)."""
        if self._found is not None:
            return self._found
        handles = self._pool.handles
        per_user = [h for h in handles.values() if isinstance(h, UserServers)]
        found = list({id(h.consents): h.consents for h in per_user}.values())
        if self._pool.is_running and handles:  # started: its servers are all there
            self._found = found
        return found


def _check_limits(
    max_tasks: int,
    max_task_ttl: float,
    result_budget: int | None,
    token: str | None,
    auth: Authorization | None,
    pool: WorkerPool,
) -> None:
    """Refuse `http_app`'s settings now, not when the bridges are made (at start-up);
    a running pool's servers too (`check_users`; the lifespan checks one it starts)."""
    check_users(pool, auth)
    check_task_limits(max_tasks, max_task_ttl)
    if result_budget is not None:
        check_budget(result_budget, "result_budget")
    if token and auth is not None:
        raise ValueError(
            "a static token and OAuth are exclusive: pass token= (one shared secret) or "
            "auth= (access tokens from an identity provider), not both"
        )


def _asgi_app(
    routes: _Routes, token: str | None, auth: Authorization | None, pool: WorkerPool
) -> Starlette:
    """The Starlette app of ``routes``, behind the HTTP edge's checks: the canonical
    Host, then the static ``token`` or OAuth's ``auth`` (outermost)."""
    # Its POSTs (every call) reach `routes` before Starlette's routing (`McpApp`).
    app = McpApp(
        routes,
        routes=[
            Route("/mcp", endpoint=routes, methods=["GET", "POST", "DELETE"]),
            # `path`: a server named for a URL (github.com/acme/tool) keeps its slashes.
            Route("/mcp/{name:path}", endpoint=routes, methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=routes.lifespan,
    )
    # For a shutdown past its grace: the calls still running answer with an error.
    app.state.stop_calls = routes.stop_calls
    # How many requests skipped the SDK's machinery: for tests, benchmarks and operators.
    app.state.fast_answers = routes.fast_answers
    # `LOCALHOST:8000` and `localhost.:8000` name this machine too (DNS ignores case
    # and a trailing dot); the SDK's Host check compares exactly.
    app.add_middleware(CanonicalHost)
    if token:
        app.add_middleware(_BearerToken, token=token)
    if auth is not None:
        consents = PoolConsents(pool)
        app.add_middleware(ConsentOrigin, consents=consents, authorization=auth)
        # No request is handled before its token is checked, but a browser coming back
        # from an upstream's sign-in (it has no token: its consent's state is checked).
        app.add_middleware(ResourceServer, authorization=auth)
        app.add_middleware(ConsentCallback, consents=consents)
    return app
