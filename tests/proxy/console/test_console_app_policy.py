"""The content security policy the console gives an MCP App: only the plain origins the
page declared, in the directives they were declared for; nothing by default."""

from __future__ import annotations

from nativemcp.proxy.console._apps import app_csp


def _directives(policy: str) -> dict[str, str]:
    parts = (item.strip().split(" ", 1) for item in policy.split(";"))
    return {part[0]: (part[1] if len(part) > 1 else "") for part in parts}


def test_an_app_that_declares_nothing_reaches_nothing() -> None:
    policy = _directives(app_csp(None))
    assert policy["sandbox"] == "allow-scripts"
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'none'"
    assert policy["frame-src"] == "'none'"
    assert policy["script-src"] == "'unsafe-inline'"
    assert app_csp({"ui": {}}) == app_csp(None) == app_csp({"ui": {"csp": "x"}})


def test_declared_origins_go_to_their_directives_only() -> None:
    meta = {
        "ui": {
            "csp": {
                "connectDomains": ["https://api.example.com", "http://127.0.0.1:8080"],
                "resourceDomains": ["https://*.cdn.example"],
            }
        }
    }
    policy = _directives(app_csp(meta))
    assert policy["connect-src"] == "https://api.example.com http://127.0.0.1:8080"
    assert policy["script-src"] == "'unsafe-inline' https://*.cdn.example"
    assert policy["img-src"] == "data: https://*.cdn.example"
    assert policy["frame-src"] == "'none'"


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
