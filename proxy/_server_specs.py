"""How the pool starts its servers: one spec per kind of source, started together.

A `ServerSpec` says how to start one server: in its own worker process or in replicas
of them (`WorkerSpec`), in this process (`LocalSpec`), or an external MCP server through
the official client (`ExternalSpec`). `server_specs` reads them off a `PoolConfig`;
`start_in_order` starts them all concurrently under the supervisors' task group
(`supervisor_group`), and nothing after start-up asks which kind a handle is.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeVar

import anyio
import anyio.abc

from nativemcp.protocol import BackendType
from nativemcp.workers import ServerConfig, ServerError, ServerSource, load_server

from ._config import PoolConfig
from ._handle import ServerHandle
from ._local import LocalServer
from ._replicas import ReplicaSet
from ._restart import RestartPolicy
from ._worker import WorkerProcess
from .external import (
    AssertionHook,
    ClientSide,
    Consents,
    ExternalServer,
    ExternalServerSpec,
    GrantPlace,
    RedirectHook,
    ServerAuthorization,
    UserServers,
    grant_place,
)

__all__ = [
    "ExternalSpec",
    "LocalSpec",
    "ServerSpec",
    "WorkerSpec",
    "server_specs",
    "start_in_order",
    "supervised",
    "supervisor_group",
]

_logger = logging.getLogger("nativemcp.pool")


class ServerSpec(Protocol):
    """How to start one server; the pool holds a list of these, whatever their kind."""

    label: str
    required: bool

    async def start(self, task_group: anyio.abc.TaskGroup) -> ServerHandle: ...


class _Supervised(ServerHandle, Protocol):
    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None: ...

    async def aclose(self) -> None: ...


H = TypeVar("H", bound=_Supervised)


async def supervised(task_group: anyio.abc.TaskGroup, handle: H) -> H:
    """``handle`` once its supervisor runs in ``task_group`` and its server is ready;
    closed again (shielded) if it never got there."""
    try:
        await task_group.start(handle.run)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await handle.aclose()
        raise
    return handle


@contextlib.asynccontextmanager
async def supervisor_group() -> AsyncIterator[anyio.abc.TaskGroup]:
    """The task group of the servers' supervisors. An error in the body propagates
    alone, not in an exception group (trio's always groups): by then the pool has
    closed the servers, and leaving the group only reaps their supervisors."""
    failure: BaseException | None = None
    async with anyio.create_task_group() as task_group:
        try:
            yield task_group
        except BaseException as exc:  # raised again below, outside the group
            failure = exc
        task_group.cancel_scope.cancel()
    if failure is not None:
        raise failure


class WorkerSpec:
    """A server in its own worker process (``BuiltInWeb``, or ``UserWorker``), or in
    ``replicas`` of them."""

    required = True

    def __init__(self, label: str, make: Callable[[], WorkerProcess], replicas: int = 1) -> None:
        self.label = label
        self._make = make
        self._replicas = replicas

    async def start(self, task_group: anyio.abc.TaskGroup) -> ServerHandle:
        worker: WorkerProcess | ReplicaSet = (
            self._make()
            if self._replicas == 1
            else ReplicaSet([self._make() for _ in range(self._replicas)])
        )
        return await supervised(task_group, worker)


class LocalSpec:
    """A server in this process (``BuiltInNative``, or ``UserInProcess``)."""

    required = True

    def __init__(
        self, label: str, source: ServerSource, config: ServerConfig, backend: BackendType
    ) -> None:
        self.label = label
        self._source = source
        self._config = config
        self._backend = backend

    async def start(self, task_group: anyio.abc.TaskGroup) -> ServerHandle:
        return LocalServer(load_server(self._source, self._config), self._backend)


class ExternalSpec:
    """An external MCP server (``ExternalMCP``) through the official client."""

    def __init__(
        self,
        spec: ExternalServerSpec,
        start_timeout: float | None,
        restart: RestartPolicy,
        client_side: ClientSide,
        max_frame: int,
        authorization: ServerAuthorization | None = None,
        users: tuple[GrantPlace, Consents] | None = None,
    ) -> None:
        self.label = spec.name
        self._authorization = authorization
        self._users = users
        self.required = spec.required
        self._spec = spec
        self._start_timeout = start_timeout
        self._restart = restart
        self._client_side = client_side
        self._max_frame = max_frame

    async def start(self, task_group: anyio.abc.TaskGroup) -> ServerHandle:
        if self._users is not None:
            grants, consents = self._users
            each = UserServers(self._spec, make=self._server, grants=grants, consents=consents)
            return await supervised(task_group, each)
        return await supervised(task_group, self._server(self._authorization))

    def _server(self, authorization: ServerAuthorization | None) -> ExternalServer:
        return ExternalServer(
            self._spec,
            start_timeout=self._start_timeout,
            restart=self._restart,
            client_side=self._client_side,
            max_frame=self._max_frame,
            authorization=authorization,
        )


def server_specs(
    config: PoolConfig,
    side: ClientSide,
    redirect: RedirectHook | None,
    assertion: AssertionHook | None,
) -> list[ServerSpec]:
    """The spec of every server ``config`` runs, in configuration order; external
    servers answer their requests back through ``side`` and sign in with OAuth with
    ``redirect`` and ``assertion`` where their entry says so."""
    specs: list[ServerSpec] = []
    for label, source in config.plan():
        if label in config.in_process:
            backend = config.backend(label, in_process=True)
            specs.append(LocalSpec(label, source, config.server_config(label), backend))
        else:
            settings = config.worker_settings(label, source)
            specs.append(
                WorkerSpec(
                    label,
                    functools.partial(WorkerProcess, settings),
                    config.replicas.get(label, 1),
                )
            )
    grants = grant_place(config.data_dir, config.database_url)
    # One serve's callback finishes every per-user server's consents, and any process's
    # sharing the grants: the pending ones are rows beside them.
    consents = Consents(grants)
    specs.extend(
        ExternalSpec(
            spec,
            config.timeouts.start,
            config.restart,
            side,
            config.max_frame,
            ServerAuthorization(
                spec.name,
                spec.url,
                spec.oauth,
                grants,
                redirect,
                assertion,
            )
            if spec.oauth is not None and spec.url is not None and spec.grant_scope == "pool"
            else None,
            (grants, consents) if spec.grant_scope == "user" else None,
        )
        for spec in config.external
    )
    return specs


async def start_in_order(
    specs: list[ServerSpec], task_group: anyio.abc.TaskGroup
) -> tuple[list[ServerHandle], list[Exception]]:
    """Start every spec concurrently, supervised in ``task_group``: the handles that
    started, in configuration order (not speed), and why required ones did not (an
    optional server that fails is logged and left out)."""
    errors: list[Exception] = []
    started: list[ServerHandle] = []
    order: dict[int, int] = {}

    async def start(index: int, spec: ServerSpec) -> None:
        try:
            handle = await spec.start(task_group)
            order[id(handle)] = index
            started.append(handle)
        except (ServerError, ValueError, OSError) as exc:
            if spec.required:
                errors.append(exc)
            else:
                _logger.warning("optional server %r left out: %s", spec.label, exc)

    async with anyio.create_task_group() as tg:
        for index, spec in enumerate(specs):
            tg.start_soon(start, index, spec)
    started.sort(key=lambda handle: order[id(handle)])
    return started, errors
