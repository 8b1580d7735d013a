"""``nativemcp serve SERVER...``: serve nativemcp servers to MCP clients.

SERVER is named as on every verb (see `_servers`): a built-in name (``content-store``,
``planning``, ``workspace``, ``browser``), ``module:attribute`` or
``path/to/file.py:attribute``.
``--transport stdio`` (default) speaks MCP on stdin/stdout (logs go to stderr);
``--transport http`` binds its port first, then says where it serves, and serves
Streamable HTTP with uvicorn at ``/mcp`` and ``/mcp/<name>``; a port in use is one line
and exit status 2, as for ``console``.
``--workers N`` runs N such server processes on one port (`serve_processes`).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import ipaddress
import logging
import math
import os
import signal
import socket
import sys
from types import FrameType
from typing import Any, Final
from urllib.parse import urlsplit

import anyio

from ..llm._budget import check_budget
from ._content import add_allow_lists
from ._errors import UsageError
from ._listen import listen
from ._pool_options import PoolOptions, pool_options_parser
from ._profile import (
    add_profile_options,
    code_limits,
    search_embed,
    search_learn,
    tool_profile,
)
from ._serve_stdio import run_stdio
from ._servers import ServerChoice, resolve_servers

__all__ = [
    "DEFAULT_GRACE",
    "INTROSPECTION_SECRET_ENV",
    "UNSAFE_NO_TOKEN",
    "add_serve_parser",
    "allowed_hosts",
    "run_serve",
]

DEFAULT_GRACE: Final = 10.0
"""Seconds in-flight HTTP requests get to finish after SIGTERM."""
INTROSPECTION_SECRET_ENV: Final = "NATIVEMCP_AUTH_CLIENT_SECRET"
"""Where ``--auth-client-id``'s secret comes from (a secret stays out of argv)."""
UNSAFE_NO_TOKEN: Final = "--unsafe-no-token"
"""The opt-out flag for serving beyond loopback without a token (it warns at start)."""


def add_serve_parser(commands: Any) -> None:
    """Add the ``serve`` verb to the CLI's subcommands."""
    from nativemcp.workers import BUILTIN_SERVERS

    serve = commands.add_parser(
        "serve",
        parents=[pool_options_parser()],
        help="serve servers to MCP clients over stdio or Streamable HTTP",
        description=(
            "Serve nativemcp servers over MCP. SERVER is a built-in "
            f"({', '.join(BUILTIN_SERVERS)}), module:attribute or path/to/file.py:attribute."
        ),
    )
    serve.add_argument(
        "servers",
        nargs="*",
        metavar="SERVER",
        help="a built-in name, module:attribute or path/to/file.py:attribute "
        "(none: only the servers of --mcp-config)",
    )
    _add_http_options(serve)
    _add_oauth_options(serve)
    _add_http_limits(serve)
    _add_call_options(serve)


def _add_http_options(serve: Any) -> None:
    """Where serve listens and with which token."""
    from ..serve._defaults import DEFAULT_HTTP, HTTP_PROTOCOLS, TOKEN_ENV

    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind")
    serve.add_argument("--port", type=int, default=8000, help="HTTP: port")
    serve.add_argument(
        "--http",
        choices=HTTP_PROTOCOLS,
        default=DEFAULT_HTTP,
        help="HTTP: uvicorn's HTTP/1.1 parser (httptools: C, about half the CPU per "
        "request; h11: pure Python)",
    )
    serve.add_argument(
        "--token",
        default=None,
        help=f"HTTP: require this bearer token (default: ${TOKEN_ENV}, else none)",
    )


def _add_oauth_options(serve: Any) -> None:
    """OAuth: access tokens from an identity provider, and the scopes tools need."""
    oauth = serve.add_argument_group(
        "OAuth (serve for a team)",
        "HTTP: accept access tokens from your identity provider instead of one --token",
    )
    oauth.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="the issuer of the access tokens (its 'iss'; metadata and keys discovered)",
    )
    oauth.add_argument(
        "--auth-audience",
        metavar="AUD",
        help="what the tokens' 'aud' must hold (often this server's public /mcp URL)",
    )
    oauth.add_argument(
        "--auth-resource",
        metavar="URL",
        help="the public URL of /mcp, for the resource metadata (default: from each "
        "request's Host; set it behind a proxy that ends TLS)",
    )
    oauth.add_argument(
        "--auth-client-id",
        metavar="ID",
        help=f"this server's client id at the provider: tokens that are not JWTs are then "
        f"checked by RFC 7662 introspection (the secret from ${INTROSPECTION_SECRET_ENV})",
    )
    oauth.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="GLOB=SCOPE[,SCOPE]",
        help="tools whose full name matches GLOB need these scopes (repeatable; a tool "
        "no rule matches needs only a valid token)",
    )


