"""The MCP boundary: a pool's catalog served to MCP clients (stdio, Streamable HTTP).

What lives here is the official `mcp` package's server side around the pool: `_bridge`
(the low-level server whose requests go to the pool), `_selection` (which servers, and
their instructions), `_fast_path` and `_window` (plain stateless 2026-07-28 requests
answered from the bridge without the SDK's session machinery), `_transports` (stdio and the
Streamable HTTP app with its Host, Origin, token and size checks), `_request_ids`
(requests whose id no client can match), `_deadlines` (read deadlines on HTTP
connections), `_client_sessions` (sessions per client), `_tasks` (2025-11-25 tasks and
their limits), `_suspended`
(calls waiting on a 2026-07-28 client's input), `_graceful` (draining on SIGTERM) and
`_defaults`. It may import the pool core of `nativemcp.proxy`, `nativemcp.proxy.llm`
and the public names of `nativemcp.protocol` and `nativemcp.workers`; the pool core
never imports it (the SDK's server side stays out of worker processes until used).
"""

from ._bridge import McpBridge as McpBridge
from ._deadlines import deadline_protocol as deadline_protocol
from ._transports import TOKEN_ENV as TOKEN_ENV
from ._transports import http_app as http_app
from ._transports import serve_stdio as serve_stdio

__all__ = ["TOKEN_ENV", "McpBridge", "deadline_protocol", "http_app", "serve_stdio"]
