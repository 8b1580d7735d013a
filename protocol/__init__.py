"""nativemcp.protocol: wire types, response constructors and typed unwrapping.

Pure: no I/O, and nothing from ``nativemcp.workers`` or ``nativemcp.proxy``.
"""

from ._apps import APP_MIME_TYPE as APP_MIME_TYPE
from ._apps import APPS_EXTENSION as APPS_EXTENSION
from ._apps import UI_SCHEME as UI_SCHEME
from ._apps import AppCsp as AppCsp
from ._apps import AppPermission as AppPermission
from ._apps import AppVisibility as AppVisibility
from ._apps import app_resource_meta as app_resource_meta
from ._apps import namespaced_ui_uri as namespaced_ui_uri
from ._apps import split_ui_uri as split_ui_uri
from ._apps import tool_ui as tool_ui
from ._apps import tool_ui_meta as tool_ui_meta
from ._apps import ui_visibility as ui_visibility
from ._awaitables import resolved as resolved
from ._codec import JSONRPCMessage as JSONRPCMessage
from ._codec import decode as decode
from ._codec import decode_message as decode_message
from ._codec import decode_response as decode_response
from ._codec import encode as encode
from ._constants import FASTMCP_WRAP_SCHEMA_KEY as FASTMCP_WRAP_SCHEMA_KEY
from ._constants import INPUT_KEY_META_KEY as INPUT_KEY_META_KEY
from ._constants import INTERNAL_ERROR as INTERNAL_ERROR
from ._constants import INVALID_PARAMS as INVALID_PARAMS
from ._constants import INVALID_REQUEST as INVALID_REQUEST
from ._constants import JSONRPC_VERSION as JSONRPC_VERSION
from ._constants import LOG_LEVELS as LOG_LEVELS
from ._constants import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from ._constants import PARSE_ERROR as PARSE_ERROR
from ._constants import PYTHON_LOG_LEVELS as PYTHON_LOG_LEVELS
from ._constants import REQUEST_TIMEOUT as REQUEST_TIMEOUT
from ._constants import STRUCTURED_RESULT_META_KEY as STRUCTURED_RESULT_META_KEY
from ._errortext import ErrorInfo as ErrorInfo
from ._errortext import extract_error_info as extract_error_info
from ._exceptions import ArgumentsError as ArgumentsError
from ._exceptions import CallTimeout as CallTimeout
from ._exceptions import ClientRequestError as ClientRequestError
from ._exceptions import CodeError as CodeError
from ._exceptions import CodeLimitExceeded as CodeLimitExceeded
from ._exceptions import CodeSyntaxError as CodeSyntaxError
from ._exceptions import DatabaseUnavailable as DatabaseUnavailable
from ._exceptions import FeatureError as FeatureError
from ._exceptions import FrameTooLarge as FrameTooLarge
from ._exceptions import NativeMCPError as NativeMCPError
from ._exceptions import ProtocolError as ProtocolError
from ._exceptions import SandboxCrashed as SandboxCrashed
from ._exceptions import ServerClosed as ServerClosed
from ._exceptions import ServerCrashed as ServerCrashed
from ._exceptions import ServerError as ServerError
from ._exceptions import ServerStartError as ServerStartError
from ._exceptions import ToolError as ToolError
from ._exceptions import ToolNameClash as ToolNameClash
from ._exceptions import ToolNameError as ToolNameError
from ._exceptions import UnknownProviderError as UnknownProviderError
from ._exceptions import UnknownServer as UnknownServer
from ._exceptions import UnknownTool as UnknownTool
from ._exceptions import UnwrapError as UnwrapError
from ._exceptions import describe_exit as describe_exit
from ._naming import BUILTIN_PREFIX as BUILTIN_PREFIX
from ._naming import NAME_SHOWN_CHARS as NAME_SHOWN_CHARS
from ._naming import SEPARATOR as SEPARATOR
from ._naming import SERVICE_META_KEY as SERVICE_META_KEY
from ._naming import BackendType as BackendType
from ._naming import ServiceInfo as ServiceInfo
from ._naming import full_tool_name as full_tool_name
from ._naming import is_valid_tool_name as is_valid_tool_name
from ._naming import parse_tool_name as parse_tool_name
from ._naming import quoted_name as quoted_name
from ._naming import safe_server_name as safe_server_name
from ._naming import service_info as service_info
from ._naming import service_meta as service_meta
from ._naming import tag_service as tag_service
from ._naming import tool_name_index as tool_name_index
from ._naming import validate_tool_name as validate_tool_name
from ._responses import compact as compact
from ._responses import empty_response as empty_response
from ._responses import error_response as error_response
from ._responses import expand as expand
from ._responses import structured_response as structured_response
from ._responses import text_resource_response as text_resource_response
from ._responses import text_response as text_response
from ._responses import to_structured_content as to_structured_content
from ._responses import tool_error_response as tool_error_response
from ._schemas import portable_schema as portable_schema
from ._schemas import portable_tool as portable_tool
from ._sdk import from_sdk as from_sdk
from ._sdk import response_from_sdk as response_from_sdk
from ._sdk import response_to_sdk as response_to_sdk
from ._sdk import spec_call_result as spec_call_result
from ._sdk import to_sdk as to_sdk
from ._tasks import TASKS_EXTENSION as TASKS_EXTENSION
from ._tasks import TERMINAL_TASK_STATUSES as TERMINAL_TASK_STATUSES
from ._types import Annotations as Annotations
from ._types import AudioContent as AudioContent
from ._types import CallToolResult as CallToolResult
from ._types import ContentBlock as ContentBlock
from ._types import EmbeddedResource as EmbeddedResource
from ._types import ErrorObject as ErrorObject
from ._types import Icon as Icon
from ._types import ImageContent as ImageContent
from ._types import JSONRPCErrorResponse as JSONRPCErrorResponse
from ._types import JSONRPCNotification as JSONRPCNotification
from ._types import JSONRPCRequest as JSONRPCRequest
from ._types import JSONRPCResponse as JSONRPCResponse
from ._types import KnownContentBlock as KnownContentBlock
from ._types import NativeMCPResponse as NativeMCPResponse
from ._types import RequestId as RequestId
from ._types import ResourceContents as ResourceContents
from ._types import ResourceLink as ResourceLink
from ._types import TextContent as TextContent
from ._types import Tool as Tool
from ._types import ToolAnnotations as ToolAnnotations
from ._types import ToolExecution as ToolExecution
from ._types import UnknownContent as UnknownContent
from ._unwrap import raise_for_error as raise_for_error
from ._unwrap import result_text as result_text
from ._unwrap import unwrap as unwrap

