"""``nativemcp console``: the browser console on 127.0.0.1, its URL on stdout's first line.

```
$ nativemcp console --port 8765
http://127.0.0.1:8765/3q2-...-token/
```

The URL carries a random token; requests without it get 401. The console runs the
built-in servers (and any ``--server``) in a `WorkerPool` for as long as it serves;
Ctrl-C stops both.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
from pathlib import Path
from typing import Final

import anyio

from ._content import add_pool_options, external_servers

__all__ = ["HOST", "SHUTDOWN_GRACE", "TOKEN_BYTES", "add_console_parser", "run_console"]

HOST: Final = "127.0.0.1"
"""The console listens on loopback only."""
SHUTDOWN_GRACE: Final = 3
"""Seconds open requests (event streams of running calls) get when the console stops."""
TOKEN_BYTES: Final = 24
"""Random bytes in the URL's token (32 URL-safe characters)."""


def add_console_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the ``console`` verb on the CLI's subcommands."""
    console = commands.add_parser(
        "console",
        help="a local web page: call any tool and see what the model reads and the app gets",
    )
    console.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)"
    )
    add_pool_options(console)  # --data-dir, --mcp-config, --database-url
    console.add_argument(
        "--workspace",
        type=Path,
        default=None,
        help="the workspace server's root folder (default: a folder in the data folder)",
    )
    console.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="also run this server (a Server or a factory), in a worker; repeatable",
    )


def _listen(port: int) -> socket.socket:
    """A bound loopback socket (port 0: any free port), so the URL names the real port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    return sock


async def _serve(args: argparse.Namespace, data_dir: Path, sock: socket.socket) -> int:
    import uvicorn

    from .._pool import WorkerPool
    from ..console._app import create_console_app
    from ..console._catalog import ConsoleCatalog

    token = secrets.token_urlsafe(TOKEN_BYTES)
    async with (
        WorkerPool(
            args.server,
            data_dir=data_dir,
            workspace_root=args.workspace,
            database_url=args.database_url,
            **external_servers(args),
        ) as pool,
        anyio.create_task_group() as calls,
    ):
        app = create_console_app(await ConsoleCatalog.load(pool), token, calls)
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            # An open event stream of a long call must not hold Ctrl-C up.
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
        )
        server = uvicorn.Server(config)
        port = sock.getsockname()[1]
        # The first line of stdout, flushed: scripts and tests read the URL from it.
        print(f"http://{HOST}:{port}/{token}/", flush=True)
        print(
            f"nativemcp console: servers {', '.join(pool.names)}; data in {data_dir}; Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )
        await server.serve(sockets=[sock])
        calls.cancel_scope.cancel()
    return 0


def run_console(args: argparse.Namespace, data_dir: Path) -> int:
    """Serve the console until interrupted; returns the exit status."""
    try:
        sock = _listen(args.port)
    except OSError as exc:
        print(f"cannot listen on {HOST}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    with sock:
        try:
            return anyio.run(_serve, args, data_dir, sock)
        except KeyboardInterrupt:
            # uvicorn shuts down on Ctrl-C, then raises it again; by then the pool has
            # closed every worker. Ctrl-C is how the console is meant to stop: status 0.
            return 0
