"""The OAuth resource server's pure parts: the scope map's rules, the resource and
metadata URLs, the challenge header and the caller read from an ASGI scope."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from nativemcp.protocol.wire import Call
from nativemcp.proxy.serve import Authorization, Caller, ScopeMap, caller_from_scope
from nativemcp.proxy.serve.auth._resource_server import challenge, metadata_url, resource_url


def test_a_tool_needs_the_scopes_of_every_rule_its_full_name_matches() -> None:
    scopes = ScopeMap(["builtin_browser__*=browser", "*__navigate=web,browser", "x=y"])
    assert scopes.required("builtin_browser__navigate") == {"browser", "web"}
    assert scopes.required("builtin_browser__snapshot") == {"browser"}
    # Globs match whole names, case-sensitively: a prefix or a lookalike is not a match.
    assert scopes.required("builtin_browser_x") == frozenset()
    assert scopes.required("BUILTIN_BROWSER__snapshot") == frozenset()
    assert scopes.required("xx") == frozenset()
    assert scopes.required("builtin_planning__create_goal") == frozenset()
    assert scopes.scopes_supported == ["browser", "web", "y"]
    assert scopes.missing("builtin_browser__navigate", ["browser"]) == ["web"]
    assert scopes.missing("builtin_browser__navigate", ["web", "browser", "extra"]) == []
    # A granted scope counts only when it is the required one exactly.
    assert scopes.missing("builtin_browser__snapshot", ["browse", "browsers", "BROWSER"]) == [
        "browser"
    ]
    assert scopes.refusal("builtin_browser__navigate", ["browser", "web"]) is None
    refusal = scopes.refusal("builtin_browser__navigate", [])
    assert refusal is not None and "'browser web'" in refusal


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ("noequals", "GLOB=SCOPE"),
        ("=scope", "GLOB=SCOPE"),
        ("tool=", "names no scope"),
        ("tool= , ", "names no scope"),
        ("tool=a b", "not an OAuth scope"),
        ('tool=a"b', "not an OAuth scope"),
        ("tool=a\\b", "not an OAuth scope"),
    ],
)
def test_a_scope_rule_that_does_not_parse_says_why(rule: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        ScopeMap([rule])


def _scope(path: str, host: str = "mcp.example.com:8000", **extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "scheme": "http",
        "path": path,
        "headers": [(b"host", host.encode())],
        **extra,
    }


def test_the_resource_and_its_metadata_url_follow_the_route() -> None:
    auth = Authorization(issuer="https://idp", audience="a")
    assert resource_url(auth, _scope("/mcp")) == "http://mcp.example.com:8000/mcp"
    assert resource_url(auth, _scope("/mcp/planning")) == "http://mcp.example.com:8000/mcp/planning"
    metadata = "/.well-known/oauth-protected-resource/mcp/planning"
    assert resource_url(auth, _scope(metadata)) == "http://mcp.example.com:8000/mcp/planning"
    # A Host that could break out of the quoted header is not echoed.
    assert resource_url(auth, _scope("/mcp", host='evil"x')) == "http://localhost/mcp"
    assert (
        metadata_url("https://mcp.example.com/mcp/planning")
        == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/planning"
    )
    public = Authorization(issuer="https://idp", audience="a", resource_url="https://hub/mcp/")
    assert resource_url(public, _scope("/mcp/planning")) == "https://hub/mcp/planning"
    with pytest.raises(ValueError, match="http"):
        Authorization(issuer="https://idp", audience="a", resource_url="hub/mcp")
    with pytest.raises(ValueError, match="both an issuer and an audience"):
        Authorization(issuer="https://idp", audience="")


def test_a_challenge_quotes_each_parameter() -> None:
    header = challenge(
        "https://h/.well-known/oauth-protected-resource/mcp",
        error="insufficient_scope",
        description='needs "a"',
        scopes=["a", "b"],
    )
    assert header == (
        b'Bearer error="insufficient_scope", error_description="needs a", scope="a b", '
        b'resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"'
    )


def test_the_caller_is_read_from_the_authenticated_user_of_the_scope() -> None:
    token = AccessToken(
        token="t",
        client_id="app",
        scopes=["a"],
        subject="ada",
        claims={"iss": "https://idp"},
    )
    caller = caller_from_scope({"user": AuthenticatedUser(token)})
    assert caller == Caller(
        subject="ada", client_id="app", issuer="https://idp", scopes=frozenset({"a"})
    )
    assert caller_from_scope({}) is None
    assert caller_from_scope({"user": object()}) is None


def test_the_caller_rides_the_call_frame_and_an_older_frame_reads_as_nobody() -> None:
    who = Caller(subject="ada", client_id="app", issuer="https://idp", scopes=frozenset({"a"}))
    frame = msgspec.msgpack.encode(Call(id=1, tool="t", arguments={}, caller=who))
    assert msgspec.msgpack.decode(frame, type=Call).caller == who
    older = msgspec.msgpack.encode(["call", 1, "t", {}, False, None, None, False, None])
    assert msgspec.msgpack.decode(older, type=Call).caller is None