__all__ = [
    "APPS_EXTENSION",
    "APP_MIME_TYPE",
    "BUILTIN_PREFIX",
    "FASTMCP_WRAP_SCHEMA_KEY",
    "INPUT_KEY_META_KEY",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_VERSION",
    "LOG_LEVELS",
    "METHOD_NOT_FOUND",
    "NAME_SHOWN_CHARS",
    "PARSE_ERROR",
    "PYTHON_LOG_LEVELS",
    "REQUEST_TIMEOUT",
    "SEPARATOR",
    "SERVICE_META_KEY",
    "STRUCTURED_RESULT_META_KEY",
    "TASKS_EXTENSION",
    "TERMINAL_TASK_STATUSES",
    "UI_SCHEME",
    "Annotations",
    "AppCsp",
    "AppPermission",
    "AppVisibility",
    "ArgumentsError",
    "AudioContent",
    "BackendType",
    "CallTimeout",
    "CallToolResult",
    "ClientRequestError",
    "CodeError",
    "CodeLimitExceeded",
    "CodeSyntaxError",
    "ContentBlock",
    "DatabaseUnavailable",
    "EmbeddedResource",
    "ErrorInfo",
    "ErrorObject",
    "FeatureError",
    "FrameTooLarge",
    "Icon",
    "ImageContent",
    "JSONRPCErrorResponse",
    "JSONRPCMessage",
    "JSONRPCNotification",
    "JSONRPCRequest",
    "JSONRPCResponse",
    "KnownContentBlock",
    "NativeMCPError",
    "NativeMCPResponse",
    "ProtocolError",
    "RequestId",
    "ResourceContents",
    "ResourceLink",
    "SandboxCrashed",
    "ServerClosed",
    "ServerCrashed",
    "ServerError",
    "ServerStartError",
    "ServiceInfo",
    "TextContent",
    "Tool",
    "ToolAnnotations",
    "ToolError",
    "ToolExecution",
    "ToolNameClash",
    "ToolNameError",
    "UnknownContent",
    "UnknownProviderError",
    "UnknownServer",
    "UnknownTool",
    "UnwrapError",
    "app_resource_meta",
    "compact",
    "decode",
    "decode_message",
    "decode_response",
    "describe_exit",
    "empty_response",
    "encode",
    "error_response",
    "expand",
    "extract_error_info",
    "from_sdk",
    "full_tool_name",
    "is_valid_tool_name",
    "namespaced_ui_uri",
    "parse_tool_name",
    "portable_schema",
    "portable_tool",
    "quoted_name",
    "raise_for_error",
    "resolved",
    "response_from_sdk",
    "response_to_sdk",
    "result_text",
    "safe_server_name",
    "service_info",
    "service_meta",
    "spec_call_result",
    "split_ui_uri",
    "structured_response",
    "tag_service",
    "text_resource_response",
    "text_response",
    "to_sdk",
    "to_structured_content",
    "tool_error_response",
    "tool_name_index",
    "tool_ui",
    "tool_ui_meta",
    "ui_visibility",
    "unwrap",
    "validate_tool_name",
]
