"""Protocol constants: JSON-RPC version, error codes and the metadata keys we use."""

from __future__ import annotations

import logging
from typing import Final

JSONRPC_VERSION: Final = "2.0"
"""The only JSON-RPC version MCP speaks."""

PARSE_ERROR: Final = -32700
"""Invalid JSON was received."""

INVALID_REQUEST: Final = -32600
"""The JSON sent is not a valid request object."""

METHOD_NOT_FOUND: Final = -32601
"""The method (or tool) does not exist."""

INVALID_PARAMS: Final = -32602
"""Invalid method parameters (for tools: arguments that fail the input schema)."""

INTERNAL_ERROR: Final = -32603
"""Internal error; the default code of an error response built without one."""

REQUEST_TIMEOUT: Final = -32001
"""The call did not finish in time (the code the official SDK uses)."""

INPUT_KEY_META_KEY: Final = "io.github.nativemcp/inputKey"
"""The `_meta` key of a tool's request to its client that names the request.

Under `serve`, a 2026-07-28 client gets the request under that key in ``inputRequests``
(``ctx.elicit(..., key="user_name")``); serve takes it out of the request it sends."""

STRUCTURED_RESULT_META_KEY: Final = "io.github.nativemcp/structuredResult"
"""The `_meta` key of a `structuredResult` that differs from `structuredContent`.

At the MCP boundary it travels in `_meta`, since spec clients drop unknown top-level
fields."""

FASTMCP_WRAP_SCHEMA_KEY: Final = "x-fastmcp-wrap-result"
"""FastMCP's output-schema marker: the structured content is `{"result": value}`."""

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""MCP's log levels (RFC 5424's syslog severities), least severe first."""

PYTHON_LOG_LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
"""The Python `logging` level of each MCP log level.

Python has no notice, alert or emergency: they map to the nearest standard level, so
handlers and formatters know them."""
