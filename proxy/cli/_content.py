"""The content-store verbs of the command line, and the generic ``call``.

``ingest``, ``search``, ``stores``, ``list``, ``read`` and ``delete`` work on the
content store in a worker process, on data kept in ``--data-dir``; ``call SERVER TOOL``
calls any tool of a built-in server (or a ``module:attribute`` server) and prints what
the model would read. Every verb takes ``--json`` for the typed value instead of the
text. `add_content_commands` registers them on the parser of `_main`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from nativemcp.protocol import NativeMCPResponse, ToolError, result_text
from nativemcp.workers import DATABASE_URL_ENV, redact_url

from ._data_dir import DATA_DIR_ENV

__all__ = [
    "CONTENT_STORE",
    "DEFAULT_STORE",
    "add_content_commands",
    "add_database_url",
    "add_pool_options",
    "add_root_option",
    "external_servers",
]

DEFAULT_STORE: Final = "default"
"""The store the content verbs use when ``--store`` is not given."""
CONTENT_STORE: Final = "content-store"
_CALL_TIMEOUT: Final = 600.0
"""Seconds one file may take to parse and index (a 50 MB PDF is slow)."""

Runner = Callable[[argparse.Namespace, Path], Any]
"""An async verb: ``await run(args, data_dir)`` returns the exit status."""


class UsageError(Exception):
    """A mistake in what the user typed, said in their words (exit status 2)."""


def add_pool_options(parser: argparse.ArgumentParser) -> None:
    """The options every verb that opens a pool takes (the data folder, ...)."""
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"data folder (default: ${DATA_DIR_ENV}, else the user data folder)",
    )
    parser.add_argument(
        "--mcp-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="external MCP servers to start too: an mcp.json with mcpServers "
        "(as Claude Desktop, Cursor and VS Code write it)",
    )
    add_root_option(parser)
    add_database_url(parser)


def add_root_option(parser: argparse.ArgumentParser) -> None:
    """``--root DIR`` (repeatable): the folders external MCP servers may work in."""
    parser.add_argument(
        "--root",
        type=Path,
        action="append",
        default=None,
        metavar="DIR",
        help="a folder external MCP servers may work in (their MCP roots; repeatable)",
    )


def external_servers(args: argparse.Namespace) -> dict[str, Any]:
    """The pool's keyword arguments for ``--mcp-config`` and ``--root``."""
    return {"mcp_servers": args.mcp_config, "roots": args.root}


def add_database_url(parser: argparse.ArgumentParser) -> None:
    """``--database-url``: the content store and planning in a shared PostgreSQL database."""
    parser.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help=(
            "keep the content store and planning in this PostgreSQL database, shared "
            f"with other machines (default: ${DATABASE_URL_ENV}; unset: SQLite files in "
            "the data folder)"
        ),
    )


def _where(args: argparse.Namespace, data_dir: Path) -> str:
    """Where the state lives, for messages (a database URL without its password)."""
    url = args.database_url if args.database_url is not None else os.environ.get(DATABASE_URL_ENV)
    return redact_url(url) if url else str(data_dir)


def _bounded_int(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the typed value as JSON, not the text"
    )


def _add_store(parser: argparse.ArgumentParser, default: str | None = DEFAULT_STORE) -> None:
    parser.add_argument(
        "--store",
        default=default,
        help=f"store name or id (default: {default})" if default else "store name or id",
    )


def add_content_commands(commands: Any) -> dict[str, Runner]:
    """Add the content verbs and ``call`` to ``commands`` (an argparse subparsers
    object); returns each verb's runner by name."""
    ingest = commands.add_parser("ingest", help="add files to a content store (folders are walked)")
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--store", default=DEFAULT_STORE, help="store name (created if new)")
    _add_json(ingest)
    add_pool_options(ingest)

    search = commands.add_parser("search", help="search a content store (BM25)")
    search.add_argument("query", nargs="+", metavar="QUERY")
    _add_store(search)
    search.add_argument(
        "--top", type=_bounded_int(1, 100), default=5, help="how many results (1-100)"
    )
    _add_json(search)
    add_pool_options(search)

    stores = commands.add_parser("stores", help="list the content stores")
    _add_json(stores)
    add_pool_options(stores)

    listing = commands.add_parser("list", help="list the files of a content store")
    _add_store(listing)
    listing.add_argument("--offset", type=_bounded_int(0, 10**9), default=0, help="skip this many")
    listing.add_argument(
        "--limit", type=_bounded_int(1, 100), default=50, help="how many (1-100, default 50)"
    )
    _add_json(listing)
    add_pool_options(listing)

    read = commands.add_parser("read", help="read lines of a stored file")
    read.add_argument(
        "content_id", metavar="CONTENT", help="a content id (as `list` shows it) or a file name"
    )
    _add_store(read)
    read.add_argument("--from", dest="from_line", type=_bounded_int(1, 10**9), default=1)
    read.add_argument("--to", dest="to_line", type=_bounded_int(1, 10**9), default=None)
    _add_json(read)
    add_pool_options(read)

    delete = commands.add_parser(
        "delete", help="delete a file from a store, or (no CONTENT) the whole store"
    )
    delete.add_argument(
        "content_id", nargs="?", metavar="CONTENT", help="a content id or a file name"
    )
    _add_store(delete, default=None)
    _add_json(delete)
    add_pool_options(delete)

    call = commands.add_parser(
        "call", help="call any tool: prints the text a model reads (--json: the value)"
    )
    call.add_argument("server", metavar="SERVER", help="a built-in name or module:attribute")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments, a JSON object")
    _add_json(call)
    add_pool_options(call)

    return {
        "ingest": _ingest,
        "search": _search,
        "stores": _stores,
        "list": _list,
        "read": _read,
        "delete": _delete,
        "call": _call,
    }


