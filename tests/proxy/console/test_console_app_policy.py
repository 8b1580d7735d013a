"""The content security policy the console gives an MCP App: only the plain origins the
page declared, in the directives they were declared for; the specification's restrictive
default otherwise. And the permissions it asked for, as permission policy features."""

from __future__ import annotations

from nativemcp.proxy.console._apps import app_allow, app_csp


def _directives(policy: str) -> dict[str, str]:
    parts = (item.strip().split(" ", 1) for item in policy.split(";"))
    return {part[0]: (part[1] if len(part) > 1 else "") for part in parts}


def test_an_app_that_declares_nothing_reaches_nothing() -> None:
    policy = _directives(app_csp(None))
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'none'"
    assert policy["frame-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["object-src"] == "'none'"
    # 'self' is the sandbox origin, which serves nothing but its proxy.
    assert policy["script-src"] == "'self' 'unsafe-inline'"
    assert policy["img-src"] == "'self' data:"
    assert app_csp({"ui": {}}) == app_csp(None) == app_csp({"ui": {"csp": "x"}})


def test_declared_origins_go_to_their_directives_only() -> None:
    meta = {
        "ui": {
            "csp": {
                "connectDomains": ["https://api.example.com", "http://127.0.0.1:8080"],
                "resourceDomains": ["https://*.cdn.example"],
                "baseUriDomains": ["https://base.example"],
            }
        }
    }
    policy = _directives(app_csp(meta))
    assert policy["connect-src"] == "https://api.example.com http://127.0.0.1:8080"
    assert policy["script-src"] == "'self' 'unsafe-inline' https://*.cdn.example"
    assert policy["img-src"] == "'self' data: https://*.cdn.example"
    assert policy["frame-src"] == "'none'"
    assert policy["base-uri"] == "https://base.example"


def test_a_value_that_is_not_a_plain_origin_is_dropped() -> None:
    bad = [
        "https://a.example; script-src *",
        "https://a.example 'unsafe-eval'",
        "*",
        "javascript:",
        "data:",
        "https://a.example/path",
        "ftp://a.example",
        "https://",
        " https://a.example",
        "https://a.example:123456",
    ]
    policy = _directives(app_csp({"ui": {"csp": {"connectDomains": bad}}}))
    assert policy["connect-src"] == "'none'"
    assert "unsafe-eval" not in app_csp({"ui": {"csp": {"resourceDomains": bad}}})


def test_permissions_asked_for_become_their_features_and_others_are_dropped() -> None:
    asked: dict[str, object] = {"clipboardWrite": {}, "camera": {}, "usb": {}, "x; camera *": {}}
    assert app_allow({"ui": {"permissions": asked}}) == ["camera", "clipboard-write"]
    assert app_allow(None) == app_allow({"ui": {"permissions": ["camera"]}}) == []
