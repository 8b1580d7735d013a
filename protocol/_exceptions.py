"""Every exception nativemcp raises on purpose, in one tree.

```
NativeMCPError                  root: everything nativemcp raises on purpose
├── ProtocolError               malformed input: bad JSON/msgpack, wrong shapes, non-UTF-8
├── ToolNameError               a tool or server name breaks the naming rules
├── UnwrapError                 a result does not convert to the requested type
├── ToolError                   the tool answered with an error (JSON-RPC error or isError)
│   └── DatabaseUnavailable     (in a server) its shared PostgreSQL database is unreachable
├── FeatureError                a resource, prompt or completion request failed
├── ClientRequestError          a tool's request to its client (sampling, elicitation) failed
├── ServerError                 the server broke (worker, in-process or external MCP server)
│   ├── ServerStartError        it did not start (import error, handshake timeout)
│   ├── ServerCrashed           it died, or its connection ended, with calls in flight
│   ├── CallTimeout             a call did not finish in time (also a TimeoutError)
│   ├── ServerClosed            the pool (or this server) is closed or closing
│   └── FrameTooLarge           a message exceeds the frame size limit
├── CodeError                   a code-mode program did not run to its end (it raised)
│   ├── CodeSyntaxError         it does not parse: line and column
│   ├── CodeLimitExceeded       it passed one of its limits, named in ``limit``
│   └── SandboxCrashed          the sandbox process died under it (the pool replaced it)
├── ArgumentsError              call arguments that are not an object (also a ValueError)
├── UnknownServer               no server by that name (also a KeyError)
├── UnknownTool                 no tool by that full name in the catalog (also a KeyError)
├── ToolNameClash               a tool is named like a proxy attribute (also a LookupError)
└── UnknownProviderError        not one of the LLM providers (also a ValueError)
```

`ServerError` is "the runtime failed us": the call did not run to an answer. `ToolError`
is the opposite: the tool ran and answered with an error. The names hold for every kind
of source, so an in-process or external call raises the same classes as a worker's.

The round-1 names (``WorkerError``, ``WorkerTimeout``, ...) are kept as aliases at the
end of this module; ``nativemcp.workers`` and ``nativemcp.proxy`` re-export them.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from typing import Any

from ._constants import INVALID_PARAMS

__all__ = [
    "ArgumentsError",
    "CallTimeout",
    "ClientRequestError",
    "CodeError",
    "CodeLimitExceeded",
    "CodeSyntaxError",
    "DatabaseUnavailable",
    "FeatureError",
    "FrameTooLarge",
    "NativeMCPError",
    "ProtocolError",
    "SandboxCrashed",
    "ServerClosed",
    "ServerCrashed",
    "ServerError",
    "ServerStartError",
    "ToolError",
    "ToolNameClash",
    "ToolNameError",
    "UnknownProviderError",
    "UnknownServer",
    "UnknownTool",
    "UnwrapError",
    "WorkerClosed",
    "WorkerCrashed",
    "WorkerError",
    "WorkerStartError",
    "WorkerTimeout",
    "describe_exit",
]


class NativeMCPError(Exception):
    """Root of every error nativemcp raises on purpose."""


class ProtocolError(NativeMCPError, ValueError):
    """Input that is not a valid message: bad encoding, bad JSON/msgpack or wrong shape."""


class ToolNameError(NativeMCPError, ValueError):
    """A tool, server or full tool name that breaks the naming rules."""


class ToolError(NativeMCPError):
    """The tool answered with an error: a JSON-RPC error or an ``isError`` result.

    Everything that came with the error is kept: ``code``, ``message``, ``data``, the
    structured content and the full text of the content blocks.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        data: Any = None,
        structured_content: dict[str, Any] | None = None,
        text: str | None = None,
        tool: str | None = None,
    ) -> None:
        self.message = message
        self.code = code
        self.data = data
        self.structured_content = structured_content
        self.text = text
        self.tool = tool
        prefix = f"tool {tool!r} failed" if tool else "tool call failed"
        suffix = f" (code {code})" if code is not None else ""
        super().__init__(f"{prefix}: {message}{suffix}")


class UnwrapError(NativeMCPError, TypeError):
    """A result does not convert to the requested type; names tool, type and what arrived."""

    def __init__(
        self, *, expected: Any, arrived: str, reason: str, tool: str | None = None
    ) -> None:
        self.expected = expected
        self.arrived = arrived
        self.reason = reason
        self.tool = tool
        where = f" from tool {tool!r}" if tool else ""
        super().__init__(
            f"cannot unwrap the result{where} as {_type_name(expected)}: {reason}; "
            f"arrived: {arrived}"
        )


def _type_name(type_: Any) -> str:
    name = getattr(type_, "__qualname__", None)
    if isinstance(name, str) and not getattr(type_, "__args__", None):
        return name
    return repr(type_).replace("typing.", "")


class DatabaseUnavailable(ToolError):
    """A server's shared database cannot be reached; the server retries on the next call.

    The database was down, refused, or the connection broke: the call failed, and the
    server keeps running.

    Raised inside the server; the caller receives it as a `ToolError` whose structured
    content has ``code: "DATABASE_UNAVAILABLE"`` and the database's URL (no password).
    """

    def __init__(self, database: str, reason: str) -> None:
        self.database = database
        super().__init__(
            f"Database unavailable: {database} ({reason}). The call failed; "
            "retry when the database is back.",
            structured_content={"code": "DATABASE_UNAVAILABLE", "database": database},
        )


