"""An official-SDK `MCPServer` with the SDK's MCP Apps extension (`mcp.server.apps.Apps`),
served over stdio: its tool says whether its client declared MCP Apps.

``python tests/_external_app_server.py`` serves stdio.
"""

from __future__ import annotations

from mcp.server.apps import Apps, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

PAGE = "<!DOCTYPE html><p>an external app</p>"


def make_server() -> MCPServer:
    """The server: one app page at ``ui://app.html``, and a tool that shows it."""
    apps = Apps()

    @apps.tool(resource_uri="ui://app.html", description="Says whether the client shows apps")
    def client_shows_apps(ctx: Context) -> str:
        return "yes" if client_supports_apps(ctx) else "no"

    apps.add_html_resource("ui://app.html", PAGE, prefers_border=True)
    return MCPServer("external-apps", extensions=[apps])


if __name__ == "__main__":
    make_server().run()
