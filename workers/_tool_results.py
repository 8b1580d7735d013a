"""What a tool call's input and output become: validated keyword arguments before the
tool runs, and the response after it, from the value it returned or the exception it
raised. `Server.call_tool` and `Server.run_direct` share these; none of them raises for
bad input or a failing tool (each answers with an error response).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import msgspec

from nativemcp.protocol import (
    INVALID_PARAMS,
    NAME_SHOWN_CHARS,
    CallToolResult,
    NativeMCPResponse,
    TextContent,
    ToolError,
    empty_response,
    error_response,
    quoted_name,
    text_response,
    tool_error_response,
)

from ._render import render_builtins
from ._tool_spec import ToolSpec

__all__ = ["failure_response", "prepare_call", "value_response"]

_logger = logging.getLogger("nativemcp.server")


def prepare_call(
    server_name: str, tools: Mapping[str, ToolSpec], name: str, arguments: Mapping[str, Any] | None
) -> NativeMCPResponse[Any] | tuple[ToolSpec, dict[str, Any]]:
    """The tool ``name`` of ``tools`` and its validated keyword arguments, or the error
    response (unknown tool, arguments that are not an object or do not validate)."""
    spec = tools.get(name)
    if spec is None:
        available = ", ".join(tools) or "(none)"
        return error_response(
            f"Unknown tool {quoted_name(name)} on server {server_name!r}; "
            f"available tools: {available}",
            code=INVALID_PARAMS,
            data={"tool": name[:NAME_SHOWN_CHARS], "available": list(tools)},
        )
    # A dict first: a Mapping check is an ABC's __instancecheck__, in Python, per call.
    if type(arguments) is not dict and not isinstance(arguments, Mapping | None):
        return error_response(
            f"Invalid arguments for tool {quoted_name(name)}: expected an object, "
            f"got {type(arguments).__name__}",
            code=INVALID_PARAMS,
        )
    try:
        args = msgspec.convert(
            arguments if isinstance(arguments, dict) else dict(arguments or {}),
            spec.args_type,
        )
    except msgspec.ValidationError as exc:
        return error_response(
            f"Invalid arguments for tool {name!r}: {exc}",
            code=INVALID_PARAMS,
            data={"tool": name, "detail": str(exc)},
        )
    # The struct's fields are the tool's parameters: its dict is the keyword arguments.
    return spec, msgspec.structs.asdict(args)


def failure_response(server_name: str, name: str, exc: Exception) -> NativeMCPResponse[Any]:
    """The response of tool ``name`` that raised ``exc``: a `ToolError`'s message as
    written, any other exception named, with its traceback logged."""
    if isinstance(exc, ToolError):
        # A deliberate failure: its message is written for the model.
        return tool_error_response(
            exc.message,
            structured_content=exc.structured_content
            or ({"code": exc.code} if exc.code is not None else None),
        )
    _logger.exception("tool %s.%s raised", server_name, name, exc_info=exc)
    return tool_error_response(f"Error: {type(exc).__name__}: {exc}")


def value_response(
    server_name: str, spec: ToolSpec, value: Any, value_only: bool = False
) -> NativeMCPResponse[Any]:
    """The response carrying the value a tool returned: rendered text plus structured
    content, or only the typed value for a caller that asked for ``value_only``."""
    if isinstance(value, NativeMCPResponse):
        return value
    if value is None:
        return empty_response()
    if value_only:
        # The caller decodes the value straight into its type: the text and the
        # JSON-form copy would be built only to be thrown away. A value that does
        # not encode is caught where the reply is encoded.
        return NativeMCPResponse(result=CallToolResult(content=[]), structured_result=value)
    if isinstance(value, str) and spec.renderer is None:
        return text_response(value)
    try:
        # One conversion to JSON form serves the default text and the structured
        # content (`structured_response` would convert again).
        builtins = msgspec.to_builtins(value, str_keys=True)
        text = spec.renderer(value) if spec.renderer else render_builtins(spec.name, builtins)
        return NativeMCPResponse(
            result=CallToolResult(
                content=[TextContent(text=text)],
                structured_content=builtins if isinstance(builtins, dict) else {"result": builtins},
            ),
            structured_result=value,
        )
    except (TypeError, ValueError, msgspec.EncodeError) as exc:
        _logger.exception("tool %s.%s returned a value that cannot be sent", server_name, spec.name)
        return tool_error_response(
            f"Error: the tool's result cannot be sent ({type(value).__name__}): {exc}"
        )