class FeatureError(NativeMCPError):
    """A resource, prompt or completion request failed (unknown name, bad arguments).

    ``code`` is the JSON-RPC error code the MCP boundary answers with.
    """

    def __init__(self, message: str, *, code: int = INVALID_PARAMS) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ClientRequestError(NativeMCPError):
    """A request to the client (sampling, elicitation) failed or has nobody to answer it."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# -- the server broke --------------------------------------------------------------------


def describe_exit(exitcode: int | None) -> str:
    """``exited with code 1``, ``was killed by SIGKILL``, or ``is gone`` (code unknown)."""
    if exitcode is None:
        return "is gone (exit status unknown)"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with code {exitcode}"


class ServerError(NativeMCPError):
    """A server failed us: it did not start, crashed, timed out or is closed."""

    def __init__(self, message: str, *, server: str) -> None:
        self.server = server
        super().__init__(message)


class ServerStartError(ServerError):
    """A server did not start: it failed to load, or its handshake timed out."""


class ServerCrashed(ServerError):
    """A server died (or its connection ended) with calls in flight; each gets this error."""

    def __init__(
        self, *, server: str, exitcode: int | None, pid: int | None, tool: str | None = None
    ) -> None:
        self.exitcode = exitcode
        self.pid = pid
        self.tool = tool
        call = f" during a call to {tool!r}" if tool else ""
        process = f" (pid {pid})" if pid is not None else ""
        super().__init__(
            f"server {server!r}{process} {describe_exit(exitcode)}{call}", server=server
        )


class CallTimeout(ServerError, TimeoutError):
    """A call did not finish within its time limit; its late reply is dropped."""

    def __init__(self, *, server: str, tool: str, timeout: float) -> None:
        self.tool = tool
        self.timeout = timeout
        super().__init__(
            f"call to {server}.{tool} did not finish within {timeout:g} s", server=server
        )


class ServerClosed(ServerError):
    """The pool (or this server) is closed or closing; no new calls are taken."""


class FrameTooLarge(ServerError):
    """A message exceeds the frame size limit; nothing was sent."""

    def __init__(self, *, server: str, size: int, limit: int, what: str) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"{what} for server {server!r} is {size} bytes; the frame limit is {limit} bytes",
            server=server,
        )


# -- code mode -------------------------------------------------------------------------


class CodeError(NativeMCPError):
    """A code-mode program did not run to its end: it raised, or its sandbox stopped it.

    ``result`` is what the run had when it stopped (a `CodeResult`: what was printed
    and each inner call), so a caller shows the model everything the program did.
    """

    def __init__(self, message: str, *, result: Any = None) -> None:
        self.message = message
        self.result = result
        super().__init__(message)


class CodeSyntaxError(CodeError):
    """The program does not parse; ``line`` and ``column`` (1-based) say where."""

    def __init__(self, message: str, *, line: int, column: int, result: Any = None) -> None:
        self.line = line
        self.column = column
        super().__init__(f"syntax error at line {line}, column {column}: {message}", result=result)


class CodeLimitExceeded(CodeError):
    """The program passed one of its limits: ``limit`` names it, ``value`` is the limit.

    ``limit`` is ``"duration"``, ``"memory"``, ``"recursion"``, ``"output"`` or
    ``"calls"`` (the fields of `CodeLimits`).
    """

    def __init__(self, limit: str, value: float, message: str, *, result: Any = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(
            f"the program passed its {limit} limit ({value}): {message}", result=result
        )


class SandboxCrashed(CodeError):
    """The sandbox process died under the program; the pool has replaced it."""


# -- the caller's mistakes -------------------------------------------------------------


class ArgumentsError(NativeMCPError, ValueError):
    """Call arguments that are not an object (a non-JSON string, a list, clashing keys)."""


class UnknownServer(NativeMCPError, KeyError):
    """The pool has no server by that name; the message lists the ones it has."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnknownTool(NativeMCPError, KeyError):
    """No tool by that full name in the catalog; the message suggests the nearest."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ToolNameClash(NativeMCPError, LookupError):
    """A tool is named like one of the proxy's own attributes.

    The message says how to reach each. Not an `AttributeError`: that would make Python
    fall back to the tool and silently hide the proxy's own."""


class UnknownProviderError(NativeMCPError, ValueError):
    """A provider name that is not one of ``valid``; the message lists the valid ones."""

    def __init__(self, provider: object, *, valid: Iterable[str] = ()) -> None:
        self.provider = provider
        names = ", ".join(repr(name) for name in valid)
        expected = f"; expected one of: {names}" if names else ""
        super().__init__(f"unknown LLM provider {provider!r}{expected}")


# -- deprecated aliases, kept for round-1 code --------------------------------------------
# These names said "Worker" for calls that may run in-process or on an external MCP
# server. They are the same classes (``except WorkerTimeout`` catches `CallTimeout`);
# new code uses the names on the right.

WorkerError = ServerError
WorkerStartError = ServerStartError
WorkerCrashed = ServerCrashed
WorkerTimeout = CallTimeout
WorkerClosed = ServerClosed
