"""The ``nativemcp`` command line.

``nativemcp demo`` runs the main job (see `nativemcp.proxy._demo`).
``nativemcp ingest PATH... [--store NAME]`` adds files (folders are walked) to a content
store, with a progress bar; ``nativemcp search QUERY [--store NAME]`` prints what a
model would read for that search. Both run the content store in a worker process,
through `WorkerPool`, on data kept in ``--data-dir`` (default: `default_data_dir`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import anyio
import msgspec

from nativemcp.protocol import ToolError, result_text

__all__ = ["DATA_DIR_ENV", "default_data_dir", "main"]

DATA_DIR_ENV: Final = "NATIVEMCP_DATA_DIR"
"""Environment variable that overrides the default data folder."""
DEFAULT_STORE: Final = "default"
"""The store `ingest` and `search` use when ``--store`` is not given."""
CONTENT_STORE: Final = "content-store"
_CALL_TIMEOUT: Final = 600.0
"""Seconds one file may take to parse and index (a 50 MB PDF is slow)."""


def default_data_dir() -> Path:
    """Where nativemcp keeps its data: ``$NATIVEMCP_DATA_DIR``, else the user data folder
    (``$XDG_DATA_HOME/nativemcp``, else ``~/.local/share/nativemcp``)."""
    explicit = os.environ.get(DATA_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "nativemcp"


def _add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"data folder (default: ${DATA_DIR_ENV}, else the user data folder)",
    )


def _build_parser() -> argparse.ArgumentParser:
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

    ingest = commands.add_parser("ingest", help="add files to a content store (folders are walked)")
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--store", default=DEFAULT_STORE, help="store name (created if new)")
    _add_data_dir(ingest)

    search = commands.add_parser("search", help="search a content store (BM25)")
    search.add_argument("query", nargs="+", metavar="QUERY")
    search.add_argument("--store", default=DEFAULT_STORE, help="store name")
    search.add_argument("--top", type=int, default=5, help="how many results (1-100)")
    search.add_argument(
        "--json", action="store_true", help="print the typed result as JSON, not the rich text"
    )
    _add_data_dir(search)
    return parser


def _walk(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    """``(file, found_in_a_folder)`` for ``paths``: folders walked in name order, hidden
    entries skipped; a named path is yielded as is (the store reports if it is missing)."""
    for path in paths:
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith("."):
                        yield Path(root) / name, True
        else:
            yield path, False


def _allowed_paths(given: Sequence[Path], files: Sequence[tuple[Path, bool]]) -> list[str]:
    """What the store may read: the paths the user typed, resolved, and any walked file
    that resolves outside them (a symlink in a given folder); the user chose them all."""
    roots = [os.path.realpath(path) for path in given]
    outside = {
        os.path.realpath(path)
        for path, _ in files
        if not any(_is_within(os.path.realpath(path), root) for root in roots)
    }
    return roots + sorted(outside)


def _is_within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


async def _find_store(store: Any, name: str) -> str | None:
    listing = await store.list_stores()
    for info in listing.stores:
        if info.name == name:
            return str(info.store_id)
    return None


@dataclass
class _Tally:
    added: int = 0
    duplicates: int = 0
    skipped: int = 0
    chunks: int = 0
    bytes: int = 0
    failed: list[tuple[Path, str]] = field(default_factory=list)


async def _ingest(args: argparse.Namespace, data_dir: Path) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from nativemcp.proxy import WorkerPool

    err = Console(stderr=True)
    files = [(path.resolve(), walked) for path, walked in _walk(args.paths)]
    if not files:
        err.print("[red]No files to ingest.[/red]")
        return 2
    tally = _Tally()
    started = time.perf_counter()
    options = {CONTENT_STORE: {"allowed_paths": _allowed_paths(args.paths, files)}}
    async with WorkerPool(
        data_dir=data_dir, builtins=[CONTENT_STORE], in_process=(), options=options
    ) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _find_store(store, args.store)
        if store_id is None:
            store_id = (await store.create_store(name=args.store)).store_id
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
        )
        with Progress(*columns, console=err, transient=False) as progress:
            task = progress.add_task("ingesting", total=len(files), detail="")

            for path, walked in files:
                progress.update(task, detail=path.name)

                def on_progress(
                    done: float, total: float | None, message: str | None, name: str = path.name
                ) -> None:
                    suffix = f" {int(done)}/{int(total)} chunks" if total else ""
                    progress.update(task, detail=f"{name}{suffix}")

                try:
                    added = await store.add_content(
                        store_id=store_id,
                        path=str(path),
                        on_progress=on_progress,
                        call_timeout=_CALL_TIMEOUT,
                    )
                except ToolError as exc:
                    code = (exc.structured_content or {}).get("code")
                    if walked and code == "UNSUPPORTED_TYPE":
                        # A folder holds images and archives too: pass over them quietly.
                        tally.skipped += 1
                    else:
                        tally.failed.append((path, exc.message))
                        progress.console.print(
                            f"[red]failed[/red] {escape(f'{path}: {exc.message}')}"
                        )
                else:
                    if added.duplicate:
                        tally.duplicates += 1
                    else:
                        tally.added += 1
                        tally.chunks += added.chunk_count
                        tally.bytes += added.size
                progress.advance(task)
    elapsed = time.perf_counter() - started
    print(
        f"Store {args.store!r} ({store_id}) in {data_dir}: {tally.added} added "
        f"({tally.chunks} chunks, {tally.bytes / 1e6:.2f} MB of text), "
        f"{tally.duplicates} already there, {tally.skipped} skipped (unsupported type), "
        f"{len(tally.failed)} failed, in {elapsed:.1f} s"
    )
    return 1 if tally.failed else 0


async def _search(args: argparse.Namespace, data_dir: Path) -> int:
    from nativemcp.proxy import WorkerPool

    query = " ".join(args.query)
    async with WorkerPool(data_dir=data_dir, builtins=[CONTENT_STORE], in_process=()) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _find_store(store, args.store)
        if store_id is None:
            names = [s.name for s in (await store.list_stores()).stores]
            known = ", ".join(names) or "none; add files with `nativemcp ingest`"
            print(f"No store named {args.store!r} in {data_dir} (stores: {known})", file=sys.stderr)
            return 2
        response = await store.call_tool(
            "keyword_similarity_search", {"store_id": store_id, "query": query, "top_n": args.top}
        )
    if response.error is not None:
        print(response.error.message, file=sys.stderr)
        return 2
    assert response.result is not None
    if response.result.is_error:
        print(result_text(response.result), file=sys.stderr)
        return 2
    if args.json:
        print(msgspec.json.encode(response.result.structured_content).decode())
    else:
        print(result_text(response.result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nativemcp`` console script; returns the exit status."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        from rich.console import Console

        from ._demo import run_demo

        console = Console()
        if not console.is_terminal:
            # Piped or captured: wide enough for the side-by-side tables.
            console = Console(width=120)
        return anyio.run(run_demo, args.data_dir, console)
    data_dir = (args.data_dir or default_data_dir()).expanduser()
    if args.command == "ingest":
        return anyio.run(_ingest, args, data_dir)
    if args.command == "search":
        return anyio.run(_search, args, data_dir)
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover - argparse checks


if __name__ == "__main__":
    sys.exit(main())
