"""One pool configuration, checked once, for the async pool and the blocking one.

`WorkerPool` and `SyncWorkerPool` take the same keyword arguments; both turn them into
a frozen `PoolConfig` (every check in one place) and read from it what to start and
how: the plan of servers, each one's `ServerConfig` and `WorkerSettings`, and the
`Timeouts`. A time limit is seconds or ``None``, and ``None`` means no limit
everywhere.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, TypedDict, Unpack
from urllib.parse import urlsplit

import multiprocess

from nativemcp.protocol import BackendType
from nativemcp.protocol.wire import DEFAULT_MAX_FRAME
from nativemcp.workers import (
    BUILTIN_SERVERS,
    DATABASE_URL_ENV,
    OPT_IN_BUILTINS,
    Server,
    ServerConfig,
    ServerSource,
    is_postgres_url,
    redact_url,
)

from ._handle import CallOptions
from ._pins import ToolPins, as_pins
from ._restart import RestartPolicy
from ._worker_start import WorkerSettings
from .codemode import DEFAULT_LIMITS, CodeLimits
from .external import ExternalServerSpec, load_mcp_servers
from .llm._budget import DEFAULT_RESULT_BUDGET, check_budget
from .tool_search import check_embedding, embedding_available

__all__ = [
    "DEFAULT_START_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "PoolConfig",
    "PoolOptions",
    "StartMethod",
    "SyncPoolOptions",
    "Timeouts",
    "check_options",
    "root_uris",
]

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds a call may take unless the pool or the call says otherwise."""
DEFAULT_START_TIMEOUT: Final = 20.0
"""Seconds a worker (or an external server) has to load and become ready."""

StartMethod = Literal["spawn", "forkserver"]


class SyncPoolOptions(TypedDict, total=False):
    """The keyword arguments of `SyncWorkerPool` (each is described on `WorkerPool`)."""

    data_dir: str | Path | None
    workspace_root: str | Path | None
    builtins: Iterable[str] | None
    options: Mapping[str, Mapping[str, Any]] | None
    timeout: float | None
    start_timeout: float | None
    max_frame: int
    start_method: StartMethod
    restart: RestartPolicy | None
    browser_allowed_origins: Iterable[str] | None
    search_embed: bool | None
    code_limits: CodeLimits | None


class PoolOptions(SyncPoolOptions, total=False):
    """The pool options of `WorkerPool`, each described there.

    They are those of `SyncWorkerPool` and the ones only the async pool has."""

    in_process: Iterable[str]
    mcp_servers: Mapping[str, Any] | str | os.PathLike[str] | None
    database_url: str | None
    replicas: Mapping[str, int] | None
    roots: Iterable[str | os.PathLike[str]] | None
    pinned: ToolPins | str | os.PathLike[str] | None
    result_budget: int | None
    search_learn: bool


def check_options(given: Mapping[str, Any], accepted: frozenset[str], owner: str) -> None:
    """Refuse a keyword ``owner`` does not take, as Python does for a named parameter
    (a ``**options`` signature would otherwise let a misspelling pass unseen).

    Raises:
        TypeError: a key of ``given`` is not in ``accepted``.
    """
    for key in given:
        if key not in accepted:
            raise TypeError(f"{owner}() got an unexpected keyword argument {key!r}")


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Timeouts:
    """A pool's time limits in seconds; ``None`` is no limit."""

    call: float | None = DEFAULT_TIMEOUT
    """What one call may take unless the call or its server says otherwise."""
    start: float | None = DEFAULT_START_TIMEOUT
    """What a worker or an external server has to become ready."""


def _code_limits(given: object) -> CodeLimits:
    if given is None:
        return DEFAULT_LIMITS
    if not isinstance(given, CodeLimits):
        raise TypeError(f"code_limits must be a CodeLimits, not {given!r}")
    return given


def _builtin_available(name: str) -> bool:
    module = BUILTIN_SERVERS[name].partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _search_learn(given: object, folder: Path | None, database_url: str | None) -> bool:
    if not isinstance(given, bool):
        raise TypeError(f"search_learn must be True or False, not {given!r}")
    if given and folder is None and not database_url:
        raise ValueError(
            "search_learn keeps the queries that found each tool in the data folder or in "
            "PostgreSQL: give data_dir (serve --data-dir) or database_url"
        )
    return given


def _search_embed(given: object) -> bool:
    # None (the default): the fused ranking wherever wordllama is installed, as the
    # default install has it (the best ranking by default); False: BM25 alone.
    if given is None:
        return embedding_available()
    if not isinstance(given, bool):
        raise TypeError(f"search_embed must be True, False or None, not {given!r}")
    if given:
        check_embedding()
    return given


def _result_budget(given: object) -> int | None:
    return None if given is None else check_budget(given, "result_budget")


