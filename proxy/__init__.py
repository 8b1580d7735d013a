"""nativemcp.proxy: the worker pool, typed proxies, the MCP boundary and the command line."""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from nativemcp.protocol import ArgumentsError as ArgumentsError
from nativemcp.protocol import CallTimeout as CallTimeout
from nativemcp.protocol import FrameTooLarge as FrameTooLarge
from nativemcp.protocol import ServerClosed as ServerClosed
from nativemcp.protocol import ServerCrashed as ServerCrashed
from nativemcp.protocol import ServerError as ServerError
from nativemcp.protocol import ServerStartError as ServerStartError
from nativemcp.protocol import ToolNameClash as ToolNameClash
from nativemcp.protocol import UnknownServer as UnknownServer
from nativemcp.protocol import UnknownTool as UnknownTool

# Deprecated round-1 names, defined once in nativemcp.workers.
from nativemcp.workers import WorkerClosed as WorkerClosed
from nativemcp.workers import WorkerCrashed as WorkerCrashed
from nativemcp.workers import WorkerError as WorkerError
from nativemcp.workers import WorkerStartError as WorkerStartError
from nativemcp.workers import WorkerTimeout as WorkerTimeout

from ._agent_loop import AgentLoop as AgentLoop
from ._catalog import UIAction as UIAction
from ._config import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._config import PoolConfig as PoolConfig
from ._config import PoolOptions as PoolOptions
from ._config import SyncPoolOptions as SyncPoolOptions
from ._config import Timeouts as Timeouts
from ._handle import DEFAULT as DEFAULT
from ._handle import CallerToken as CallerToken
from ._handle import CallOptions as CallOptions
from ._handle import LogHandler as LogHandler
from ._handle import ProgressCallback as ProgressCallback
from ._pins import ToolPins as ToolPins
from ._pool import ClientHandler as ClientHandler
from ._pool import WorkerPool as WorkerPool
from ._proxy import PROXY_NAMES as PROXY_NAMES
from ._proxy import ServerProxy as ServerProxy
from ._proxy import ToolMethod as ToolMethod
from ._records import Record as Record
from ._restart import RestartPolicy as RestartPolicy
from ._sync_pool import SyncServerProxy as SyncServerProxy
from ._sync_pool import SyncToolMethod as SyncToolMethod
from ._sync_pool import SyncWorkerPool as SyncWorkerPool
from .external import ExternalServerSpec as ExternalServerSpec
from .external import load_mcp_servers as load_mcp_servers

__all__ = [
    "DEFAULT",
    "DEFAULT_TIMEOUT",
    "PROXY_NAMES",
    "TOKEN_ENV",
    "AgentLoop",
    "ArgumentsError",
    "CallOptions",
    "CallTimeout",
    "CallerToken",
    "ClientHandler",
    "ExternalServerSpec",
    "FrameTooLarge",
    "LogHandler",
    "McpBridge",
    "PoolConfig",
    "PoolOptions",
    "ProgressCallback",
    "Record",
    "RestartPolicy",
    "ServerClosed",
    "ServerCrashed",
    "ServerError",
    "ServerProxy",
    "ServerStartError",
    "SyncPoolOptions",
    "SyncServerProxy",
    "SyncToolMethod",
    "SyncWorkerPool",
    "Timeouts",
    "ToolMethod",
    "ToolNameClash",
    "ToolPins",
    "UIAction",
    "UnknownServer",
    "UnknownTool",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerPool",
    "WorkerStartError",
    "WorkerTimeout",
    "http_app",
    "load_mcp_servers",
    "serve_stdio",
]

# The MCP boundary pulls in the official SDK (pydantic, starlette, uvicorn). Every worker
# process re-imports the script that opened its pool, and with it this package: loaded
# on first use, these names keep that cost (about 40 MB per worker) out of the workers.
_LAZY: dict[str, tuple[str, str]] = {
    "McpBridge": (".serve", "McpBridge"),
    "TOKEN_ENV": (".serve", "TOKEN_ENV"),
    "http_app": (".serve", "http_app"),
    "serve_stdio": (".serve", "serve_stdio"),
}

if _TYPE_CHECKING:
    from .serve import TOKEN_ENV as TOKEN_ENV
    from .serve import McpBridge as McpBridge
    from .serve import http_app as http_app
    from .serve import serve_stdio as serve_stdio


def __getattr__(name: str) -> _Any:
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(entry[0], __name__), entry[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
