"""External MCP servers: the pool's client side of the MCP boundary.

What lives here is one concern, a server nativemcp does not run itself: `_server`
(`ExternalServer`, the pool's handle on one, through the official `mcp` client over
stdio or Streamable HTTP), `_mcp_config` (the hosts' `mcpServers` files and `${VAR}`
expansion, and the entry as written for every message), `_log_redaction` (the client
stack's log lines without the values of variables), `_stdio` (the stdio transport
with its frame and line limits and process-group cleanup), `_stderr` (a stdio
server's stderr, logged and its tail kept), `_client_side` (the
server's requests back to the pool: sampling, elicitation, roots), `_tasks`
(task-augmented calls), `_tool_listing` (tools a server lists that cannot be
offered), and OAuth to remote servers: `_oauth_config` (the entry's ``oauth``
settings), `_oauth` (`ServerAuthorization`, on the SDK's ``mcp.client.auth``;
`_identity_assertion` for SEP-990's ID-JAG grant),
`_authorization_wait` (a server waiting for a grant, and its way back) and
`_token_store` (the grants kept in the data folder, or in PostgreSQL:
`_token_table`). It may import the pool core's
handle seam (`_handle`, `_restart`, `_json_where`) and the public names of
`nativemcp.protocol` and `nativemcp.workers`; the pool core imports only the names
below.
"""

from ._client_side import DEFAULT_INPUT_ROUNDS as DEFAULT_INPUT_ROUNDS
from ._client_side import ClientSide as ClientSide
from ._client_side import roots_answer as roots_answer
from ._identity_assertion import AssertionHook as AssertionHook
from ._mcp_config import ExternalServerSpec as ExternalServerSpec
from ._mcp_config import expand_variables as expand_variables
from ._mcp_config import load_mcp_servers as load_mcp_servers
from ._oauth import NeedsAuthorization as NeedsAuthorization
from ._oauth import RedirectHook as RedirectHook
from ._oauth import ServerAuthorization as ServerAuthorization
from ._oauth import configured_client as configured_client
from ._oauth import expiry_text as expiry_text
from ._oauth import login_hint as login_hint
from ._oauth import revoke as revoke
from ._oauth_config import OAuthSettings as OAuthSettings
from ._server import ExternalServer as ExternalServer
from ._tasks import accepts_task as accepts_task
from ._token_store import GRANTS_FOLDER as GRANTS_FOLDER
from ._token_store import GrantPlace as GrantPlace
from ._token_store import GrantStore as GrantStore
from ._token_table import GrantTable as GrantTable
from ._token_table import grant_place as grant_place

__all__ = [
    "DEFAULT_INPUT_ROUNDS",
    "GRANTS_FOLDER",
    "AssertionHook",
    "ClientSide",
    "ExternalServer",
    "ExternalServerSpec",
    "GrantPlace",
    "GrantStore",
    "GrantTable",
    "NeedsAuthorization",
    "OAuthSettings",
    "RedirectHook",
    "ServerAuthorization",
    "accepts_task",
    "configured_client",
    "expand_variables",
    "expiry_text",
    "grant_place",
    "load_mcp_servers",
    "login_hint",
    "revoke",
    "roots_answer",
]
