"""Two servers whose MCP Apps use the same ``ui://app.html``, for the hub's namespacing
tests; a module so worker processes can import them."""

from __future__ import annotations

from nativemcp.workers import Server

alpha = Server("alpha", description="An app server")
beta = Server("beta", description="Another app server with the same app URI")


@alpha.app("ui://app.html", prefers_border=True)
def alpha_page() -> str:
    """Alpha's app."""
    return "<!DOCTYPE html><p>alpha</p>"


@alpha.tool(ui="ui://app.html")
def show(text: str) -> str:
    """Show text in alpha's app."""
    return f"alpha shows {text}"


@alpha.tool(ui="ui://app.html", visibility=["app"])
def refresh() -> str:
    """Only alpha's app calls this."""
    return "alpha refreshed"


@alpha.tool
def plain() -> str:
    """A tool without an app."""
    return "plain"


@beta.app("ui://app.html")
def beta_page() -> str:
    """Beta's app."""
    return "<!DOCTYPE html><p>beta</p>"


@beta.tool(ui="ui://app.html")
def show_beta(text: str) -> str:
    """Show text in beta's app."""
    return f"beta shows {text}"
