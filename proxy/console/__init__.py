"""The browser console: a pool's catalog, calls side by side, and live UIResources.

Code beside its assets: `_app` is the Starlette app that serves the static page
(``index.html``, ``console.js``, ``apps.js``, ``console.css`` in this folder) and its JSON
API, whose endpoints are `_call_routes`' (the catalog and the calls) and `_ui_routes`'
(what a call rendered), read and answered with `_requests`; `_session` the calls and
their event feed; `_call_views` one call and its result as the page renders them; `_catalog` is the
app's view of the pool; `_apps` what MCP Apps may ask, and
`_sandbox` their second origin (its page's script is ``sandbox.js``). It may import the pool core of
`nativemcp.proxy`, `nativemcp.proxy.llm` and the public names of `nativemcp.protocol`;
only the command line (`nativemcp.proxy.cli`) imports it.
"""

from ._app import create_console_app as create_console_app

__all__ = ["create_console_app"]
