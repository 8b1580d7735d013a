"""``nativemcp demo``: the content store and the planning server in worker processes,
on a bundled multilingual sample corpus, showing for each call what the LLM reads and
what the application gets, with the payload cost of each.
"""

from __future__ import annotations

import importlib.resources
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

import msgspec
from rich.console import Console, Group
from rich.panel import Panel
from rich.pretty import Pretty
from rich.table import Table
from rich.text import Text

from nativemcp.protocol import NativeMCPResponse, result_text, unwrap

from ..llm._tokens import count_tokens, token_note

__all__ = ["run_demo"]

SAMPLES_PACKAGE: Final = "nativemcp.workers.content_store"
DEMO_CHUNKS: Final = {"chunk_max_lines": 4, "chunk_overlap_lines": 1}
"""Small chunks for the small sample files, so search hits show exact line ranges."""
SEARCHES: Final = [
    ("학교", "Korean stem: finds 학교에서 (particle attached)"),
    ("図書館", "Japanese word inside a kanji/kana run"),
    ("北京", "Chinese"),
    ("muller", "accents folded: finds Müller"),
    ("vanillesosse", "ß folded to ss: finds Vanillesoße"),
    ("muller pizza", "one term of two: relevance ≤ 0.5"),
    ("search index", "English, two terms"),
    ('NOT "vanilla" OR (', "FTS5 syntax is plain text: no error"),
]


class _Call(msgspec.Struct):
    label: str
    text: str
    value: Any
    elapsed_ms: float

    @property
    def text_bytes(self) -> int:
        return len(self.text.encode())

    @property
    def json(self) -> str:
        return msgspec.json.encode(self.value).decode()


async def _call(
    proxy: Any, tool: str, args: dict[str, Any], type_: Any, label: str | None = None
) -> _Call:
    start = time.perf_counter()
    response: NativeMCPResponse[Any] = await proxy.call_tool(tool, args)
    elapsed = (time.perf_counter() - start) * 1e3
    value = unwrap(response, type_, tool=tool)
    assert response.result is not None
    return _Call(label or tool, result_text(response.result), value, elapsed)


def _side_by_side(console: Console, call: _Call) -> None:
    table = Table(expand=True, show_lines=False, title=Text(call.label, style="bold"))
    table.add_column(
        f"What the LLM reads — {call.text_bytes:,} bytes, ≈{count_tokens(call.text)} tokens",
        ratio=1,
    )
    table.add_column(
        f"What the app gets — {type(call.value).__name__}, "
        f"{len(call.json.encode()):,} bytes as JSON (≈{count_tokens(call.json)} tokens if sent)",
        ratio=1,
    )
    table.add_row(
        Text(call.text), Pretty(call.value, max_length=3, max_string=60, indent_guides=False)
    )
    console.print(table)


async def _ingest(store: Any, files: list[Path], console: Console) -> tuple[_Call, str]:
    """Create the samples' store and add every sample file; the create call and the
    store's id."""
    from nativemcp.workers.content_store import AddContentResult, StoreInfo

    created = await _call(store, "create_store", {"name": "samples"}, StoreInfo)
    store_id: str = created.value.store_id
    start = time.perf_counter()
    added: list[AddContentResult] = []
    for path in files:
        result = await _call(
            store,
            "add_content",
            {"store_id": store_id, "path": str(path)},
            AddContentResult,
        )
        added.append(result.value)
    console.print(
        f"[green]✓[/green] ingested {len(added)} sample files "
        f"({sum(a.size for a in added) / 1024:.1f} KB, "
        f"{sum(a.chunk_count for a in added)} chunks) in "
        f"{(time.perf_counter() - start) * 1e3:.0f} ms: " + ", ".join(a.filename for a in added)
    )
    return created, store_id