def _add_http_limits(serve: Any) -> None:
    """How serve runs over HTTP: sessions, processes, sizes and deadlines."""
    from ..serve._defaults import (
        DEFAULT_BODY_TIMEOUT,
        DEFAULT_HEADER_TIMEOUT,
        DEFAULT_MAX_BODY,
        DEFAULT_SESSION_IDLE_TIMEOUT,
        DEFAULT_SESSIONS_PER_CLIENT,
    )

    serve.add_argument(
        UNSAFE_NO_TOKEN,
        action="store_true",
        help=(
            "HTTP: listen beyond loopback without a token, so anyone who reaches the port "
            "can call every tool (refused otherwise)"
        ),
    )
    serve.add_argument(
        "--stateless", action="store_true", help="HTTP: no sessions (for replicas behind a LB)"
    )
    serve.add_argument(
        "--no-fast-path",
        dest="fast_path",
        action="store_false",
        help="HTTP: send every request through the SDK's session machinery (the fast "
        "path answers plain 2026-07-28 requests the same, with less CPU)",
    )
    add_allow_lists(serve, "HTTP: ")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="HTTP: N server processes on one port, each with its own workers (stateless)",
    )
    serve.add_argument(
        "--max-body", type=int, default=DEFAULT_MAX_BODY, help="HTTP: largest request in bytes"
    )
    serve.add_argument(
        "--session-idle-timeout",
        type=float,
        default=DEFAULT_SESSION_IDLE_TIMEOUT,
        metavar="SECONDS",
        help="HTTP: a session with no request for this long ends (0: never)",
    )
    serve.add_argument(
        "--sessions-per-client",
        type=int,
        default=DEFAULT_SESSIONS_PER_CLIENT,
        metavar="N",
        help="HTTP: sessions one client address may hold open (0: no limit)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=DEFAULT_HEADER_TIMEOUT,
        metavar="SECONDS",
        help="HTTP: a client that takes longer to send a request's headers gets 408",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        metavar="SECONDS",
        help="HTTP: a client that takes longer to send a request's body is disconnected",
    )
    serve.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="HTTP: seconds in-flight calls get to finish on SIGTERM",
    )


def _add_call_options(serve: Any) -> None:
    """What one call may take: time, tokens, input rounds, tasks; which tools."""
    from ..serve._defaults import (
        DEFAULT_INPUT_ROUNDS,
        DEFAULT_MAX_TASK_TTL,
        DEFAULT_MAX_TASKS,
    )

    serve.add_argument("--timeout", type=float, default=0, help="seconds per call (0: none)")
    serve.add_argument(
        "--result-budget",
        type=int,
        default=None,
        metavar="TOKENS",
        help="tokens per tool result: one over it is cut, kept for its caller as "
        "nativemcp://results/<id>, and read_result is listed to read the rest (default: "
        "no limit)",
    )
    add_profile_options(serve)
    serve.add_argument(
        "--input-timeout",
        type=float,
        default=300.0,
        help="seconds a call waiting for a 2026-07-28 client's input waits for its retry",
    )
    serve.add_argument(
        "--input-rounds",
        type=int,
        default=DEFAULT_INPUT_ROUNDS,
        metavar="N",
        help="rounds of input an external server's call may ask of the client, each "
        "relayed (2026-07-28 servers); past them the call answers an error",
    )
    serve.add_argument(
        "--max-tasks",
        type=int,
        default=DEFAULT_MAX_TASKS,
        metavar="N",
        help="tasks (2025-11-25 task-augmented calls) one client session may hold at once",
    )
    serve.add_argument(
        "--max-task-ttl",
        type=float,
        default=DEFAULT_MAX_TASK_TTL,
        metavar="SECONDS",
        help="the longest ttl granted to a task (a client asking more gets this)",
    )


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (``--host``) can be reached from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that may resolve to anything: assume the network


