"""The ``nativemcp`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nativemcp",
        description=(
            "Run MCP tool servers in worker processes: exact typed values for code, "
            "rich text for LLMs."
        ),
    )
    parser.add_argument("--version", action="version", version=f"nativemcp {version('nativemcp')}")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nativemcp`` console script; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return 0  # pragma: no cover - every subcommand returns from its own handler


if __name__ == "__main__":
    sys.exit(main())