# -- helpers ---------------------------------------------------------------------------


def _print_json(value: Any) -> None:
    print(msgspec.json.encode(value).decode())


def _content_pool(
    args: argparse.Namespace, data_dir: Path, options: dict[str, Any] | None = None
) -> Any:
    from nativemcp.proxy import WorkerPool

    return WorkerPool(
        data_dir=data_dir,
        database_url=args.database_url,
        builtins=[CONTENT_STORE],
        in_process=(),
        options={CONTENT_STORE: options} if options else None,
        **external_servers(args),
    )


async def _find_store(store: Any, name_or_id: str) -> str | None:
    listing = await store.list_stores()
    for info in listing.stores:
        if name_or_id in (info.name, info.store_id):
            return str(info.store_id)
    return None


async def _require_store(store: Any, name_or_id: str, where: str) -> str:
    store_id = await _find_store(store, name_or_id)
    if store_id is None:
        names = [s.name for s in (await store.list_stores()).stores]
        known = ", ".join(names) or "none; add files with `nativemcp ingest`"
        raise UsageError(f"no store named {name_or_id!r} in {where} (stores: {known})")
    return store_id


async def _resolve_content(store: Any, store_id: str, name_or_id: str) -> str:
    """The content id for a content id or a file name in the store (the first file of
    that name); unknown, it is passed on as given, for the tool to report."""
    offset = 0
    while True:
        page = await store.list_content(store_id=store_id, offset=offset, limit=100)
        for item in page.contents:
            if name_or_id in (item.content_id, item.filename):
                return str(item.content_id)
        if not page.has_more:
            return name_or_id
        offset += len(page.contents)


def _show(response: NativeMCPResponse[Any], as_json: bool) -> int:
    """Print a tool's text (or its value with ``as_json``); an error goes to stderr."""
    if response.error is not None:
        print(f"nativemcp: error: {response.error.message}", file=sys.stderr)
        return 1
    assert response.result is not None
    if response.result.is_error:
        print(result_text(response.result), file=sys.stderr)
        return 1
    if as_json:
        value = response.structured_result
        if value is None:
            value = response.result.structured_content
        if value is None:
            value = result_text(response.result)
        _print_json(value)
    else:
        print(result_text(response.result))
    return 0


# -- verbs ------------------------------------------------------------------------------


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


