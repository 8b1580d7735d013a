"""nativemcp.workers: the server-definition API, the worker-process host, built-in servers."""

from nativemcp.protocol import CallTimeout as CallTimeout
from nativemcp.protocol import ClientRequestError as ClientRequestError
from nativemcp.protocol import DatabaseUnavailable as DatabaseUnavailable
from nativemcp.protocol import FeatureError as FeatureError
from nativemcp.protocol import FrameTooLarge as FrameTooLarge
from nativemcp.protocol import ServerClosed as ServerClosed
from nativemcp.protocol import ServerCrashed as ServerCrashed
from nativemcp.protocol import ServerError as ServerError
from nativemcp.protocol import ServerStartError as ServerStartError

# describe_exit belongs with ServerCrashed, whose message it words.
from nativemcp.protocol import describe_exit as describe_exit

from ._config import BUILTIN_SERVERS as BUILTIN_SERVERS
from ._config import OPT_IN_BUILTINS as OPT_IN_BUILTINS
from ._config import ServerConfig as ServerConfig
from ._config import ServerSource as ServerSource
from ._config import load_server as load_server
from ._context import ClientRequest as ClientRequest
from ._context import Context as Context
from ._context import ElicitResult as ElicitResult
from ._context import LogLevel as LogLevel
from ._context import LogNotification as LogNotification
from ._context import Notification as Notification
from ._context import ProgressNotification as ProgressNotification
from ._context import ResourceUpdatedNotification as ResourceUpdatedNotification
from ._context import SampleResult as SampleResult
from ._database import DATABASE_URL_ENV as DATABASE_URL_ENV
from ._database import Database as Database
from ._database import Migration as Migration
from ._database import is_postgres_url as is_postgres_url
from ._database import redact_url as redact_url
from ._feature_dispatch import answer_feature as answer_feature
from ._host import worker_main as worker_main
from ._render import render_default as render_default
from ._resources import CompletionRef as CompletionRef
from ._resources import GetPromptResult as GetPromptResult
from ._resources import Prompt as Prompt
from ._resources import PromptArgument as PromptArgument
from ._resources import PromptMessage as PromptMessage
from ._resources import Resource as Resource
from ._resources import ResourceTemplate as ResourceTemplate
from ._server import Server as Server
from ._tool_spec import ToolFunction as ToolFunction

# Deprecated aliases, kept for round-1 code: the same classes under their old names.
WorkerError = ServerError
WorkerStartError = ServerStartError
WorkerCrashed = ServerCrashed
WorkerTimeout = CallTimeout
WorkerClosed = ServerClosed

__all__ = [
    "BUILTIN_SERVERS",
    "DATABASE_URL_ENV",
    "OPT_IN_BUILTINS",
    "CallTimeout",
    "ClientRequest",
    "ClientRequestError",
    "CompletionRef",
    "Context",
    "Database",
    "DatabaseUnavailable",
    "ElicitResult",
    "FeatureError",
    "FrameTooLarge",
    "GetPromptResult",
    "LogLevel",
    "LogNotification",
    "Migration",
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
    "ServerClosed",
    "ServerConfig",
    "ServerCrashed",
    "ServerError",
    "ServerSource",
    "ServerStartError",
    "ToolFunction",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerStartError",
    "WorkerTimeout",
    "answer_feature",
    "describe_exit",
    "is_postgres_url",
    "load_server",
    "redact_url",
    "render_default",
    "worker_main",
]