def _is_wildcard(host: str) -> bool:
    """Whether ``host`` (``--host``) listens on every address (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def allowed_hosts(host: str, allowed: list[str]) -> list[str]:
    """The Host allow-list for ``--host host``: ``--allow-host``'s entries, plus the
    address or name bound when it is one address or name.

    A Host naming the address or name the server was told to bind cannot come from a
    DNS-rebinding page (its Host names the attacker's domain), so it is safe to accept:
    ``--host 192.168.1.20`` answers ``Host: 192.168.1.20:8000``, ``--host 127.0.0.2``
    ``Host: 127.0.0.2:8000``. ``0.0.0.0`` and ``::`` name no address a client uses
    (see `_wildcard_hint`).
    """
    if _is_wildcard(host):
        return list(allowed)
    bare = host.strip("[]")
    return [*allowed, f"[{bare}]:*" if ":" in bare else f"{bare}:*"]


def _wildcard_hint(args: argparse.Namespace) -> None:
    """Say at start that ``--host 0.0.0.0`` without ``--allow-host`` answers only local
    names: a client reaching it by another name or address gets 421."""
    if _is_wildcard(args.host) and not args.allow_host:
        logging.getLogger("nativemcp.serve").warning(
            "--host %s listens on every address, but answers only requests whose Host is "
            "a local name (127.0.0.1, localhost, [::1]): a client that reaches it by "
            "another name or address gets 421 Misdirected Request; add --allow-host "
            "NAME:* for each name or address clients use (e.g. --allow-host "
            "mcp.example.com:* --allow-host 192.168.1.20:*), or pass --host that address",
            args.host,
        )


def _network_token(args: argparse.Namespace, token_env: str, oauth: bool = False) -> str | None:
    """The bearer token; refuses a non-loopback ``--host`` without one (unless opted out).

    The Host check stops browsers (DNS rebinding), not a client on the network, which
    simply sends ``Host: 127.0.0.1``: beyond loopback only the token keeps tools private.

    Raises:
        UsageError: ``--host`` is beyond loopback, with no token and no opt-out.
    """
    token: str | None = args.token or os.environ.get(token_env) or None
    if token is None and not oauth and not _is_loopback(args.host):
        if not args.unsafe_no_token:
            raise UsageError(
                f"--host {args.host} is reachable from the network and "
                f"there is no token: set --token or ${token_env} "
                f"(or pass {UNSAFE_NO_TOKEN} to let anyone call every tool)"
            )
        logging.getLogger("nativemcp.serve").warning(
            "%s: serving on %s WITHOUT A TOKEN: anyone who reaches this port can call every tool",
            UNSAFE_NO_TOKEN,
            args.host,
        )
    return token


def _authorization(args: argparse.Namespace, token_env: str, options: Any = None) -> Any:
    """The OAuth settings of ``--auth-issuer`` and its flags (None without them); with
    ``options``, none of its servers may act for each user without them.

    Raises:
        UsageError: one of issuer and audience without the other, a static token beside
            them, a scope rule that does not parse, an issuer that is not https (or
            http on loopback), OAuth flags on stdio, or a per-user entry without OAuth.
    """
    from ..serve import Authorization, ScopeMap

    oauth = args.auth_issuer or args.auth_audience
    if options is not None and not (oauth and args.transport == "http"):
        options.check_no_users()
    if not oauth:
        if args.scope or args.auth_resource or args.auth_client_id:
            raise UsageError(
                "--scope, --auth-resource and --auth-client-id need --auth-issuer and "
                "--auth-audience"
            )
        return None
    if not (args.auth_issuer and args.auth_audience):
        raise UsageError("OAuth needs both --auth-issuer URL and --auth-audience AUD")
    if args.transport != "http":
        raise UsageError("--auth-issuer needs --transport http (stdio has no bearer tokens)")
    if args.token or os.environ.get(token_env):
        where = "--token" if args.token else f"${token_env}"
        raise UsageError(
            f"{where} and --auth-issuer are exclusive: one shared token, or access tokens "
            f"from an identity provider; drop {where} to serve for a team"
        )
    issuer = str(args.auth_issuer)
    host = urlsplit(issuer).hostname or ""
    if not (issuer.startswith("https://") or (issuer.startswith("http://") and _is_loopback(host))):
        raise UsageError(
            f"--auth-issuer must be an https:// URL (http:// only on loopback), not {issuer!r}"
        )
    introspection = None
    if args.auth_client_id:
        secret = os.environ.get(INTROSPECTION_SECRET_ENV)
        if not secret:
            raise UsageError(
                f"--auth-client-id needs its secret in ${INTROSPECTION_SECRET_ENV} "
                "(this server's credentials for the provider's introspection endpoint)"
            )
        introspection = (str(args.auth_client_id), secret)
    try:
        scopes = ScopeMap(args.scope)
        return Authorization(
            issuer=issuer,
            audience=args.auth_audience,
            scopes=scopes,
            resource_url=args.auth_resource,
            introspection=introspection,
        )
    except ValueError as exc:
        raise UsageError(f"--scope/--auth-resource: {exc}") from exc


def _serve_pool(args: argparse.Namespace) -> dict[str, Any]:
    """What serve's pool takes beyond the common options: the per-call limit, every
    external server's sampling and elicitation relayed to the MCP client of the call,
    for up to ``--input-rounds`` rounds per call, and MCP Apps declared to them (serve
    passes the apps on to the clients that show them)."""
    return {
        "timeout": args.timeout,
        "relay_client_requests": True,
        "input_rounds": args.input_rounds,
        "apps": True,
        "search_embed": search_embed(args),
        "search_learn": search_learn(args),
        "code_limits": code_limits(args),
    }


def run_serve(args: argparse.Namespace, options: PoolOptions) -> int:
    """Run ``nativemcp serve`` until the client disconnects (stdio) or SIGTERM (HTTP)."""
    from ..serve import TOKEN_ENV, serve_stdio

    # stdout is the MCP channel on stdio: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, not {args.workers}")
    if args.input_rounds < 1:
        raise UsageError(f"--input-rounds must be at least 1, not {args.input_rounds}")
    if args.max_tasks < 1:
        raise UsageError(f"--max-tasks must be at least 1, not {args.max_tasks}")
    if not (math.isfinite(args.max_task_ttl) and args.max_task_ttl > 0):
        raise UsageError(
            f"--max-task-ttl must be a positive number of seconds, not {args.max_task_ttl}"
        )
    if args.result_budget is not None:
        try:
            check_budget(args.result_budget, "--result-budget")
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    auth = _authorization(args, TOKEN_ENV, options)
    if args.transport == "http":
        # Checked before anything starts: a refused start costs nothing.
        _network_token(args, TOKEN_ENV, oauth=auth is not None)
        _wildcard_hint(args)
        if auth is not None:
            _check_issuer(auth)
    elif args.workers > 1:
        raise UsageError("--workers needs --transport http")
    if not args.servers and options.mcp_config is None:
        raise UsageError("say what to serve: SERVER..., --mcp-config FILE, or both")
    profile = tool_profile(args)
    choice = resolve_servers(args.servers, mcp_config=options.mcp_config is not None)
    if choice.external:
        # Every server of --mcp-config is served; naming one here would suggest otherwise.
        raise UsageError(
            f"serve takes built-in and module servers; {', '.join(choice.external)} is "
            "served with every other server of --mcp-config, without naming it"
        )
    if args.transport == "stdio":
        run_stdio(
            lambda: options.pool(choice, **_serve_pool(args)),
            functools.partial(
                serve_stdio,
                timeout=args.timeout,
                input_timeout=args.input_timeout,
                max_tasks=args.max_tasks,
                max_task_ttl=args.max_task_ttl,
                profile=profile,
                result_budget=args.result_budget,
            ),
        )
        return 0

    try:
        sock = listen(args.host, args.port, backlog=2048 if args.workers > 1 else 128)
    except OSError as exc:
        print(f"nativemcp serve: error: {exc}", file=sys.stderr)
        return 2
    with sock:
        if args.workers == 1:
            _serve_on(args, options, choice, sock)
            return 0
        from ._serve_workers import serve_processes

        # Two requests of one client may reach two processes: no sessions.
        args.stateless = True
        host, port = sock.getsockname()[:2]
        print(
            f"nativemcp serving MCP at http://{_url_host(host)}:{port}/mcp "
            f"({args.workers} processes, stateless)",
            file=sys.stderr,
            flush=True,
        )
        return serve_processes(
            args.workers, functools.partial(_serve_on, args, options, choice), sock
        )


def _serve_on(
    args: argparse.Namespace, options: PoolOptions, choice: ServerChoice, sock: socket.socket
) -> None:
    """Serve over HTTP on ``sock`` until SIGTERM: the one server process, or one of
    ``--workers`` (which the supervisor announced, so this one stays quiet)."""
    # uvicorn's own loop choice: uvloop where it is installed.
    uvloop = importlib.util.find_spec("uvloop") is not None
    announce = args.workers == 1
    anyio.run(
        _serve_http, args, options, choice, sock, announce, backend_options={"use_uvloop": uvloop}
    )


async def _serve_http(
    args: argparse.Namespace,
    options: PoolOptions,
    choice: ServerChoice,
    sock: socket.socket,
    announce: bool,
) -> None:
    """Start the servers, then say where they answer, then serve until SIGTERM or Ctrl-C.

    The pool runs around uvicorn (its lifespan sees it running and leaves it be), so a
    server that fails to start is one line before any announcement, and the pool closes
    after the last call has drained.
    """
    import uvicorn

    from ..serve._deadlines import deadline_protocol
    from ..serve._defaults import TOKEN_ENV
    from ..serve._graceful import GracefulServer
    from ..serve._transports import Drain, http_app

    # Replicas behind a load balancer share the content store and planning in
    # --database-url.
    async with options.pool(choice, **_serve_pool(args)) as pool:
        token = args.token or os.environ.get(TOKEN_ENV) or None
        app = http_app(
            pool,
            token=token,
            auth=_authorization(args, TOKEN_ENV),
            allowed_hosts=allowed_hosts(args.host, args.allow_host),
            allowed_origins=args.allow_origin,
            stateless=args.stateless,
            max_body_size=args.max_body,
            timeout=args.timeout,
            input_timeout=args.input_timeout,
            session_idle_timeout=args.session_idle_timeout or None,
            sessions_per_client=args.sessions_per_client or None,
            max_tasks=args.max_tasks,
            max_task_ttl=args.max_task_ttl,
            profile=tool_profile(args),
            fast_path=args.fast_path,
            result_budget=args.result_budget,
        )
        drain = Drain(app)
        config = uvicorn.Config(
            drain,
            log_level="warning",
            # The calls have drained by the time uvicorn shuts down (GracefulServer).
            timeout_graceful_shutdown=1,
            lifespan="on",
            http=deadline_protocol(args.header_timeout, args.body_timeout, http=args.http),
        )
        server = GracefulServer(config, drain, args.grace, app.state.stop_calls)
        if announce:
            host, port = sock.getsockname()[:2]
            print(
                f"nativemcp serving MCP at http://{_url_host(host)}:{port}/mcp",
                file=sys.stderr,
                flush=True,
            )
        # Uvicorn raises the stopping signal again once it has shut down; here that
        # would end the process before the pool closes, so the signal only stops serving.
        stopped = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            await server.serve(sockets=[sock])
        finally:
            for sig, handler in stopped.items():
                signal.signal(sig, handler)


def _check_issuer(auth: Any) -> None:
    """Read the issuer's metadata once before serving: a wrong URL or an unreachable
    provider is one line and exit status 2, not a 503 on every request."""
    from ..serve import IssuerTokens, IssuerUnavailable

    tokens = IssuerTokens(auth.issuer, auth.audience)
    try:
        anyio.run(tokens.metadata)
    except IssuerUnavailable as exc:
        raise UsageError(f"--auth-issuer {auth.issuer}: {exc}") from exc


def _stop(signum: int, frame: FrameType | None) -> None:
    """The stopping signal uvicorn raises again after shutting down: already handled."""


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
