"""nativemcp.workers: the server-definition API, the worker-process host, built-in servers."""

from ._config import BUILTIN_SERVERS as BUILTIN_SERVERS
from ._config import ServerConfig as ServerConfig
from ._config import ServerSource as ServerSource
from ._config import load_server as load_server
from ._context import Context as Context
from ._context import LogLevel as LogLevel
from ._context import LogNotification as LogNotification
from ._context import Notification as Notification
from ._context import ProgressNotification as ProgressNotification
from ._exceptions import FrameTooLarge as FrameTooLarge
from ._exceptions import WorkerClosed as WorkerClosed
from ._exceptions import WorkerCrashed as WorkerCrashed
from ._exceptions import WorkerError as WorkerError
from ._exceptions import WorkerStartError as WorkerStartError
from ._exceptions import WorkerTimeout as WorkerTimeout
from ._exceptions import describe_exit as describe_exit
from ._render import render_default as render_default
from ._server import Server as Server
from ._server import ToolFunction as ToolFunction

__all__ = [
    "BUILTIN_SERVERS",
    "Context",
    "FrameTooLarge",
    "LogLevel",
    "LogNotification",
    "Notification",
    "ProgressNotification",
    "Server",
    "ServerConfig",
    "ServerSource",
    "ToolFunction",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerStartError",
    "WorkerTimeout",
    "describe_exit",
    "load_server",
    "render_default",
]
