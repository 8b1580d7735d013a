"""OAuth to remote MCP servers: the client side of their authorization.

`_oauth_config` (an ``mcpServers`` entry's ``oauth`` settings), `_oauth`
(`ServerAuthorization`, one server's grant on the SDK's ``mcp.client.auth``, and the
``needs_authorization`` tool a server lists while it waits), `_refresh_on_401` (the
SDK's providers bound to one issuer: a refresh on a 401, token answers held to a size
and a time), `_identity_assertion` (SEP-990's ID-JAG grant), `_dpop` (RFC 9449
proofs, nonces and the key kept with the tokens), `_workload_identity` (SEP-1933's
jwt-bearer grant of a workload's platform JWT), `_loopback_callback` (the browser's
way back to a local port), `_consent` (a user's consent, finished at serve's
callback), `_token_exchange` (RFC 8693 for a caller's token), `_grant_users` (each
user's grants, for operators), `_authorization_wait` (`GrantWait`, a server waiting
for a grant, and its way back), `_tool_rows` (a per-user server's tools, shared by
serve's processes) and `_token_store` (the grants kept in the data folder, or in
PostgreSQL: `_token_table`). This room imports the public names of
`nativemcp.protocol` and `nativemcp.workers`, the official SDK's auth client, and
nothing of the pool; the rest of `external/` imports it by the names below.
"""

from ._authorization_wait import GrantWait as GrantWait
from ._authorization_wait import first_of as first_of
from ._consent import CALLBACK_ROUTE as CALLBACK_ROUTE
from ._consent import Consent as Consent
from ._consent import Consents as Consents
from ._consent import UserKey as UserKey
from ._grant_rows import GRANTS_DB as GRANTS_DB
from ._grant_rows import GRANTS_FOLDER as GRANTS_FOLDER
from ._grant_rows import Grant as Grant
from ._grant_rows import GrantDatabase as GrantDatabase
from ._grant_rows import GrantKey as GrantKey
from ._grant_rows import GrantPlace as GrantPlace
from ._grant_rows import StaleGrant as StaleGrant
from ._grant_users import UnknownUser as UnknownUser
from ._grant_users import log_out_user as log_out_user
from ._grant_users import user_grants as user_grants
from ._grant_users import user_key as user_key
from ._identity_assertion import AssertionHook as AssertionHook
from ._oauth import UNAVAILABLE_TOOL as UNAVAILABLE_TOOL
from ._oauth import NeedsAuthorization as NeedsAuthorization
from ._oauth import RedirectHook as RedirectHook
from ._oauth import ServerAuthorization as ServerAuthorization
from ._oauth import configured_client as configured_client
from ._oauth import expiry_text as expiry_text
from ._oauth import login_hint as login_hint
from ._oauth import revoke as revoke
from ._oauth import unavailable_response as unavailable_response
from ._oauth import unavailable_tool as unavailable_tool
from ._oauth_config import OAuthSettings as OAuthSettings
from ._oauth_config import read_oauth_settings as read_oauth_settings
from ._token_store import GrantStore as GrantStore
from ._token_store import describe as describe_grant
from ._token_table import GrantTable as GrantTable
from ._token_table import grant_place as grant_place
from ._tool_rows import KnownTools as KnownTools
from ._tool_rows import ToolRows as ToolRows

__all__ = [
    "CALLBACK_ROUTE",
    "GRANTS_DB",
    "GRANTS_FOLDER",
    "UNAVAILABLE_TOOL",
    "AssertionHook",
    "Consent",
    "Consents",
    "Grant",
    "GrantDatabase",
    "GrantKey",
    "GrantPlace",
    "GrantStore",
    "GrantTable",
    "GrantWait",
    "KnownTools",
    "NeedsAuthorization",
    "OAuthSettings",
    "RedirectHook",
    "ServerAuthorization",
    "StaleGrant",
    "ToolRows",
    "UnknownUser",
    "UserKey",
    "configured_client",
    "describe_grant",
    "expiry_text",
    "first_of",
    "grant_place",
    "log_out_user",
    "login_hint",
    "read_oauth_settings",
    "revoke",
    "unavailable_response",
    "unavailable_tool",
    "user_grants",
    "user_key",
]
