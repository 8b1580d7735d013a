"""The ``nativemcp`` command line.

``nativemcp demo`` runs the main job (see `nativemcp.proxy.cli._demo`). The content-store
verbs (``ingest``, ``search``, ``stores``, ``list``, ``read``, ``delete``) and the
generic ``call SERVER TOOL --args JSON`` live in `nativemcp.proxy.cli._content`; each
opens a `WorkerPool` on data kept in ``--data-dir`` (default: `default_data_dir`), or
in the PostgreSQL database of ``--database-url`` / ``$NATIVEMCP_DATABASE_URL``, and
takes ``--json`` for the typed value instead of the text a model reads.
``nativemcp console [--port N]`` serves the browser console (see `nativemcp.proxy.console._app`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import anyio

from nativemcp.protocol import NativeMCPError
from nativemcp.workers import is_postgres_url, redact_url

from ._console import add_console_parser, run_console
from ._content import Runner, UsageError, add_content_commands, add_database_url
from ._data_dir import default_data_dir

__all__ = ["main"]


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Runner]]:
    parser = argparse.ArgumentParser(
        prog="nativemcp",
        description=(
            "Run MCP tool servers in worker processes: exact typed values for code, "
            "rich text for LLMs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"nativemcp {version('nativemcp')}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="the main job: content store + planning in workers on a bundled sample corpus",
    )
    demo.add_argument(
        "--data-dir", type=Path, default=None, help="data folder (default: a temporary one)"
    )
    add_database_url(demo)

    runners = add_content_commands(commands)
    from ._serve import add_serve_parser

    add_serve_parser(commands)
    add_console_parser(commands)
    return parser, runners


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nativemcp`` console script; returns the exit status."""
    parser, runners = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        url = getattr(args, "database_url", None)
        if url and not is_postgres_url(url):
            raise UsageError(f"--database-url must be a postgresql:// URL, not {redact_url(url)!r}")
        if args.command == "demo":
            from rich.console import Console

            from ._demo import run_demo

            console = Console()
            if not console.is_terminal:
                # Piped or captured: wide enough for the side-by-side tables.
                console = Console(width=120)
            return anyio.run(run_demo, args.data_dir, console, url)
        data_dir = (args.data_dir or default_data_dir()).expanduser()
        if args.command == "serve":  # runs its own event loop (uvicorn's, over HTTP)
            from ._serve import run_serve

            return run_serve(args, data_dir)
        if args.command == "console":
            # Not a runner: it binds its socket first and stops on Ctrl-C.
            return run_console(args, data_dir)
        return int(anyio.run(runners[args.command], args, data_dir))
    except UsageError as exc:
        print(f"nativemcp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (NativeMCPError, OSError) as exc:
        # What went wrong, in one line; the traceback is for bugs, not for these.
        print(f"nativemcp {args.command}: error: {exc}", file=sys.stderr)
        return 1
