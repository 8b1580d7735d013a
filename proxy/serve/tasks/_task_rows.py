"""The Tasks extension's tasks in PostgreSQL, so that replicas share them.

With ``--database-url`` each task of `ExtensionTasks` is a row of ``nativemcp_tasks``.
The replica that started a task runs its tool call and, every `SYNC_INTERVAL` seconds,
beats for all its running tasks in one statement (`TaskRows.beat`: each row's
heartbeat, and its state where it changed since last written; a task's end is written
at once); any replica
answers ``tasks/get`` from the row, and ``tasks/update`` and ``tasks/cancel`` write to
it, which the running replica reads back on its next write (it delivers the answers,
or cancels the call). A task whose heartbeat is older than ``stale_after`` seconds,
and not ended, lost the replica running it (killed, or cut off): the next
``tasks/get`` ends it ``failed`` with an error that says so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Self

import anyio
import msgspec
from mcp.shared.exceptions import MCPError

from nativemcp.protocol import INTERNAL_ERROR, TERMINAL_TASK_STATUSES

if TYPE_CHECKING:
    import psycopg

__all__ = ["ROW_SWEEP_INTERVAL", "SYNC_INTERVAL", "TaskRows"]

SYNC_INTERVAL: Final = 0.25
"""Seconds between a running task's writes of its row (its heartbeat)."""
ROW_SWEEP_INTERVAL: Final = 60.0
"""Seconds between two deletions of the rows past their ttl, on each replica."""
STALE_AFTER: Final = 10.0
"""Seconds without a heartbeat after which a task that did not end has lost its replica."""
_SCHEMA_LOCK: Final = 0x6E6D6370_7461736B  # "nmcptask": the advisory lock of the schema
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS nativemcp_tasks (
    task_id TEXT PRIMARY KEY,
    owner TEXT,
    wire JSONB NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    input_responses JSONB NOT NULL DEFAULT '{}'::jsonb
)
"""

_BEAT: Final = """
WITH asked AS (
    SELECT task_id, cancel_requested, input_responses FROM nativemcp_tasks
    WHERE task_id = ANY(%s) FOR UPDATE
), given AS (
    SELECT * FROM unnest(%s::text[], %s::text[]) AS given(task_id, wire)
)
UPDATE nativemcp_tasks AS t SET
    heartbeat_at = %s,
    input_responses = '{}'::jsonb,
    wire = CASE
        WHEN given.wire IS NULL OR t.wire->>'status' = ANY(%s::text[])
        THEN t.wire ELSE given.wire::jsonb END