def root_uris(roots: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Roots as ``file://`` URIs: a URI as it is, a folder path made absolute.

    Raises:
        NotADirectoryError: a path that is not an existing folder (named).
    """
    uris: list[str] = []
    for root in roots:
        text = os.fspath(root)
        if text.startswith("file://"):
            uris.append(text)
            continue
        folder = Path(text).expanduser().resolve()
        if not folder.is_dir():
            raise NotADirectoryError(f"root {text!r} is not a folder; give existing folders")
        uris.append(folder.as_uri())
    return tuple(uris)


def _label(source: ServerSource) -> str:
    if isinstance(source, Server):
        return source.name
    return source if isinstance(source, str) else getattr(source, "__name__", "server")


def _data_folder(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """``data_dir`` as a path (``~`` expanded), refused when it names a file."""
    folder = Path(data_dir).expanduser() if data_dir is not None else None
    if folder is not None and folder.exists() and not folder.is_dir():
        raise NotADirectoryError(
            f"data_dir {str(folder)!r} is a file, not a folder: give a folder "
            "(it is created if missing)"
        )
    return folder


def _chosen_builtins(
    builtins: Iterable[str] | None, data_dir: object, folder: Path | None
) -> list[str]:
    """The built-in servers to run: those named (each one known, and only with a
    ``data_dir``), or by default, with a ``data_dir``, every available one not opt-in."""
    if builtins is None:
        return (
            [n for n in BUILTIN_SERVERS if n not in OPT_IN_BUILTINS and _builtin_available(n)]
            if data_dir
            else []
        )
    chosen = list(builtins)
    unknown = [name for name in chosen if name not in BUILTIN_SERVERS]
    if unknown:
        raise ValueError(
            f"unknown built-in server(s) {', '.join(unknown)}; "
            f"built-ins: {', '.join(BUILTIN_SERVERS)}"
        )
    if chosen and folder is None:
        raise ValueError("built-in servers need a data_dir for their data")
    return chosen


def _check_importable(sources: Sequence[ServerSource], local: frozenset[str]) -> None:
    """Refuse a `Server` to run in a worker that a worker could not import by name."""
    for source in sources:
        if isinstance(source, Server) and source.name in local:
            continue
        if isinstance(source, Server) and source._reference() is None:
            # Now, with a short traceback, rather than when the worker is spawned.
            raise TypeError(source._not_importable_message())


def _database_url(database_url: str | None) -> str | None:
    """The database URL given, else the environment's; refused unless PostgreSQL's."""
    if database_url is None:
        database_url = os.environ.get(DATABASE_URL_ENV)
    if database_url and not is_postgres_url(database_url):
        # Echo only what has URL parts to redact: 'user:pw@host/db' reads as scheme
        # 'user' with the password in its path.
        shown = urlsplit(database_url).netloc and f", not {redact_url(database_url)!r}"
        raise ValueError(
            f"database_url must be a postgresql://user:password@host/database URL{shown}"
        )
    return database_url


def _with_browser_origins(
    options: Mapping[str, Mapping[str, Any]], origins: Iterable[str] | None
) -> dict[str, dict[str, Any]]:
    """Per-server options, ``browser_allowed_origins`` folded into the browser's."""
    merged = {name: dict(value) for name, value in options.items()}
    if origins is not None:
        browser = merged.setdefault("browser", {})
        browser["allowed_origins"] = [*browser.get("allowed_origins", ()), *origins]
    return merged


@dataclasses.dataclass(frozen=True, kw_only=True)
class PoolConfig:
    """What a pool runs and how, checked: build one with `PoolConfig.build`."""

    sources: tuple[ServerSource, ...]
    data_dir: Path | None
    workspace_root: Path | None
    builtins: tuple[str, ...]
    in_process: frozenset[str]
    options: Mapping[str, Mapping[str, Any]]
    external: tuple[ExternalServerSpec, ...]
    database_url: str | None
    timeouts: Timeouts
    max_frame: int
    start_method: StartMethod
    restart: RestartPolicy
    replicas: Mapping[str, int]
    roots: tuple[str, ...] | None = None
    """The ``file://`` URIs of the folders offered to external servers as roots.

    None: the pool declares no roots."""
    pinned: ToolPins | None = None
    """The reviewed tool definitions: a tool not pinned, or changed since, is withheld.

    None: every tool is offered."""
    search_embed: bool = False
    """Tool search fuses BM25 with wordllama's embedding model (False: BM25 alone)."""
    search_learn: bool = False
    """A search's query is kept as words of the tool the same session calls next."""
    result_budget: int | None = DEFAULT_RESULT_BUDGET
    """The agent loop's tokens per tool result (None: no budget)."""
    code_limits: CodeLimits = DEFAULT_LIMITS
    """A code-mode run's limits unless the run names its own."""

    @classmethod
    def build(
        cls, servers: Iterable[ServerSource] = (), **given: Unpack[PoolOptions]
    ) -> PoolConfig:
        """Check the arguments of `WorkerPool` (see there) and fix them in one value.

        Raises:
            ValueError: an unknown built-in, built-ins without a ``data_dir``, a
                ``database_url`` that is not ``postgresql://``, or replicas for an
                unknown or in-process server or not a count ≥ 1, or a ``result_budget``
                below `MIN_BUDGET` tokens.
            NotADirectoryError: ``data_dir`` is a file, or a root is not a folder.
            TypeError: a `Server` to run in a worker is not importable by name.
            FileNotFoundError: ``pinned`` names no file.
            ImportError: ``search_embed=True`` where wordllama is not installed.
        """
        check_options(given, PoolOptions.__optional_keys__, "PoolConfig.build")
        sources = tuple(servers)
        folder = _data_folder(given.get("data_dir"))
        chosen = _chosen_builtins(given.get("builtins"), given.get("data_dir"), folder)
        local = frozenset(given.get("in_process", ("workspace",)))
        _check_importable(sources, local)
        database_url = _database_url(given.get("database_url"))
        workspace_root = given.get("workspace_root")
        mcp_servers = given.get("mcp_servers")
        config = cls(
            sources=sources,
            data_dir=folder,
            workspace_root=Path(workspace_root).expanduser() if workspace_root else None,
            builtins=tuple(chosen),
            in_process=local,
            options=_with_browser_origins(
                given.get("options") or {}, given.get("browser_allowed_origins")
            ),
            external=tuple(load_mcp_servers(mcp_servers)) if mcp_servers is not None else (),
            database_url=database_url or None,
            # 0 or less also reads as no limit, as in earlier releases (see `time_limit`).
            timeouts=Timeouts(
                call=CallOptions(timeout=given.get("timeout", DEFAULT_TIMEOUT))
                .with_default(None)
                .limit,
                start=given.get("start_timeout", DEFAULT_START_TIMEOUT),
            ),
            max_frame=given.get("max_frame", DEFAULT_MAX_FRAME),
            start_method=given.get("start_method", "spawn"),
            restart=given.get("restart") or RestartPolicy(),
            replicas=dict(given.get("replicas") or {}),
            roots=root_uris(roots) if (roots := given.get("roots")) is not None else None,
            pinned=as_pins(given.get("pinned")),
            search_embed=_search_embed(given.get("search_embed")),
            search_learn=_search_learn(given.get("search_learn", False), folder, database_url),
            result_budget=_result_budget(given.get("result_budget", DEFAULT_RESULT_BUDGET)),
            code_limits=_code_limits(given.get("code_limits")),
        )
        config._check_replicas()
        return config

    def _check_replicas(self) -> None:
        for name, count in self.replicas.items():
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"replicas of {name!r} must be a whole number ≥ 1, not {count!r}")
            if count > 1 and name in self.in_process:
                raise ValueError(
                    f"server {name!r} runs in this process and cannot have replicas; "
                    "leave it out of in_process"
                )
        planned = {label for label, _ in self.plan()}
        unknown = sorted(self.replicas.keys() - planned)
        if unknown:
            raise ValueError(
                f"replicas for unknown server(s) {', '.join(unknown)}; "
                f"servers: {', '.join(sorted(planned)) or '(none)'}"
            )

    def plan(self) -> list[tuple[str, ServerSource]]:
        """``(label, source)`` of every nativemcp server to start (built-ins first)."""
        plan: list[tuple[str, ServerSource]] = [(n, BUILTIN_SERVERS[n]) for n in self.builtins]
        plan.extend((_label(source), source) for source in self.sources)
        return plan

    def backend(self, label: str, *, in_process: bool = False) -> BackendType:
        """The kind of server ``label`` of the plan is.

        A built-in or the user's own, in a worker or (``in_process``) in this process."""
        if label in self.builtins:
            return BackendType.BUILTIN_NATIVE if in_process else BackendType.BUILTIN_WEB
        return BackendType.USER_IN_PROCESS if in_process else BackendType.USER_WORKER

    def server_config(self, name: str | None) -> ServerConfig:
        """What server ``name`` is given at start-up (its data, its options)."""
        return ServerConfig(
            data_dir=self.data_dir,
            workspace_root=self.workspace_root,
            options=self.options.get(name or "", {}),
            database_url=self.database_url,
        )

    def worker_settings(
        self, label: str, source: ServerSource, pool: str = "WorkerPool"
    ) -> WorkerSettings:
        """How to start ``label``'s worker process; both pools start theirs so.

        ``pool`` is the class that starts it, for messages."""
        return WorkerSettings(
            source=source,
            config=self.server_config(label),
            mp_context=multiprocess.get_context(self.start_method),
            start_timeout=self.timeouts.start,
            max_frame=self.max_frame,
            restart=self.restart,
            label=label,
            pool=pool,
            backend=self.backend(label),
        )

    def make_data_dir(self) -> None:
        """Create the data folder (if the pool has one) before the servers start."""
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