async def _search(store: Any, store_id: str, console: Console) -> list[_Call]:
    """Run the demo's searches and show their best hits in one table."""
    from nativemcp.workers.content_store import SearchResult

    rows: list[tuple[str, str, str, str, str]] = []
    searches: list[_Call] = []
    for query, why in SEARCHES:
        call = await _call(
            store,
            "keyword_similarity_search",
            {"store_id": store_id, "query": query, "top_n": 3},
            SearchResult,
            label=f'search "{query}"',
        )
        searches.append(call)
        hits = call.value.results
        best = (
            f"{hits[0].filename}:{hits[0].line_range[0]}-{hits[0].line_range[1]}"
            if hits
            else "(no match)"
        )
        score = f"{hits[0].score:.2f}" if hits else "-"
        rows.append((query, why, best, score, f"{call.elapsed_ms:.1f}"))
    overview = Table(title="searches (keyword_similarity_search, top 3)", expand=True)
    overview.add_column("query", ratio=1)
    overview.add_column("what it shows", ratio=2)
    # The hit's line range is the point of the table: never cut it, even on 80 columns.
    overview.add_column("best hit", no_wrap=True, min_width=max(len(r[2]) for r in rows))
    overview.add_column("rel.", justify="right", no_wrap=True)
    overview.add_column("ms", justify="right", no_wrap=True)
    for row in rows:
        overview.add_row(*row)
    console.print(overview)
    return searches


async def _plan(planning: Any) -> list[_Call]:
    """A goal, three todos and one of them done: the planning server's calls."""
    from nativemcp.workers.planning import PlanningState

    return [
        await _call(
            planning,
            "create_goal",
            {"goal": "Answer a question about the sample files"},
            PlanningState,
        ),
        await _call(planning, "add_todo", {"name": "search the store"}, PlanningState),
        await _call(planning, "add_todo", {"name": "read the matching lines"}, PlanningState),
        await _call(planning, "add_todo", {"name": "write the answer"}, PlanningState),
        await _call(planning, "mark_todo", {"id": 1}, PlanningState),
    ]


def _cost_table(calls: list[_Call]) -> Table:
    """The payload of each call: the LLM's text and the app's value, bytes and tokens."""
    cost = Table(title="payload per call: LLM text vs typed value", expand=True)
    for header in ("call", "LLM text bytes", "≈ tokens", "app JSON bytes", "≈ tokens", "ms"):
        cost.add_column(header, justify="left" if header == "call" else "right")
    for call in calls:
        cost.add_row(
            call.label,
            f"{call.text_bytes:,}",
            str(count_tokens(call.text)),
            f"{len(call.json.encode()):,}",
            str(count_tokens(call.json)),
            f"{call.elapsed_ms:.1f}",
        )
    return cost


async def run_demo(data_dir: Path | None, console: Console, database_url: str | None = None) -> int:
    """Run the demo; returns the exit status (``database_url``: see `WorkerPool`)."""
    from nativemcp.proxy import WorkerPool
    from nativemcp.workers.content_store import ListContentResult
    from nativemcp.workers.planning import PlanningState

    began = time.perf_counter()
    with ExitStack() as stack:
        temporary = data_dir is None
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nativemcp-")))
        samples = stack.enter_context(
            importlib.resources.as_file(importlib.resources.files(SAMPLES_PACKAGE) / "samples")
        )
        # An editable install (strict mode) links each file: read them where they are.
        files = sorted(p.resolve() for p in samples.iterdir() if p.is_file())
        folders = sorted({str(path.parent) for path in files})
        console.rule("[bold]nativemcp demo")
        if temporary:
            console.print("data folder: a temporary one, deleted when the demo ends (--data-dir)")
        else:
            console.print(f"data folder: {data_dir}")

        start = time.perf_counter()
        async with WorkerPool(
            data_dir=data_dir,
            builtins=["content-store", "planning"],
            in_process=(),
            options={"content-store": {**DEMO_CHUNKS, "allowed_paths": folders}},
            database_url=database_url,
        ) as pool:
            store = pool.server("content-store")
            planning = pool.server("planning")
            console.print(
                f"[green]✓[/green] started content-store and planning in worker processes "
                f"in {time.perf_counter() - start:.2f} s"
            )
            created, store_id = await _ingest(store, files, console)
            searches = await _search(store, store_id, console)
            listing = await _call(
                store, "list_content", {"store_id": store_id, "limit": 2}, ListContentResult
            )
            plan = await _plan(planning)
            state = await _call(planning, "get_current_state", {}, PlanningState)

        console.rule("[bold]one call, two readers")
        for call in (searches[0], listing, state):
            _side_by_side(console, call)
        console.print(_cost_table([created, *searches, listing, *plan, state]))
        console.print(Group(Text(token_note(), style="dim")))
        console.print(
            Panel.fit(
                f"done in {time.perf_counter() - began:.1f} s — try "
                "`nativemcp ingest PATH...` and `nativemcp search QUERY`",
                border_style="green",
            )
        )
    return 0
