"""One server in several worker processes, behind one handle.

``WorkerPool(replicas={"content-store": 4})`` runs four processes of the content store.
Each call goes to the replica with the fewest calls in flight (ties in turn), skipping
replicas that are restarting while others serve; each replica has its own supervisor,
so a crash restarts only that one and fails only its own calls. Scope changes
(`switch_context`) reach every replica. State the replicas share lives where every
process sees it: the built-in servers keep theirs in SQLite (WAL, one ``BEGIN
IMMEDIATE`` transaction per change), so concurrent writers from several processes
neither lose nor duplicate anything.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import anyio.abc

from nativemcp.protocol import BackendType, NativeMCPResponse, Tool
from nativemcp.workers import ServerStartError

from ._handle import CallOptions, Expected, ResourceListener
from ._worker import WorkerProcess

__all__ = ["ReplicaSet"]

T = TypeVar("T")


class ReplicaSet:
    """Several `WorkerProcess` replicas of one server, seen as one `ServerHandle`."""

    trusts_type_refs = True
    default_timeout: float | None = None

    def __init__(self, replicas: list[WorkerProcess]) -> None:
        if not replicas:
            raise ValueError("a replica set needs at least one replica")
        self.replicas = replicas
        self.backend: BackendType = replicas[0].backend
        self._load = [0] * len(replicas)
        self._next = 0
        self._listener: ResourceListener | None = None
        self.name = replicas[0].name
        """The server's name (from the first replica's handshake once started)."""
        self.description = replicas[0].description

    @property
    def tools(self) -> list[Tool]:
        """The tools listed at the last handshake."""
        return self.replicas[0].tools

    @property
    def pids(self) -> list[int | None]:
        """Each replica's live process id (None while it restarts)."""
        return [replica.pid for replica in self.replicas]

    @property
    def loads(self) -> list[int]:
        """Calls in flight per replica."""
        return list(self._load)

    @property
    def on_resource_updated(self) -> ResourceListener | None:
        """Where every replica's resource-update notifications go."""
        return self._listener

    @on_resource_updated.setter
    def on_resource_updated(self, listener: ResourceListener | None) -> None:
        self._listener = listener
        for replica in self.replicas:
            replica.on_resource_updated = listener

    # -- lifecycle -------------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Supervise every replica; ``task_status.started()`` once all are ready.

        The first replica starts alone (it creates the server's files, say a database
        and its schema), then the others together.

        Raises:
            ServerStartError: a replica failed its first start (the others are closed).
        """
        errors: list[ServerStartError] = []
        async with anyio.create_task_group() as supervisors:

            async def start(replica: WorkerProcess) -> None:
                try:
                    await supervisors.start(replica.run)
                except ServerStartError as exc:
                    errors.append(exc)

            await start(self.replicas[0])
            self.name = self.replicas[0].name
            self.description = self.replicas[0].description
            if not errors:
                async with anyio.create_task_group() as starting:
                    for replica in self.replicas[1:]:
                        starting.start_soon(start, replica)
            if errors:
                await self.aclose()
            else:
                task_status.started()
        if errors:
            raise errors[0]

    async def aclose(self) -> None:
        """Shut every replica down (shielded, bounded, idempotent)."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for replica in self.replicas:
                    tg.start_soon(replica.aclose)

    # -- routing ---------------------------------------------------------------------

    def _pick(self) -> int:
        """The least-loaded live replica (ties in turn); any replica when none is live."""
        count = len(self.replicas)
        best = -1
        for step in range(count):
            index = (self._next + step) % count
            if self.replicas[index].pid is None:
                continue  # restarting: its calls would wait for it
            if best < 0 or self._load[index] < self._load[best]:
                best = index
        if best < 0:
            best = self._next % count
        self._next = (best + 1) % count
        return best

    async def _routed(self, call: Callable[[WorkerProcess], Awaitable[T]]) -> T:
        index = self._pick()
        self._load[index] += 1
        try:
            return await call(self.replicas[index])
        finally:
            self._load[index] -= 1

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Run ``tool`` on the least-loaded replica (see `WorkerProcess.call`)."""
        return await self._routed(lambda replica: replica.call(tool, arguments, options))

    async def call_value(
        self, tool: str, arguments: dict[str, Any], expected: Expected, options: CallOptions
    ) -> Any:
        """Run ``tool`` on the least-loaded replica and return its typed value."""
        return await self._routed(
            lambda replica: replica.call_value(tool, arguments, expected, options)
        )

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any:
        """A resource, prompt or completion request, on the least-loaded replica."""
        return await self._routed(lambda replica: replica.feature(method, params, options))

    async def list_tools(self, options: CallOptions) -> list[Tool]:
        """The server's current tool list (every replica runs the same server)."""
        return await self._routed(lambda replica: replica.list_tools(options))

    async def get_service_context(self, options: CallOptions) -> str:
        """The server's service-context text."""
        return await self._routed(lambda replica: replica.get_service_context(options))

    async def switch_context(
        self, session_id: str | None, thread_id: str | None, options: CallOptions
    ) -> None:
        """Scope every replica's later calls to ``(session_id, thread_id)``.

        Raises:
            ServerError: a replica could not switch (the first such error).
        """
        await self._each(lambda replica: replica.switch_context(session_id, thread_id, options))

    async def ping(self, options: CallOptions) -> None:
        """Round-trip an empty message to every replica.

        Raises:
            ServerError: a replica did not answer (the first such error).
        """
        await self._each(lambda replica: replica.ping(options))

    async def _each(self, operation: Callable[[WorkerProcess], Awaitable[None]]) -> None:
        """Run ``operation`` on every replica at once; raise the first error, bare, after
        every replica has been tried."""
        errors: list[Exception] = []

        async def run(replica: WorkerProcess) -> None:
            try:
                await operation(replica)
            except Exception as exc:  # collected, raised below
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            for replica in self.replicas:
                tg.start_soon(run, replica)
        if errors:
            raise errors[0]
