"""The ``nativemcp`` command line.

``nativemcp demo`` runs the main job (see `nativemcp.proxy.cli._demo`). The content-store
verbs (``ingest``, ``search``, ``stores``, ``list``, ``read``, ``delete``) and the
generic ``call SERVER TOOL --args JSON`` live in `nativemcp.proxy.cli._content`,
``tools`` in `_tools`, ``auth login|logout|status`` in `_auth`, ``serve`` and
``console`` in `_serve` and `_console`. Every verb
that starts servers takes the pool options of `_pool_options` (``--data-dir``,
``--workspace``, ``--mcp-config``, ``--database-url``) and names servers by the one rule
of `_servers`. What goes wrong is one line on stderr (`_errors`), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import anyio

from ._auth import add_auth_parser
from ._console import add_console_parser, run_console
from ._content import Runner, add_content_commands, confirm_delete
from ._errors import TYPED, did_you_mean, error_lines, in_typed_words
from ._pool_options import PoolOptions, check_database
from ._tools import add_tools_parser

__all__ = ["main"]


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Runner]]:
    """The parser (its default ``command_names``: every verb), and the runners of the
    verbs that have one."""
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
    demo.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="keep the content store and planning in this PostgreSQL database",
    )

    runners = add_content_commands(commands)
    runners["tools"] = add_tools_parser(commands)
    runners["auth"] = add_auth_parser(commands)
    from ._serve import add_serve_parser

    add_serve_parser(commands)
    add_console_parser(commands)
    parser.set_defaults(command_names=list(commands.choices))
    return parser, runners


def _unknown_command(commands: list[str], argv: Sequence[str]) -> str | None:
    """The error for a mistyped COMMAND (``srever``), with the one it is closest to;
    None when the first word is a command (or there is none: argparse says the rest).

    The options before COMMAND take no value, so the first word that is not an option
    is the command."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    if word is None or word in commands:
        return None
    return (
        f"nativemcp: error: unknown command {word!r}{did_you_mean(word, commands)}; "
        f"the commands are {', '.join(commands)} (nativemcp --help says what each does)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nativemcp`` console script; returns the exit status:
    0 done, 2 a mistake in what was typed, 1 anything else that failed."""
    parser, runners = _build_parser()
    commands = parser.get_default("command_names")
    unknown = _unknown_command(commands, sys.argv[1:] if argv is None else argv)
    if unknown is not None:
        print(unknown, file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    options: PoolOptions | None = None
    try:
        if args.command == "demo":
            return _demo(args)
        options = PoolOptions.from_args(args)
        if args.command == "serve":  # runs its own event loop (uvicorn's, over HTTP)
            from ._serve import run_serve

            return run_serve(args, options)
        if args.command == "console":
            # Not a runner: it binds its socket first and stops on Ctrl-C.
            return run_console(args, options)
        if args.command == "delete" and not confirm_delete(args, options):
            return 1
        return int(anyio.run(runners[args.command], args, options))
    except TYPED as exc:
        _say(args.command, [str(exc)], options)
        return 2
    except BrokenPipeError:
        # The reader left (`nativemcp tools | head`): stop quietly, and keep Python from
        # reporting the same broken pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        lines = error_lines(exc)
        if lines is None:
            raise  # a bug: its traceback is what a report needs
        _say(args.command, lines, options)
        return 1


def _say(command: str, lines: list[str], options: PoolOptions | None) -> None:
    """Print each line as ``nativemcp COMMAND: error: ...``, servers named as typed."""
    typed = options.typed if options is not None else {}
    for line in lines:
        line = in_typed_words(line, typed)
        if options is not None:
            line = options.pasteable(line)
        print(f"nativemcp {command}: error: {line}", file=sys.stderr)


def _demo(args: argparse.Namespace) -> int:
    from rich.console import Console

    from ._demo import run_demo

    url = PoolOptions.database_url_of(args)
    check_database(url)
    console = Console()
    if not console.is_terminal:
        # Piped or captured: wide enough for the side-by-side tables.
        console = Console(width=120)
    return int(anyio.run(run_demo, args.data_dir, console, url))
