"""The content store in a real worker process, through `WorkerPool`: typed calls,
durability across pool restarts, and a worker killed (SIGKILL) in the middle of
`add_content`.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import multiprocess
import pytest

from nativemcp.protocol import ToolError, result_text
from nativemcp.proxy import ServerCrashed, WorkerPool
from nativemcp.workers.content_store import (
    AddContentResult,
    ListContentResult,
    ReadContentResult,
    SearchResult,
    StoreInfo,
)

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


def store_pool(data_dir: Path, database_url: str | None) -> WorkerPool:
    return WorkerPool(
        data_dir=data_dir, database_url=database_url, builtins=["content-store"], in_process=()
    )


async def test_tools_return_typed_values_and_rich_text_through_a_worker(
    tmp_path: Path, database_url: str | None
) -> None:
    with anyio.fail_after(30):
        async with store_pool(tmp_path, database_url) as pool:
            store = pool.server("content-store")
            created = await store.create_store(name="문서", description="notes")
            assert isinstance(created, StoreInfo) and created.name == "문서"
            added = await store.add_content(
                store_id=created.store_id,
                content="첫 줄\n우리는 학교에서 공부했다\n셋째 줄",
                filename="notes.md",
            )
            assert isinstance(added, AddContentResult)
            assert (added.line_count, added.mime_type) == (3, "text/markdown")
            listing = await store.list_content(store_id=created.store_id)
            assert isinstance(listing, ListContentResult)
            assert listing.contents[0].filename == "notes.md" and not listing.has_more
            found = await store.keyword_similarity_search(store_id=created.store_id, query="학교")
            assert isinstance(found, SearchResult)
            assert found.results[0].line_range == (1, 3)
            read = await store.read_content(
                store_id=created.store_id, content_id=added.content_id, from_line=2, to_line=2
            )
            assert (
                isinstance(read, ReadContentResult) and read.content == "우리는 학교에서 공부했다"
            )

            raw = await store.call_tool(
                "keyword_similarity_search", {"store_id": created.store_id, "query": "학교"}
            )
            assert raw.result is not None
            text = result_text(raw.result)
            assert "notes.md:1-3" in text and "**학교**" in text and added.content_id in text
            assert raw.result.structured_content is not None
            assert raw.result.structured_content["results"][0]["lineRange"] == [1, 3]

            with pytest.raises(ToolError) as caught:
                await store.read_content(store_id=created.store_id, content_id="ct_missing")
            assert "ct_missing" in caught.value.message
            assert (await store.list_stores()).total == 1  # the worker keeps serving


async def test_stores_contents_and_search_survive_closing_and_reopening_the_pool(
    tmp_path: Path,
    database_url: str | None,
) -> None:
    with anyio.fail_after(30):
        async with store_pool(tmp_path, database_url) as pool:
            store = pool.server("content-store")
            created = await store.create_store(name="durable")
            added = await store.add_content(
                store_id=created.store_id, content="東京都庁の展望台\nMüller", filename="a.txt"
            )
        async with store_pool(tmp_path, database_url) as pool:
            store = pool.server("content-store")
            stores = await store.list_stores()
            assert [s.store_id for s in stores.stores] == [created.store_id]
            listing = await store.list_content(store_id=created.store_id)
            assert [c.content_id for c in listing.contents] == [added.content_id]
            for query in ("都庁", "muller"):
                found = await store.keyword_similarity_search(
                    store_id=created.store_id, query=query
                )
                assert [hit.content_id for hit in found.results] == [added.content_id]


def _stored_chunks(data_dir: Path, database_url: str | None) -> dict[str, tuple[int, int, int]]:
    """Per content id: the chunk count its row claims, its chunk rows and its index rows,
    read from the database file (or the PostgreSQL tables) itself."""
    import sqlite3

    if database_url is not None:
        import psycopg

        with psycopg.connect(database_url) as conn:
            rows = conn.execute(
                "SELECT ct.id, ct.chunk_count,"
                " (SELECT count(*) FROM cs_chunks c WHERE c.content_rid = ct.rid),"
                # Indexed: pending (searched from its text) or in a sealed block.
                " (SELECT count(*) FROM cs_chunks c JOIN cs_stores s ON s.rid = c.store_rid"
                "  WHERE c.content_rid = ct.rid AND (c.id > s.merged OR EXISTS (SELECT 1"
                "  FROM cs_blocks b WHERE b.store_rid = c.store_rid AND c.id BETWEEN b.lo"
                "  AND b.hi)))"
                " FROM cs_contents ct"
            ).fetchall()
        return {
            content_id: (claimed, chunks, indexed) for content_id, claimed, chunks, indexed in rows
        }

    db = sqlite3.connect(data_dir / "content-store" / "content.sqlite3")
    try:
        out: dict[str, tuple[int, int, int]] = {}
        for content_id, rid, claimed, store_rid in db.execute(
            "SELECT ct.id, ct.rid, ct.chunk_count, s.rid FROM contents ct"
            " JOIN stores s ON s.id = ct.store_id"
        ).fetchall():
            (chunks,) = db.execute(
                "SELECT count(*) FROM chunks WHERE content_rid = ?", (rid,)
            ).fetchone()
            (indexed,) = db.execute(
                f"SELECT count(*) FROM fts_{store_rid} WHERE rowid IN"
                " (SELECT id FROM chunks WHERE content_rid = ?)",
                (rid,),
            ).fetchone()
            out[content_id] = (claimed, chunks, indexed)
        return out
    finally:
        db.close()


@pytest.mark.parametrize("kill_at", ["first batch", "last batch"])
async def test_a_worker_killed_during_add_content_leaves_it_whole_or_absent(
    tmp_path: Path, kill_at: str, database_url: str | None
) -> None:
    lines = 200_000
    text = "\n".join(f"line {n} of the big file with some words" for n in range(lines))
    with anyio.fail_after(240):
        async with store_pool(tmp_path, database_url) as pool:
            store = pool.server("content-store")
            created = await store.create_store(name="crash")
            (worker,) = multiprocess.active_children()
            killed = anyio.Event()

            def on_progress(progress: float, total: float | None, message: str | None) -> None:
                # Kill while chunks are being written: after the first batch, or after
                # the last (when everything is written but perhaps not committed).
                due = progress > 0 if kill_at == "first batch" else progress == total
                if total and due and not killed.is_set():
                    os.kill(worker.pid, signal.SIGKILL)
                    killed.set()

            with pytest.raises(ServerCrashed):
                await store.add_content(
                    store_id=created.store_id,
                    content=text,
                    filename="big.txt",
                    on_progress=on_progress,
                )
            assert killed.is_set()
            # Whole or absent, checked in the file: every chunk the row claims is
            # stored and indexed, or there is no row (and no orphan chunk) at all.
            stored = await anyio.to_thread.run_sync(_stored_chunks, tmp_path, database_url)
            for claimed, chunks, indexed in stored.values():
                assert claimed == chunks == indexed
            listing = await store.list_content(store_id=created.store_id)
            assert [c.line_count for c in listing.contents] in ([], [lines])
            # 200,000 lines: a minute or more into PostgreSQL on a loaded machine.
            again = await store.add_content(
                store_id=created.store_id, content=text, filename="big.txt", call_timeout=200
            )
            assert again.line_count == lines
            found = await store.keyword_similarity_search(store_id=created.store_id, query="199999")
            assert found.results[0].line_range[0] <= lines <= found.results[0].line_range[1]
            stored = await anyio.to_thread.run_sync(_stored_chunks, tmp_path, database_url)
            assert [
                claimed == chunks == indexed > 0 for claimed, chunks, indexed in stored.values()
            ] == [True]


async def test_paging_hostile_queries_and_service_context_through_a_worker(
    tmp_path: Path,
    database_url: str | None,
) -> None:
    with anyio.fail_after(60):
        async with store_pool(tmp_path, database_url) as pool:
            store = pool.server("content-store")
            await store.switch_context("session-a", None)
            created = await store.create_store(name="many")
            for n in range(130):
                await store.add_content(
                    store_id=created.store_id, content=f"note {n} 東京", filename=f"n{n}.txt"
                )
            first = await store.list_content(store_id=created.store_id, limit=100)
            rest = await store.list_content(store_id=created.store_id, offset=100, limit=100)
            assert (first.total, len(first.contents), first.has_more) == (130, 100, True)
            assert (len(rest.contents), rest.has_more) == (30, False)
            names = [c.filename for c in first.contents + rest.contents]
            assert names == [f"n{n}.txt" for n in range(130)]
            for query in ['"', "NEAR(a b)", "content:*", "x AND", "\x00", "^東京"]:
                await store.keyword_similarity_search(store_id=created.store_id, query=query)
            context = await store.get_service_context()
            assert created.store_id in context and "n129.txt" not in context  # capped at 100
            assert "more: use list_content" in context
