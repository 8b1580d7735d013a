"""External MCP servers: the pool's client side of the MCP boundary.

What lives here is one concern, a server nativemcp does not run itself: `_server`
(`ExternalServer`, the pool's handle on one, through the official `mcp` client over
stdio or Streamable HTTP), `_mcp_config` (the hosts' `mcpServers` files and `${VAR}`
expansion, and the entry as written for every message), `_log_redaction` (the client
stack's log lines without the values of variables), `_stdio` (the stdio transport
with its frame and line limits and process-group cleanup), `_client_side` (the
server's requests back to the pool: sampling, elicitation, roots), `_tasks`
(task-augmented calls) and `_tool_listing` (tools a server lists that cannot be
offered). It may import the pool core's handle seam (`_handle`, `_restart`,
`_json_where`) and the public names of `nativemcp.protocol` and `nativemcp.workers`;
the pool core imports only the names below.
"""

from ._client_side import DEFAULT_INPUT_ROUNDS as DEFAULT_INPUT_ROUNDS
from ._client_side import ClientSide as ClientSide
from ._client_side import roots_answer as roots_answer
from ._mcp_config import ExternalServerSpec as ExternalServerSpec
from ._mcp_config import expand_variables as expand_variables
from ._mcp_config import load_mcp_servers as load_mcp_servers
from ._server import ExternalServer as ExternalServer
from ._tasks import accepts_task as accepts_task

__all__ = [
    "DEFAULT_INPUT_ROUNDS",
    "ClientSide",
    "ExternalServer",
    "ExternalServerSpec",
    "accepts_task",
    "expand_variables",
    "load_mcp_servers",
    "roots_answer",
]
