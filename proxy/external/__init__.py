"""External MCP servers: the pool's client side of the MCP boundary.

What lives here is one concern, a server nativemcp does not run itself: `_server`
(`ExternalServer`, the pool's handle on one, through the official `mcp` client over
stdio or Streamable HTTP, made by `_transport`; its resources, prompts and completion
through `_features`), `_mcp_config` (the hosts' `mcpServers` files and `${VAR}`
expansion, and the entry as written for every message), `_log_redaction` (the client
stack's log lines without the values of variables), `_stdio` (the stdio transport
with its frame and line limits and process-group cleanup), `_stderr` (a stdio
server's stderr, logged and its tail kept), `_client_side` (the
server's requests back to the pool: sampling, elicitation, roots), `_authorizations`
(the pool's side of servers that need authorization), `_per_user` (`UserServers`:
a server serve calls as each of its users, on a connection per user), `_tasks`
(task-augmented calls), `_tool_listing` (tools a server lists that cannot be
offered), and a room of its own for OAuth to remote servers (`oauth/`: the entry's ``oauth``
settings, `ServerAuthorization` on the SDK's ``mcp.client.auth``, a server waiting for
a grant, the grants kept), entered by its public names only. It may import the pool core's
handle seam (`_handle`, `_restart`, `_json_where`) and the public names of
`nativemcp.protocol` and `nativemcp.workers`; the pool core imports only the names
below.
"""

from ._authorizations import Authorizations as Authorizations
from ._client_side import DEFAULT_INPUT_ROUNDS as DEFAULT_INPUT_ROUNDS
from ._client_side import ClientSide as ClientSide
from ._client_side import roots_answer as roots_answer
from ._mcp_config import ExternalServerSpec as ExternalServerSpec
from ._mcp_config import expand_variables as expand_variables
from ._mcp_config import load_mcp_servers as load_mcp_servers
from ._per_user import UserServers as UserServers
from ._server import ExternalServer as ExternalServer
from ._stdio import hurry_stops as hurry_stops
from ._tasks import accepts_task as accepts_task
from .oauth import CALLBACK_ROUTE as CALLBACK_ROUTE
from .oauth import GRANTS_DB as GRANTS_DB
from .oauth import GRANTS_FOLDER as GRANTS_FOLDER
from .oauth import AssertionHook as AssertionHook
from .oauth import Consents as Consents
from .oauth import Grant as Grant
from .oauth import GrantDatabase as GrantDatabase
from .oauth import GrantKey as GrantKey
from .oauth import GrantPlace as GrantPlace
from .oauth import GrantStore as GrantStore
from .oauth import GrantTable as GrantTable
from .oauth import NeedsAuthorization as NeedsAuthorization
from .oauth import OAuthSettings as OAuthSettings
from .oauth import RedirectHook as RedirectHook
from .oauth import ServerAuthorization as ServerAuthorization
from .oauth import StaleGrant as StaleGrant
from .oauth import UnknownUser as UnknownUser
from .oauth import configured_client as configured_client
from .oauth import describe_grant as describe_grant
from .oauth import expiry_text as expiry_text
from .oauth import grant_place as grant_place
from .oauth import log_out_user as log_out_user
from .oauth import login_hint as login_hint
from .oauth import revoke as revoke
from .oauth import user_grants as user_grants
from .oauth import user_key as user_key

__all__ = [
    "CALLBACK_ROUTE",
    "DEFAULT_INPUT_ROUNDS",
    "GRANTS_DB",
    "GRANTS_FOLDER",
    "AssertionHook",
    "Authorizations",
    "ClientSide",
    "Consents",
    "ExternalServer",
    "ExternalServerSpec",
    "Grant",
    "GrantDatabase",
    "GrantKey",
    "GrantPlace",
    "GrantStore",
    "GrantTable",
    "NeedsAuthorization",
    "OAuthSettings",
    "RedirectHook",
    "ServerAuthorization",
    "StaleGrant",
    "UnknownUser",
    "UserServers",
    "accepts_task",
    "configured_client",
    "describe_grant",
    "expand_variables",
    "expiry_text",
    "grant_place",
    "hurry_stops",
    "load_mcp_servers",
    "log_out_user",
    "login_hint",
    "revoke",
    "roots_answer",
    "user_grants",
    "user_key",
]
