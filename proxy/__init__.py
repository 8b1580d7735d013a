"""nativemcp.proxy: the worker pool, typed proxies and the command line."""

from nativemcp.workers import FrameTooLarge as FrameTooLarge
from nativemcp.workers import WorkerClosed as WorkerClosed
from nativemcp.workers import WorkerCrashed as WorkerCrashed
from nativemcp.workers import WorkerError as WorkerError
from nativemcp.workers import WorkerStartError as WorkerStartError
from nativemcp.workers import WorkerTimeout as WorkerTimeout

from ._exceptions import ArgumentsError as ArgumentsError
from ._exceptions import UnknownServer as UnknownServer
from ._handle import LogHandler as LogHandler
from ._handle import ProgressCallback as ProgressCallback
from ._pool import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._pool import WorkerPool as WorkerPool
from ._proxy import ServerProxy as ServerProxy
from ._proxy import ToolMethod as ToolMethod
from ._records import Record as Record
from ._worker import RestartPolicy as RestartPolicy

__all__ = [
    "DEFAULT_TIMEOUT",
    "ArgumentsError",
    "FrameTooLarge",
    "LogHandler",
    "ProgressCallback",
    "Record",
    "RestartPolicy",
    "ServerProxy",
    "ToolMethod",
    "UnknownServer",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerPool",
    "WorkerStartError",
    "WorkerTimeout",
]
