"""Defaults of the MCP boundary, apart from it so the CLI can name them without loading
the official SDK."""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_HTTP",
    "DEFAULT_INPUT_ROUNDS",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_TASKS",
    "DEFAULT_MAX_TASK_TTL",
    "DEFAULT_SESSIONS_PER_CLIENT",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "HTTP_PROTOCOLS",
    "TOKEN_ENV",
    "HttpProtocol",
]

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
"""Largest HTTP request body accepted, in bytes (4 MiB); larger ones get 413."""
TOKEN_ENV: Final = "NATIVEMCP_TOKEN"
"""Environment variable `nativemcp serve` reads the bearer token from (``--token`` wins)."""
DEFAULT_SESSION_IDLE_TIMEOUT: Final = 600.0
"""Seconds a Streamable HTTP session may go with no request in flight before it ends
(the SDK's default is 30 minutes, in which 1,000 abandoned sessions held 36 MB). It
must outlast ``--input-timeout``: a suspended call's retry comes after such a gap."""
DEFAULT_SESSIONS_PER_CLIENT: Final = 100
"""Sessions one client address may hold open at once, every route together."""
DEFAULT_HEADER_TIMEOUT: Final = 10.0
"""Seconds an HTTP client has to send a request's headers (then 408 and close)."""
DEFAULT_BODY_TIMEOUT: Final = 30.0
"""Seconds an HTTP client has to send a request's body once its headers are in (4 MiB,
the largest body, at 140 KB/s); then the connection closes."""
HttpProtocol = Literal["httptools", "h11"]
"""Which of uvicorn's HTTP/1.1 parsers serves: httptools (C) or h11 (pure Python)."""
HTTP_PROTOCOLS: Final[tuple[HttpProtocol, ...]] = ("httptools", "h11")
DEFAULT_HTTP: Final[HttpProtocol] = "httptools"
"""The same answers as h11's at about half the HTTP server's CPU per request
(bench.serve measures both)."""
DEFAULT_MAX_TASKS: Final = 100
"""Tasks (2025-11-25 task-augmented calls) one client session may hold at once; a task
counts until its ttl passes, as its result is kept that long."""
DEFAULT_MAX_TASK_TTL: Final = 3600.0
"""The longest ttl granted to a task, in seconds (a client asking more gets this)."""
DEFAULT_INPUT_ROUNDS: Final = 10
"""Rounds of input (a 2026-07-28 server's ``InputRequiredResult``s) one call of an
external server may take, each relayed to the MCP client of the call: the official
SDK's client's default, as the pool's; ``--input-rounds`` raises it."""
