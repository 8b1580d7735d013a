"""``nativemcp serve SERVER...``: serve nativemcp servers to MCP clients.

SERVER is a built-in name (``content-store``, ``planning``, ``workspace``), a
``module:attribute`` or a ``path/to/file.py:attribute`` naming a `Server` (or a factory).
``--transport stdio`` (default) speaks MCP on stdin/stdout (logs go to stderr);
``--transport http`` serves Streamable HTTP with uvicorn at ``/mcp`` and ``/mcp/<name>``;
``--workers N`` runs N such server processes on one port (`serve_processes`).
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio

from ._content import add_database_url

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["add_serve_parser", "run_serve"]

DEFAULT_GRACE: Final = 10.0
"""Seconds in-flight HTTP requests get to finish after SIGTERM."""


def add_serve_parser(commands: Any) -> None:
    """Add the ``serve`` verb to the CLI's subcommands."""
    from nativemcp.workers import BUILTIN_SERVERS

    from ..serve._defaults import DEFAULT_MAX_BODY, TOKEN_ENV

    serve = commands.add_parser(
        "serve",
        help="serve servers to MCP clients over stdio or Streamable HTTP",
        description=(
            "Serve nativemcp servers over MCP. SERVER is a built-in "
            f"({', '.join(BUILTIN_SERVERS)}), module:attribute or path/to/file.py:attribute."
        ),
    )
    serve.add_argument("servers", nargs="+", metavar="SERVER")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP: address to bind")
    serve.add_argument("--port", type=int, default=8000, help="HTTP: port")
    serve.add_argument(
        "--token",
        default=None,
        help=f"HTTP: require this bearer token (default: ${TOKEN_ENV}, else none)",
    )
    serve.add_argument(
        "--stateless", action="store_true", help="HTTP: no sessions (for replicas behind a LB)"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="HTTP: N server processes on one port, each with its own workers (stateless)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="HTTP: accept this Host header too (DNS-rebinding allow-list; repeatable)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="HTTP: accept this Origin header too (repeatable)",
    )
    serve.add_argument(
        "--max-body", type=int, default=DEFAULT_MAX_BODY, help="HTTP: largest request in bytes"
    )
    serve.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE,
        help="HTTP: seconds in-flight calls get to finish on SIGTERM",
    )
    serve.add_argument("--data-dir", type=Path, default=None, help="built-in servers' data")
    add_database_url(serve)
    serve.add_argument("--timeout", type=float, default=0, help="seconds per call (0: none)")
    serve.add_argument(
        "--input-timeout",
        type=float,
        default=300.0,
        help="seconds a call waiting for a 2026-07-28 client's input waits for its retry",
    )
    serve.add_argument(
        "--mcp-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="external MCP servers to serve too: an mcp.json with mcpServers",
    )


def _importable_from(folder: str) -> None:
    """Let this process and its workers import modules from ``folder``."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (folder, os.environ.get("PYTHONPATH")) if p
    )


def _sources(specs: list[str]) -> tuple[list[str], list[str]]:
    """``(built-in names, module:attribute sources)``. A file path's folder, or for a
    module the current folder (as ``python -m`` and uvicorn do), joins sys.path and
    PYTHONPATH, so worker processes import it the same way."""
    from nativemcp.workers import BUILTIN_SERVERS

    builtins: list[str] = []
    sources: list[str] = []
    for spec in specs:
        if spec in BUILTIN_SERVERS:
            builtins.append(spec)
            continue
        target, sep, attribute = spec.rpartition(":")
        if not sep or not target or not attribute:
            raise SystemExit(
                f"nativemcp serve: {spec!r} is neither a built-in ({', '.join(BUILTIN_SERVERS)}) "
                "nor module:attribute nor path/to/file.py:attribute"
            )
        if target.endswith(".py"):
            path = Path(target).resolve()
            if not path.is_file():
                raise SystemExit(f"nativemcp serve: no file {target!r}")
            _importable_from(str(path.parent))
            target = path.stem
        else:
            _importable_from(os.getcwd())
        sources.append(f"{target}:{attribute}")
    return builtins, sources


def _pool(args: argparse.Namespace, data_dir: Path) -> WorkerPool:
    from .._pool import WorkerPool

    builtins, sources = _sources(args.servers)
    return WorkerPool(
        sources,
        data_dir=data_dir if builtins else None,
        builtins=builtins,
        timeout=args.timeout,
        mcp_servers=args.mcp_config,
        # Replicas behind a load balancer share the content store and planning here.
        database_url=args.database_url,
    )


def _serve_http(
    args: argparse.Namespace, data_dir: Path, sock: socket.socket | None = None
) -> None:
    """Serve over Streamable HTTP until SIGTERM: on ``--host``/``--port``, or on ``sock``
    (a socket that several server processes share, see `serve_processes`)."""
    import uvicorn

    from ..serve._graceful import GracefulServer
    from ..serve._transports import TOKEN_ENV, Drain, http_app

    token = args.token or os.environ.get(TOKEN_ENV) or None
    app = http_app(
        _pool(args, data_dir),
        token=token,
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        stateless=args.stateless,
        max_body_size=args.max_body,
        timeout=args.timeout,
        input_timeout=args.input_timeout,
    )
    drain = Drain(app)
    config = uvicorn.Config(
        drain,
        host=args.host,
        port=args.port,
        log_level="warning",
        # The calls have drained by the time uvicorn shuts down (GracefulServer).
        timeout_graceful_shutdown=1,
        lifespan="on",
    )
    GracefulServer(config, drain, args.grace).run(sockets=None if sock is None else [sock])


def run_serve(args: argparse.Namespace, data_dir: Path) -> int:
    """Run ``nativemcp serve`` until the client disconnects (stdio) or SIGTERM (HTTP)."""
    from ..serve._transports import serve_stdio

    # stdout is the MCP channel on stdio: every log line goes to stderr.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.workers < 1:
        raise SystemExit(f"nativemcp serve: --workers must be at least 1, not {args.workers}")
    if args.transport == "stdio":
        if args.workers > 1:
            raise SystemExit("nativemcp serve: --workers needs --transport http")
        pool = _pool(args, data_dir)

        async def main() -> None:
            async with pool:
                await serve_stdio(pool, timeout=args.timeout, input_timeout=args.input_timeout)

        anyio.run(main)
        return 0
    if args.workers == 1:
        print(f"nativemcp serving MCP at http://{args.host}:{args.port}/mcp", file=sys.stderr)
        _serve_http(args, data_dir)
        return 0
    from ._serve_workers import bind_socket, serve_processes

    _sources(args.servers)  # a bad SERVER is named here, once, not by every process
    # Two requests of one client may reach two processes: no sessions.
    args.stateless = True
    sock = bind_socket(args.host, args.port)
    port = sock.getsockname()[1]
    print(
        f"nativemcp serving MCP at http://{args.host}:{port}/mcp "
        f"({args.workers} processes, stateless)",
        file=sys.stderr,
    )
    with sock:
        return serve_processes(args.workers, functools.partial(_serve_http, args, data_dir), sock)
