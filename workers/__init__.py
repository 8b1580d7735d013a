"""nativemcp.workers: the server-definition API, the worker-process host, built-in servers."""

from ._config import BUILTIN_SERVERS as BUILTIN_SERVERS
from ._config import ServerConfig as ServerConfig
from ._config import ServerSource as ServerSource
from ._config import load_server as load_server
from ._context import ClientRequest as ClientRequest
from ._context import ClientRequestError as ClientRequestError
from ._context import Context as Context
from ._context import ElicitResult as ElicitResult
from ._context import LogLevel as LogLevel
from ._context import LogNotification as LogNotification
from ._context import Notification as Notification
from ._context import ProgressNotification as ProgressNotification
from ._context import ResourceUpdatedNotification as ResourceUpdatedNotification
from ._context import SampleResult as SampleResult
from ._exceptions import FrameTooLarge as FrameTooLarge
from ._exceptions import WorkerClosed as WorkerClosed
from ._exceptions import WorkerCrashed as WorkerCrashed
from ._exceptions import WorkerError as WorkerError
from ._exceptions import WorkerStartError as WorkerStartError
from ._exceptions import WorkerTimeout as WorkerTimeout
from ._exceptions import describe_exit as describe_exit
from ._render import render_default as render_default
from ._resources import CompletionRef as CompletionRef
from ._resources import FeatureError as FeatureError
from ._resources import GetPromptResult as GetPromptResult
from ._resources import Prompt as Prompt
from ._resources import PromptArgument as PromptArgument
from ._resources import PromptMessage as PromptMessage
from ._resources import Resource as Resource
from ._resources import ResourceTemplate as ResourceTemplate
from ._server import Server as Server
from ._server import ToolFunction as ToolFunction

__all__ = [
    "BUILTIN_SERVERS",
    "ClientRequest",
    "ClientRequestError",
    "CompletionRef",
    "Context",
    "ElicitResult",
    "FeatureError",
    "FrameTooLarge",
    "GetPromptResult",
    "LogLevel",
    "LogNotification",
    "Notification",
    "ProgressNotification",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "Resource",
    "ResourceTemplate",
    "ResourceUpdatedNotification",
    "SampleResult",
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
