"""The content-store verbs of the command line, and the generic ``call``.

``ingest``, ``search``, ``stores``, ``list``, ``read`` and ``delete`` work on the
content store in a worker process, on data kept in ``--data-dir``, and print the
store's text with its next steps as ``nativemcp`` commands (`CommandSteps`);
``call SERVER TOOL`` calls any tool of any server and prints what the model would read.
Every verb takes ``--json`` for the typed value instead of the text.
`add_content_commands` registers them on the parser of `_main`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from nativemcp.protocol import (
    INVALID_PARAMS,
    BackendType,
    NativeMCPResponse,
    ToolError,
    quoted_name,
    result_text,
)
from nativemcp.workers.content_store import render_text

from ._errors import CallFailed, UsageError, did_you_mean
from ._next_steps import CommandSteps
from ._pool_options import PoolOptions, pool_options_parser
from ._servers import ServerChoice, resolve_servers

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = [
    "CONTENT_STORE",
    "DEFAULT_STORE",
    "add_allow_lists",
    "add_content_commands",
    "confirm_delete",
]

DEFAULT_STORE: Final = "default"
"""The store the content verbs use when ``--store`` is not given."""
CONTENT_STORE: Final = "content-store"
_CALL_TIMEOUT: Final = 600.0
"""Seconds one file may take to parse and index (a 50 MB PDF is slow)."""

Runner = Callable[[argparse.Namespace, PoolOptions], Any]
"""An async verb: ``await run(args, options)`` returns the exit status."""

_CONTENT: Final = ServerChoice(builtins=(CONTENT_STORE,))


def add_allow_lists(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """``--allow-host`` and ``--allow-origin``: the DNS-rebinding allow-lists of a local
    HTTP server (``prefix`` starts each help line)."""
    lists = [
        ("--allow-host", "HOST[:PORT]", "Host header too (DNS-rebinding allow-list; repeatable)"),
        ("--allow-origin", "ORIGIN", "Origin header too (repeatable)"),
    ]
    for flag, metavar, what in lists:
        parser.add_argument(
            flag, action="append", default=[], metavar=metavar, help=f"{prefix}accept this {what}"
        )


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
    pool = [pool_options_parser()]
    ingest = commands.add_parser(
        "ingest", parents=pool, help="add files to a content store (folders are walked)"
    )
    ingest.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    ingest.add_argument("--store", default=DEFAULT_STORE, help="store name (created if new)")
    _add_json(ingest)

    search = commands.add_parser("search", parents=pool, help="search a content store (BM25)")
    search.add_argument("query", nargs="+", metavar="QUERY")
    _add_store(search)
    search.add_argument(
        "--top", type=_bounded_int(1, 100), default=5, help="how many results (1-100)"
    )
    _add_json(search)

    stores = commands.add_parser("stores", parents=pool, help="list the content stores")
    _add_json(stores)

    listing = commands.add_parser("list", parents=pool, help="list the files of a content store")
    _add_store(listing)
    listing.add_argument("--offset", type=_bounded_int(0, 10**9), default=0, help="skip this many")
    listing.add_argument(
        "--limit", type=_bounded_int(1, 100), default=50, help="how many (1-100, default 50)"
    )
    _add_json(listing)

    read = commands.add_parser("read", parents=pool, help="read lines of a stored file")
    read.add_argument(
        "content_id", metavar="CONTENT", help="a content id (as `list` shows it) or a file name"
    )
    _add_store(read)
    read.add_argument("--from", dest="from_line", type=_bounded_int(1, 10**9), default=1)
    read.add_argument("--to", dest="to_line", type=_bounded_int(1, 10**9), default=None)
    _add_json(read)

    delete = commands.add_parser(
        "delete",
        parents=pool,
        help="delete a file from a store, or (no CONTENT) the whole store",
    )
    delete.add_argument(
        "content_id", nargs="?", metavar="CONTENT", help="a content id or a file name"
    )
    _add_store(delete, default=None)
    delete.add_argument(
        "--yes",
        action="store_true",
        help="delete a whole store without asking (required when not on a terminal)",
    )
    _add_json(delete)

    call = commands.add_parser(
        "call",
        parents=pool,
        help="call any tool: prints the text a model reads (--json: the value)",
    )
    call.add_argument(
        "server",
        metavar="SERVER",
        help="a built-in name, module:attribute, path/to/file.py:attribute, "
        "or a server of --mcp-config",
    )
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("--args", default="{}", metavar="JSON", help="the arguments, a JSON object")
    _add_json(call)

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


def _content_pool(options: PoolOptions, server_options: dict[str, Any] | None = None) -> Any:
    """The content store's pool (``server_options``: the store's own options)."""
    return options.pool(
        _CONTENT,
        in_process=(),
        options={CONTENT_STORE: server_options} if server_options else None,
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


async def _resolve_content(store: Any, store_id: str, name_or_id: str, store_name: str) -> str:
    """The content id for a content id or a file name in the store (the first file of
    that name).

    Raises:
        UsageError: no file of the store has that id or name.
    """
    offset = 0
    while True:
        page = await store.list_content(store_id=store_id, offset=offset, limit=100)
        for item in page.contents:
            if name_or_id in (item.content_id, item.filename):
                return str(item.content_id)
        if not page.has_more:
            raise UsageError(
                f"no file {name_or_id!r} in store {store_name!r} "
                f"(see them with `nativemcp list --store {shlex.quote(store_name)}`)"
            )
        offset += len(page.contents)


def _print(value: Any, args: argparse.Namespace) -> int:
    """Print a content verb's result: its text with the next steps as ``nativemcp``
    commands, or with ``--json`` the typed value."""
    if args.json:
        _print_json(value)
    else:
        store = getattr(args, "store", None) or "NAME"  # `stores` names none
        print(render_text(value, CommandSteps(store, args.data_dir)))
    return 0


def _show(
    response: NativeMCPResponse[Any], as_json: bool, server: str, tool: str, options: PoolOptions
) -> int:
    """Print a tool's text (or its value with ``as_json``); an error goes to stderr.

    Raises:
        UsageError: the server refused the tool's name or arguments (invalid params).
        CallFailed: the call failed otherwise (the server broke, timed out...).
    """
    if response.error is not None:
        message = response.error.message
        if response.error.code == INVALID_PARAMS:
            listing = options.command("tools", server)
            raise UsageError(f"{message} (`{listing}` lists its tools and their arguments)")
        raise CallFailed(message)
    assert response.result is not None
    if response.result.is_error:
        # The tool's own words, written for a model: kept whole, lines and all (a login
        # hint made a command to paste).
        text = options.pasteable(result_text(response.result))
        print(f"nativemcp call: error: tool {tool!r} failed: {text}", file=sys.stderr)
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


async def _ingest(args: argparse.Namespace, options: PoolOptions) -> int:
    from rich.console import Console
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
    async with _content_pool(options, {"allowed_paths": _allowed_paths(args.paths, files)}) as pool:
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
                await _add_file(store, store_id, path, walked, progress, task, tally)
        if created and tally.added == 0:
            # Nothing went in: leave no empty store behind.
            await store.delete_store(store_id=store_id)
            tally.store_id = None
    _report(tally, time.perf_counter() - started, args.json, options.where)
    return 1 if tally.failed else 0


async def _add_file(
    store: Any,
    store_id: str,
    path: Path,
    walked: bool,
    progress: Progress,
    task: TaskID,
    tally: _Tally,
) -> None:
    """Add one file to the store, counted in ``tally``: added, a duplicate, skipped (an
    unsupported type found by walking a folder) or failed, each failure shown."""
    from rich.markup import escape

    progress.update(task, detail=path.name)

    def on_progress(done: float, total: float | None, message: str | None) -> None:
        suffix = f" {int(done)}/{int(total)} chunks" if total else ""
        progress.update(task, detail=f"{path.name}{suffix}")

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


def _report(tally: _Tally, elapsed: float, as_json: bool, where: str) -> None:
    """What an ingest did: the tally as JSON, or one line for a person."""
    if as_json:
        _print_json(asdict(tally))
    else:
        stored = f"Store {tally.store!r} ({tally.store_id})" if tally.store_id else "No store"
        print(
            f"{stored} in {where}: {tally.added} added "
            f"({tally.chunks} chunk{'' if tally.chunks == 1 else 's'}, "
            f"{tally.bytes / 1e6:.2f} MB of text), "
            f"{tally.duplicates} already there, {len(tally.skipped)} skipped "
            f"(unsupported type), {len(tally.failed)} failed, in {elapsed:.1f} s"
        )


async def _search(args: argparse.Namespace, options: PoolOptions) -> int:
    query = " ".join(args.query)
    async with _content_pool(options) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, options.where)
        found = await store.keyword_similarity_search(
            store_id=store_id, query=query, top_n=args.top
        )
    return _print(found, args)


async def _stores(args: argparse.Namespace, options: PoolOptions) -> int:
    async with _content_pool(options) as pool:
        stores = await pool.server(CONTENT_STORE).list_stores()
    return _print(stores, args)


async def _list(args: argparse.Namespace, options: PoolOptions) -> int:
    async with _content_pool(options) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, options.where)
        listing = await store.list_content(store_id=store_id, offset=args.offset, limit=args.limit)
    return _print(listing, args)


async def _read(args: argparse.Namespace, options: PoolOptions) -> int:
    if args.to_line is not None and args.to_line < args.from_line:
        raise UsageError(f"--to {args.to_line} is before --from {args.from_line}")
    async with _content_pool(options) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, options.where)
        content_id = await _resolve_content(store, store_id, args.content_id, args.store)
        lines = await store.read_content(
            store_id=store_id,
            content_id=content_id,
            from_line=args.from_line,
            to_line=args.to_line,
        )
    return _print(lines, args)


def confirm_delete(args: argparse.Namespace, options: PoolOptions) -> bool:
    """Before ``delete`` opens the store: whether to go on. Deleting a whole store asks
    on a terminal (yes or no) and, without one, needs ``--yes``; a file goes at once.

    Raises:
        UsageError: no ``--store``, or a whole store without a terminal nor ``--yes``.
    """
    if args.store is None:
        raise UsageError(
            "say which store: `delete CONTENT --store NAME` removes a file, "
            "`delete --store NAME` the whole store"
        )
    if args.content_id is not None or args.yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(
            f"deleting the whole store {args.store!r} needs --yes when no terminal can "
            "ask; nothing was deleted"
        )
    # The question goes to stderr, so stdout keeps only the result (for --json).
    print(
        f"Delete store {args.store!r} and every file in it ({options.where})? [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    if sys.stdin.readline().strip().lower() in ("y", "yes"):
        return True
    print("Nothing deleted.", file=sys.stderr)
    return False


async def _delete(args: argparse.Namespace, options: PoolOptions) -> int:
    async with _content_pool(options) as pool:
        store = pool.server(CONTENT_STORE)
        store_id = await _require_store(store, args.store, options.where)
        if args.content_id is None:
            deleted = await store.delete_store(store_id=store_id)
        else:
            content_id = await _resolve_content(store, store_id, args.content_id, args.store)
            deleted = await store.delete_content(store_id=store_id, content_id=content_id)
    return _print(deleted, args)


async def _call(args: argparse.Namespace, options: PoolOptions) -> int:
    try:
        arguments = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--args is not JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(arguments, dict):
        raise UsageError(f"--args must be a JSON object, got {type(arguments).__name__}")
    choice = resolve_servers([args.server], mcp_config=options.mcp_config is not None)
    async with options.pool(choice) as pool:
        [name] = choice.names(pool.names)
        _check_external_tool(pool, name, args.server, args.tool, options)
        response = await pool.server(name).call_tool(args.tool, arguments)
    return _show(response, args.json, args.server, args.tool, options)


def _check_external_tool(pool: Any, name: str, typed: str, tool: str, options: PoolOptions) -> None:
    """An external server's unknown tool, said as a worker says it (the available tools)
    with the nearest name; a server waiting for authorization is left to say so.

    Raises:
        UsageError: ``tool`` is not one the external server listed.
    """
    server = pool.server(name)
    if server.backend != BackendType.EXTERNAL_MCP or name in pool.needs_authorization:
        return
    names = [listed.name for listed in server.tools]
    if tool in names:
        return
    listing = options.command("tools", typed)
    raise UsageError(
        f"Unknown tool {quoted_name(tool)} on server {name!r}{did_you_mean(tool, names)}; "
        f"available tools: {', '.join(names) or '(none)'} "
        f"(`{listing}` lists them and their arguments)"
    )
