"""``nativemcp console``: the browser console on 127.0.0.1, its URL on stdout's first line.

```
$ nativemcp console --port 8765
http://127.0.0.1:8765/3q2-...-token/
```

The URL carries a random token; requests without it get 401, requests naming another
Host than a local name (or ``--allow-host``) 421, another Origin 403. A second port
(``--sandbox-port``, any free one by default) serves the sandbox proxy MCP Apps render in:
a second origin, as the ext-apps specification asks of web hosts. The console runs the
built-in servers (and any ``--server``, named as on every verb) in a `WorkerPool` for
as long as it serves; Ctrl-C stops both.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import secrets
import socket
import sys
from typing import Final

import anyio

from nativemcp.workers import BUILTIN_SERVERS, OPT_IN_BUILTINS

from ._content import add_allow_lists
from ._listen import listen
from ._pool_options import PoolOptions, pool_options_parser
from ._servers import resolve_servers

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
        parents=[pool_options_parser()],
        help="a local web page: call any tool and see what the model reads and the app gets",
    )
    console.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)"
    )
    console.add_argument(
        "--sandbox-port",
        type=int,
        default=0,
        help="port on 127.0.0.1 for MCP Apps' sandbox, their second origin (default: any "
        "free port; forward it too when you tunnel the console)",
    )
    add_allow_lists(console)  # a name for 127.0.0.1 besides localhost (an SSH tunnel's)
    console.add_argument(
        "--server",
        action="append",
        default=[],
        metavar="SERVER",
        help="also run this server: module:attribute or path/to/file.py:attribute "
        "(a Server or a factory), or an opt-in built-in such as browser; repeatable",
    )


def _with_sandbox_port(hosts: list[str], port: int) -> list[str]:
    """The allowed ``host:port`` names, each also on the sandbox ``port``: a page reached
    under a name reaches its apps' sandbox under the same name."""
    named = (re.fullmatch(r"(.+):[0-9]+", host) for host in hosts)
    return [*hosts, *(f"{match[1]}:{port}" for match in named if match)]


async def _serve(
    args: argparse.Namespace, options: PoolOptions, sock: socket.socket, sandbox: socket.socket
) -> int:
    import uvicorn

    from ..console._app import create_console_app
    from ..console._catalog import ConsoleCatalog
    from ..console._spans import ConsoleSpans

    token = secrets.token_urlsafe(TOKEN_BYTES)
    extra = resolve_servers(args.server)
    # Every default built-in runs in the console; --server adds the user's own and the
    # opt-in built-ins it names (browser).
    builtins = [n for n in BUILTIN_SERVERS if n not in OPT_IN_BUILTINS or n in extra.builtins]
    choice = dataclasses.replace(extra, builtins=tuple(builtins))
    spans = ConsoleSpans.install()  # before the pool starts: it adopts the provider then
    async with (
        options.pool(choice, apps=True) as pool,  # the console hosts MCP Apps
        anyio.create_task_group() as calls,
    ):
        app = create_console_app(
            await ConsoleCatalog.load(pool),
            token,
            calls,
            allowed_hosts=_with_sandbox_port(args.allow_host, sandbox.getsockname()[1]),
            allowed_origins=args.allow_origin,
            sandbox_port=sandbox.getsockname()[1],
            spans=spans,
        )
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
            f"nativemcp console: servers {', '.join(pool.names)}; data in {options.where}; "
            f"MCP Apps' sandbox on port {sandbox.getsockname()[1]}; Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )
        await server.serve(sockets=[sock, sandbox])
        calls.cancel_scope.cancel()
    return 0


def run_console(args: argparse.Namespace, options: PoolOptions) -> int:
    """Serve the console until interrupted; returns the exit status."""
    try:
        sock = listen(HOST, args.port)
    except OSError as exc:
        print(f"nativemcp console: error: {exc}", file=sys.stderr)
        return 2
    try:
        sandbox = listen(HOST, args.sandbox_port)
    except OSError as exc:
        sock.close()
        print(f"nativemcp console: error (--sandbox-port): {exc}", file=sys.stderr)
        return 2
    with sock, sandbox:
        try:
            return int(anyio.run(_serve, args, options, sock, sandbox))
        except KeyboardInterrupt:
            # uvicorn shuts down on Ctrl-C, then raises it again; by then the pool has
            # closed every worker. Ctrl-C is how the console is meant to stop: status 0.
            return 0