@dataclass
class _Tally:
    store: str
    store_id: str | None = None
    added: int = 0
    duplicates: int = 0
    chunks: int = 0
    bytes: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


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

    err = Console(stderr=True)
    files = [(path.resolve(), walked) for path, walked in _walk(args.paths)]
    if not files:
        raise UsageError("no files to ingest in " + ", ".join(map(str, args.paths)))
    tally = _Tally(store=args.store)
    started = time.perf_counter()
    async with _content_pool(
        args, data_dir, {"allowed_paths": _allowed_paths(args.paths, files)}
    ) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _find_store(store, args.store)
        created = store_id is None
        if store_id is None:
            store_id = (await store.create_store(name=args.store)).store_id
        tally.store_id = store_id
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
        )
        # A redirected stderr (a log file, CI) gets the per-file lines, not a bar's frames.
        with Progress(*columns, console=err, disable=not err.is_terminal) as progress:
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
                        # A folder holds images and archives too: pass over them, by name.
                        tally.skipped.append((str(path), exc.message))
                        progress.console.print(
                            f"[yellow]skipped[/yellow] {escape(str(path))} (unsupported type)",
                            soft_wrap=True,
                        )
                    else:
                        tally.failed.append((str(path), exc.message))
                        progress.console.print(
                            f"[red]failed[/red] {escape(f'{path}: {exc.message}')}",
                            soft_wrap=True,
                        )
                else:
                    if added.duplicate:
                        tally.duplicates += 1
                    else:
                        tally.added += 1
                        tally.chunks += added.chunk_count
                        tally.bytes += added.size
                progress.advance(task)
        if created and tally.added == 0:
            # Nothing went in: leave no empty store behind.
            await store.delete_store(store_id=store_id)
            tally.store_id = None
    elapsed = time.perf_counter() - started
    if args.json:
        _print_json(asdict(tally))
    else:
        where = f"Store {args.store!r} ({tally.store_id})" if tally.store_id else "No store"
        print(
            f"{where} in {_where(args, data_dir)}: {tally.added} added "
            f"({tally.chunks} chunks, {tally.bytes / 1e6:.2f} MB of text), "
            f"{tally.duplicates} already there, {len(tally.skipped)} skipped "
            f"(unsupported type), {len(tally.failed)} failed, in {elapsed:.1f} s"
        )
    return 1 if tally.failed else 0


async def _search(args: argparse.Namespace, data_dir: Path) -> int:
    query = " ".join(args.query)
    async with _content_pool(args, data_dir) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, _where(args, data_dir))
        response = await store.call_tool(
            "keyword_similarity_search", {"store_id": store_id, "query": query, "top_n": args.top}
        )
    return _show(response, args.json)


async def _stores(args: argparse.Namespace, data_dir: Path) -> int:
    async with _content_pool(args, data_dir) as pool:
        response = await pool.server(CONTENT_STORE).call_tool("list_stores", {})
    return _show(response, args.json)


async def _list(args: argparse.Namespace, data_dir: Path) -> int:
    async with _content_pool(args, data_dir) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, _where(args, data_dir))
        response = await store.call_tool(
            "list_content", {"store_id": store_id, "offset": args.offset, "limit": args.limit}
        )
    return _show(response, args.json)


async def _read(args: argparse.Namespace, data_dir: Path) -> int:
    if args.to_line is not None and args.to_line < args.from_line:
        raise UsageError(f"--to {args.to_line} is before --from {args.from_line}")
    async with _content_pool(args, data_dir) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, _where(args, data_dir))
        arguments: dict[str, Any] = {
            "store_id": store_id,
            "content_id": await _resolve_content(store, store_id, args.content_id),
            "from_line": args.from_line,
        }
        if args.to_line is not None:
            arguments["to_line"] = args.to_line
        response = await store.call_tool("read_content", arguments)
    return _show(response, args.json)


async def _delete(args: argparse.Namespace, data_dir: Path) -> int:
    if args.store is None:
        raise UsageError(
            "say which store: `delete CONTENT --store NAME` removes a file, "
            "`delete --store NAME` the whole store"
        )
    async with _content_pool(args, data_dir) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, _where(args, data_dir))
        if args.content_id is None:
            response = await store.call_tool("delete_store", {"store_id": store_id})
        else:
            content_id = await _resolve_content(store, store_id, args.content_id)
            response = await store.call_tool(
                "delete_content", {"store_id": store_id, "content_id": content_id}
            )
    return _show(response, args.json)


async def _call(args: argparse.Namespace, data_dir: Path) -> int:
    from nativemcp.proxy import WorkerPool
    from nativemcp.workers import BUILTIN_SERVERS

    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--args is not JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(arguments, dict):
        raise UsageError(f"--args must be a JSON object, got {type(arguments).__name__}")
    external = external_servers(args)
    if args.server in BUILTIN_SERVERS:
        pool = WorkerPool(
            data_dir=data_dir,
            builtins=[args.server],
            **external,
            database_url=args.database_url,
        )
        name = args.server
    elif ":" in args.server:
        # As `python -m` does: a module in the current folder can be named.
        sys.path.insert(0, os.getcwd())
        pool = WorkerPool(
            [args.server],
            data_dir=data_dir,
            builtins=[],
            **external,
            database_url=args.database_url,
        )
        name = None
    elif args.mcp_config is not None:
        pool = WorkerPool(data_dir=data_dir, builtins=[], **external)
        name = args.server  # a server of the --mcp-config file
    else:
        raise UsageError(
            f"no server {args.server!r}: give a built-in ({', '.join(BUILTIN_SERVERS)}), "
            "module:attribute, or a server of --mcp-config FILE"
        )
    async with pool:
        response = await pool.server(name or pool.names[0]).call_tool(args.tool, arguments)
    return _show(response, args.json)
