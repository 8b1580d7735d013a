"""MCP Apps names: the SDK's constants, a tool's ``_meta.ui`` and the hub's ``ui://``
namespacing (reversible, exact, never by prefix)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nativemcp.protocol import (
    APP_MIME_TYPE,
    APPS_EXTENSION,
    AppCsp,
    app_resource_meta,
    namespaced_ui_uri,
    split_ui_uri,
    tool_ui,
    tool_ui_meta,
    ui_visibility,
)


def test_the_extension_names_are_the_official_sdks() -> None:
    apps = pytest.importorskip("mcp.server.apps")
    assert (APPS_EXTENSION, APP_MIME_TYPE) == (apps.EXTENSION_ID, apps.APP_MIME_TYPE)


def test_a_tools_ui_meta_names_its_page_and_who_may_call_it() -> None:
    assert tool_ui_meta("ui://a/page.html") == {"resourceUri": "ui://a/page.html"}
    meta = {"ui": tool_ui_meta("ui://a/page.html", ["app", "app"])}
    assert meta["ui"]["visibility"] == ["app"]
    assert tool_ui(meta) == "ui://a/page.html"
    assert ui_visibility(meta) == ("app",)
    assert ui_visibility({"ui": {"resourceUri": "ui://a"}}) == ("model", "app")
    assert ui_visibility(None) == ("model", "app")
    assert tool_ui({"ui": {"resourceUri": "https://a/page.html"}}) is None


@pytest.mark.parametrize(
    ("uri", "visibility"),
    [
        ("https://a/page.html", None),
        ("ui://", None),
        ("uix://a", None),
        ("ui://a", []),
        ("ui://a", ["user"]),
    ],
)
def test_a_ui_that_is_not_a_ui_uri_or_a_bad_visibility_is_refused(
    uri: str, visibility: list[str] | None
) -> None:
    with pytest.raises(ValueError, match=r"ui://|visibility"):
        tool_ui_meta(uri, visibility)  # type: ignore[arg-type]


def test_an_app_resources_meta_says_what_its_sandbox_allows() -> None:
    assert app_resource_meta() == {"ui": {}}
    meta = app_resource_meta(
        csp=AppCsp(connect_domains=("https://api.example",)),
        permissions=["clipboardWrite"],
        prefers_border=False,
    )
    assert meta == {
        "ui": {
            "csp": {"connectDomains": ["https://api.example"]},
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": False,
        }
    }
    with pytest.raises(ValueError, match="unknown app permission"):
        app_resource_meta(permissions=["usb"])  # type: ignore[list-item]


def test_namespaced_ui_uris_go_back_to_their_own_server_exactly() -> None:
    servers = {"alpha", "alphabet"}
    assert namespaced_ui_uri("alpha", "ui://app.html") == "ui://alpha/app.html"
    assert split_ui_uri("ui://alpha/app.html", servers) == ("alpha", "ui://app.html")
    assert split_ui_uri("ui://alphabet/app.html", servers) == ("alphabet", "ui://app.html")
    # A prefix or a suffix of a server's name is no server.
    assert split_ui_uri("ui://alph/app.html", servers) is None
    assert split_ui_uri("ui://alphax/app.html", servers) is None
    assert split_ui_uri("ui://alpha", servers) is None
    assert split_ui_uri("ui://alpha/", servers) is None
    assert split_ui_uri("file://alpha/app.html", servers) is None
    assert namespaced_ui_uri("alpha", "file:///x") == "file:///x"


@given(
    server=st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True),
    rest=st.text(min_size=1, max_size=30),
)
def test_namespacing_is_reversible(server: str, rest: str) -> None:
    uri = "ui://" + rest
    assert split_ui_uri(namespaced_ui_uri(server, uri), {server}) == (server, uri)
