"""Replicas: one server in several worker processes, least-loaded routing, a crash restarts
only its replica, scope changes reach all, and shared state stays whole under concurrent
writers from several processes."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from nativemcp.proxy import ServerCrashed, WorkerPool
from nativemcp.proxy._handle import CallOptions
from nativemcp.proxy._replicas import ReplicaSet

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[WorkerPool]:
    async with WorkerPool(["_servers:server"], timeout=20, replicas={"_servers:server": 3}) as pool:
        yield pool


def _replica_set(pool: WorkerPool, name: str) -> ReplicaSet:
    handle = pool._handles[name]
    assert isinstance(handle, ReplicaSet)
    return handle


async def _all_at_once(count: int, call: Any) -> list[Any]:
    results: list[Any] = [None] * count

    async def one(index: int) -> None:
        results[index] = await call()

    async with anyio.create_task_group() as tg:
        for index in range(count):
            tg.start_soon(one, index)
    return results


async def test_calls_in_flight_together_go_to_different_replicas(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    replicas = _replica_set(pool, "testing")
    with anyio.fail_after(20):
        pids = await _all_at_once(3, testing.pid)
    assert set(pids) == set(replicas.pids)
    assert len(set(pids)) == 3
    assert replicas.loads == [0, 0, 0]


async def test_a_busy_replica_is_passed_over_for_idle_ones(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    replicas = _replica_set(pool, "testing")
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: testing.block(seconds=1.0))
            await anyio.lowlevel.checkpoint()  # the slow call has picked its replica
            busy = replicas.loads.index(1)
            # Sequential calls all avoid the busy replica while it works.
            pids = {await testing.pid() for _ in range(6)}
        assert replicas.pids[busy] not in pids
        assert len(pids) == 2


async def test_switch_context_reaches_every_replica(pool: WorkerPool) -> None:
    testing = pool.server("testing")
    with anyio.fail_after(20):
        await testing.switch_context("session-r", "thread-r")
        scopes = await _all_at_once(3, testing.scope)
        await testing.switch_context(None)
    assert scopes == [{"session": "session-r", "thread": "thread-r"}] * 3


async def test_a_crash_restarts_only_that_replica_and_the_others_serve_on() -> None:
    async with WorkerPool(["_servers:server"], timeout=20, replicas={"_servers:server": 3}) as pool:
        testing = pool.server("testing")
        replicas = _replica_set(pool, "testing")
        before = list(replicas.pids)
        victim = before[1]
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        with anyio.fail_after(20):
            while True:  # a ping that meets the dying process fails; the next one waits
                try:  # for the restarted replica
                    await replicas.replicas[1].ping(CallOptions(timeout=20))
                    break
                except ServerCrashed:
                    continue
            # The other replicas served on: same processes, never restarted.
            assert [await testing.echo(text=str(i)) for i in range(6)] == [str(i) for i in range(6)]
        after = replicas.pids
        assert after[0] == before[0] and after[2] == before[2]
        assert after[1] not in (None, victim)
        assert replicas.replicas[1].restarts == 1
        assert replicas.replicas[0].restarts == replicas.replicas[2].restarts == 0


async def test_replicas_for_an_unknown_or_in_process_server_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown server.*_servers:server"):
        WorkerPool(["_servers:server"], replicas={"nope": 2})
    with pytest.raises(ValueError, match="≥ 1"):
        WorkerPool(["_servers:server"], replicas={"_servers:server": 0})
    with pytest.raises(ValueError, match="in this process"):
        WorkerPool(data_dir="unused", builtins=["workspace"], replicas={"workspace": 2})


async def test_concurrent_adds_through_content_store_replicas_lose_and_duplicate_nothing(
    tmp_path: Path,
) -> None:
    async with WorkerPool(
        data_dir=tmp_path / "data",
        builtins=["content-store"],
        in_process=(),
        replicas={"content-store": 4},
        timeout=60,
    ) as pool:
        store = pool.server("content-store")
        replicas = _replica_set(pool, "content-store")
        with anyio.fail_after(120):
            info = await store.create_store(name="shared")
            seen_pids: set[int] = set()

            async def add(index: int) -> None:
                # Every fourth text repeats an earlier one: added twice at once, stored once.
                text = f"note {index % 30}\nline two of note {index % 30}\n"
                await store.add_content(
                    store_id=info.store_id, content=text, filename=f"note-{index % 30}.md"
                )
                seen_pids.update(pid for pid in replicas.pids if pid is not None)

            async with anyio.create_task_group() as tg:
                for index in range(40):
                    tg.start_soon(add, index)
            listing = await store.list_content(store_id=info.store_id, limit=100)
        names = sorted(item.filename for item in listing.contents)
        assert names == sorted(f"note-{i}.md" for i in range(30))
        assert listing.total == 30
        assert len({item.content_id for item in listing.contents}) == 30
        found = await store.keyword_similarity_search(store_id=info.store_id, query="note 7")
        assert any(hit.filename == "note-7.md" for hit in found.results)
        assert len(seen_pids) == 4


async def test_concurrent_todos_through_planning_replicas_get_distinct_ids(tmp_path: Path) -> None:
    async with WorkerPool(
        data_dir=tmp_path / "data",
        builtins=["planning"],
        in_process=(),
        replicas={"planning": 3},
        timeout=60,
    ) as pool:
        planning = pool.server("planning")
        with anyio.fail_after(60):
            await planning.switch_context("session-p", "thread-p")
            await planning.create_goal(goal="replicated plan")

            async def add(index: int) -> None:
                await planning.add_todo(name=f"step {index}")

            async with anyio.create_task_group() as tg:
                for index in range(24):
                    tg.start_soon(add, index)
            states = await _all_at_once(3, planning.get_current_state)
        for state in states:  # every replica reads the same whole state
            assert state.goal == "replicated plan"
            assert sorted(todo.name for todo in state.todos) == sorted(
                f"step {i}" for i in range(24)
            )
            assert sorted(todo.id for todo in state.todos) == list(range(1, 25))
