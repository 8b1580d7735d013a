"""Merging a store's index once writes stop (`IndexMerger`): on a real SQLite file, the
segments become one and every search finds what it found before; the merger's own rules
(idle time, steps, pauses, closing, a failing step) with a scripted step."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from nativemcp.workers.content_store._chunking import chunk_lines, split_lines
from nativemcp.workers.content_store._db import ContentDB, NewContent
from nativemcp.workers.content_store._merging import REWRITE_SHARE, IndexMerger

QUERIES = ["alpha3", "beta7 word4", "line 12", "gamma"]


def _add(db: ContentDB, store_id: str, number: int, lines: int = 40) -> None:
    text = "\n".join(
        f"line {j} word{number} alpha{j % 7} beta{(number * j) % 11}" for j in range(lines)
    )
    chunks = chunk_lines(split_lines(text))
    db.add_content(
        store_id, NewContent(f"f{number}.txt", "text/plain", text, f"{number:064d}", lines, chunks)
    )


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """An SQLite varint at ``at``: its value and where the next one starts."""
    value = 0
    for offset in range(9):
        byte = data[at + offset]
        if offset == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + offset + 1
    raise AssertionError("unreachable")


def _segments(path: Path) -> int:
    """How many segments (b-trees) the first store's index is made of: from FTS5's
    structure record (row 10 of its data table: a 4-byte cookie, then varints for the
    number of levels and of segments)."""
    with sqlite3.connect(path) as conn:
        block = conn.execute("SELECT block FROM fts_1_data WHERE id = 10").fetchone()[0]
    conn.close()
    _, at = _varint(block, 4)
    return _varint(block, at)[0]


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _results(db: ContentDB, store_id: str) -> list[list[tuple[str, float]]]:
    found = []
    for query in QUERIES:
        hits = db.search(store_id, query, 10, None)
        assert hits is not None
        found.append([(hit.chunk_id, hit.raw_score) for hit in hits])
    return found


@pytest.fixture
def db(tmp_path: Path) -> Iterator[ContentDB]:
    database = ContentDB(tmp_path / "content.sqlite3", merge_idle=0.05)
    yield database
    database.close()


def test_a_store_written_many_times_is_merged_into_one_segment_once_writes_stop(
    db: ContentDB,
) -> None:
    store = db.create_store("s", None, None)
    for number in range(30):
        _add(db, store.store_id, number)
    before = _results(db, store.store_id)
    assert _segments(db.path) > 1

    _wait_for(lambda: _segments(db.path) == 1)
    after = _results(db, store.store_id)
    for got, expected in zip(after, before, strict=True):  # the same chunks, same scores
        assert [chunk for chunk, _ in got] == [chunk for chunk, _ in expected]
        assert [score for _, score in got] == pytest.approx([score for _, score in expected])
    with sqlite3.connect(db.path) as conn:
        conn.execute("INSERT INTO fts_1 (fts_1, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_a_small_write_to_a_merged_store_leaves_its_big_index_alone(db: ContentDB) -> None:
    store = db.create_store("s", None, None)
    # Fewer than FTS5's crisis merge (16 segments on a level), which would merge them.
    for number in range(12):
        _add(db, store.store_id, number)
    _wait_for(lambda: _segments(db.path) == 1)

    _add(db, store.store_id, 100, lines=4)  # one chunk: far under 1/REWRITE_SHARE
    time.sleep(0.5)  # ten times the idle time
    assert _segments(db.path) == 2

    for number in range(101, 101 + 12 // REWRITE_SHARE + 1):
        _add(db, store.store_id, number)
    _wait_for(lambda: _segments(db.path) == 1)


def test_deleting_contents_counts_as_writing_and_a_deleted_store_is_skipped(
    db: ContentDB,
) -> None:
    store = db.create_store("s", None, None)
    for number in range(8):
        _add(db, store.store_id, number)
    _wait_for(lambda: _segments(db.path) == 1)
    for summary in db.list_contents(store.store_id, 0, 4):
        db.delete_content(store.store_id, summary.content_id)
    # Deleting is a write too: its tombstones are merged away.
    _wait_for(lambda: _segments(db.path) == 1)
    other = db.create_store("gone", None, None)
    for number in range(8):
        _add(db, other.store_id, number)
    db.delete_store(other.store_id)  # before its merge: the merger skips it
    time.sleep(0.2)
    assert _results(db, store.store_id)[0]


class _Script:
    """A merge step that records its calls and does as told: ``more`` steps of work per
    store, each waiting for ``gate`` when set."""

    def __init__(self, more: int = 0) -> None:
        self.more = more
        self.calls: list[tuple[str, float]] = []
        self.gate: threading.Event | None = None
        self.started = threading.Event()
        self.fail: set[str] = set()

    def __call__(self, store_id: str) -> bool:
        self.calls.append((store_id, time.monotonic()))
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        if store_id in self.fail:
            raise sqlite3.OperationalError("database is locked")
        return sum(1 for s, _ in self.calls if s == store_id) <= self.more


@contextmanager
def _merging(step: _Script, idle: float) -> Iterator[IndexMerger]:
    merger = IndexMerger(step, idle=idle)
    try:
        yield merger
    finally:
        merger.close()


def test_merging_starts_only_once_writes_have_stopped_for_the_idle_time() -> None:
    step = _Script(more=2)
    with _merging(step, 0.2) as merger:
        wrote = time.monotonic()
        merger.wrote("a", 10, 10)
        _wait_for(lambda: len(step.calls) == 3)  # two steps with work, one finding none
        assert step.calls[0][1] - wrote >= 0.2
        time.sleep(0.3)
        assert len(step.calls) == 3  # done: nothing more until the next write
        merger.wrote("b", 1, 100)  # 1 % of b's index: not worth a rewrite
        time.sleep(0.4)
        assert [s for s, _ in step.calls] == ["a", "a", "a"]


def test_a_write_while_merging_pauses_it_until_writes_stop_again() -> None:
    step = _Script(more=5)
    step.gate = threading.Event()
    with _merging(step, 0.2) as merger:
        merger.wrote("a", 10, 10)
        assert step.started.wait(5)
        merger.wrote("a", 10, 20)  # comes in during the first step
        wrote = time.monotonic()
        step.gate.set()
        _wait_for(lambda: len(step.calls) >= 2)
        assert step.calls[1][1] - wrote >= 0.2


def test_closing_waits_for_the_step_in_progress_and_runs_no_more() -> None:
    step = _Script(more=100)
    step.gate = threading.Event()
    merger = IndexMerger(step, idle=0.01)
    merger.wrote("a", 10, 10)
    assert step.started.wait(5)
    closer = threading.Thread(target=merger.close)
    closer.start()
    time.sleep(0.1)
    assert closer.is_alive()  # waiting for the step
    step.gate.set()
    closer.join(5)
    assert not closer.is_alive()
    assert len(step.calls) == 1
    merger.wrote("a", 10, 10)  # after closing: ignored
    time.sleep(0.1)
    assert len(step.calls) == 1


def test_a_failing_step_is_logged_and_other_stores_are_still_merged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    step = _Script()
    step.fail.add("a")
    with _merging(step, 0.01) as merger:
        with caplog.at_level(logging.WARNING):
            merger.wrote("a", 10, 10)
            merger.wrote("b", 10, 10)
            _wait_for(lambda: {s for s, _ in step.calls} == {"a", "b"})
            time.sleep(0.1)
        assert sorted(s for s, _ in step.calls) == ["a", "b"]  # a is not retried at once
        assert "index merge of store a stopped: database is locked" in caplog.text