FROM asked JOIN given USING (task_id)
WHERE t.task_id = asked.task_id
RETURNING t.task_id, asked.cancel_requested, asked.input_responses
"""
"""`TaskRows.beat`'s one statement: what was asked is read under the rows' locks and
cleared as the heartbeat is written, so no answer is taken twice or lost; a task
another replica ended (its runner seen as lost) stays as it ended."""


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


class TaskRows(anyio.AsyncContextManagerMixin):
    """The rows of one database, through one connection (its statements one at a time).

    Args:
        url: the ``postgresql://`` URL.
        stale_after: seconds without a heartbeat after which a task lost its replica.
    """

    def __init__(self, url: str, *, stale_after: float = STALE_AFTER) -> None:
        self.url = url
        self.stale_after = stale_after
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._entered = False
        self._lock = anyio.Lock()

    @contextlib.asynccontextmanager
    async def __asynccontextmanager__(self) -> AsyncIterator[Self]:
        self._entered = True
        try:
            async with self._session() as conn, conn.transaction():
                # Replicas start together: CREATE ... IF NOT EXISTS alone races (one of
                # them fails on the table's type), so they take turns.
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                await conn.execute(_SCHEMA)
            yield self
        finally:
            self._entered = False
            if self._connection is not None:
                await self._connection.close()
                self._connection = None

    @contextlib.asynccontextmanager
    async def _session(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """The connection, one user at a time; opened again after it broke.

        Raises:
            MCPError: INTERNAL_ERROR when the database cannot be used (data
                ``{"reason": "task_database"}``); the request may be tried again.
        """
        import psycopg

        if not self._entered:
            raise RuntimeError("the task rows are used outside 'async with'")
        async with self._lock:
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = await psycopg.AsyncConnection.connect(
                        self.url, autocommit=True
                    )
                yield self._connection
            except psycopg.Error as exc:
                raise MCPError(
                    INTERNAL_ERROR,
                    f"the tasks' database cannot be used now ({type(exc).__name__}); try again",
                    {"reason": "task_database"},
                ) from exc

    async def _run(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        async with self._session() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall() if cursor.description is not None else []

    async def insert(
        self, task_id: str, owner: str | None, wire: dict[str, Any], ttl: float
    ) -> None:
        """Store a new task (before its ``CreateTaskResult`` is sent, as the extension asks)."""
        now = time.time()
        await self._run(
            "INSERT INTO nativemcp_tasks (task_id, owner, wire, expires_at, heartbeat_at) "
            "VALUES (%s, %s, %s::jsonb, %s, %s)",
            (task_id, owner, _json(wire), now + ttl, now),
        )

    async def held(self, owner: str | None) -> int:
        """How many tasks ``owner`` holds, on every replica (until their ttl passes)."""
        rows = await self._run(
            "SELECT count(*) FROM nativemcp_tasks "
            "WHERE owner IS NOT DISTINCT FROM %s AND expires_at > %s",
            (owner, time.time()),
        )
        return int(rows[0][0])

    async def beat(
        self, wires: Mapping[str, dict[str, Any] | None]
    ) -> dict[str, tuple[bool, dict[str, Any]]]:
        """The running replica's heartbeat for its tasks, in one statement: each row's
        heartbeat, and its state where ``wires`` gives one (None: unchanged since last
        written, not sent again).

        Returns what others asked of each task meanwhile (whether to cancel, the input
        responses, taken from the row), by id; a task whose row is gone is absent."""
        if not wires:
            return {}
        ids = list(wires)
        written = [None if wires[i] is None else _json(wires[i]) for i in ids]
        ended = list(TERMINAL_TASK_STATUSES)
        rows = await self._run(_BEAT, (ids, ids, written, time.time(), ended))
        return {task_id: (bool(cancel), dict(asked or {})) for task_id, cancel, asked in rows}

    async def load(self, task_id: str, owner: str | None) -> dict[str, Any] | None:
        """The task as ``tasks/get`` answers it (None: unknown, expired, or another's);
        one whose replica stopped beating is ended ``failed`` first."""
        rows = await self._run(
            "SELECT wire, heartbeat_at FROM nativemcp_tasks WHERE task_id = %s "
            "AND owner IS NOT DISTINCT FROM %s AND expires_at > %s",
            (task_id, owner, time.time()),
        )
        if not rows:
            return None
        wire, heartbeat = rows[0]
        wire = dict(wire)
        if (
            wire["status"] not in TERMINAL_TASK_STATUSES
            and time.time() - heartbeat > self.stale_after
        ):
            message = (
                f"the replica running this task stopped (no heartbeat for "
                f"{self.stale_after:g} s): its tool call is lost; call the tool again"
            )
            wire.pop("inputRequests", None)
            wire.update(
                status="failed",
                statusMessage=message,
                error={"code": INTERNAL_ERROR, "message": message},
            )
            await self._run(
                "UPDATE nativemcp_tasks SET wire = %s::jsonb WHERE task_id = %s",
                (_json(wire), task_id),
            )
        return wire

    async def request(
        self, task_id: str, owner: str | None, *, cancel: bool, responses: Mapping[str, Any]
    ) -> bool:
        """Ask the running replica to cancel, or give it input responses; False when
        there is no such task of ``owner``."""
        rows = await self._run(
            "UPDATE nativemcp_tasks SET cancel_requested = cancel_requested OR %s, "
            "input_responses = input_responses || %s::jsonb "
            "WHERE task_id = %s AND owner IS NOT DISTINCT FROM %s AND expires_at > %s "
            "RETURNING task_id",
            (cancel, _json(dict(responses)), task_id, owner, time.time()),
        )
        return bool(rows)

    async def sweep(self) -> None:
        """Delete the tasks whose ttl passed (any replica may)."""
        await self._run("DELETE FROM nativemcp_tasks WHERE expires_at <= %s", (time.time(),))
