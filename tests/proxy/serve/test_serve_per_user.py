"""serve acting for each user (``"grantScope": "user"``): every user's calls to an
OAuth-protected upstream go with that user's own grant, never another user's nor the
pool's, in both protocol eras, in either era's tasks too; a user with no grant is sent
to the upstream's sign-in through serve's own callback (a URL-mode elicitation; in a
2026-07-28 task, one of its input requests), and an upstream that trusts serve's
issuer takes an RFC 8693 exchange of the caller's token instead.

Serve's issuer is `_issuer` (real JWTs, JWKS over HTTP); the upstream is an MCP server
that requires its own issuer's tokens and says whose token came (`_user_upstream`);
the callers are the official SDK client. The tests read what the upstream received:
serve's tokens never reach it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from _issuer import Issuer, running_issuer
from _mcp_http import serving
from _oauth_server import Recording
from _task_client import Rpc, create_task, task_result
from _user_upstream import EXCHANGER_ID, EXCHANGER_SECRET, UpstreamIssuer, upstream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from nativemcp.proxy import WorkerPool, http_app
from nativemcp.proxy.cli import main
from nativemcp.proxy.external import UserServers, _per_user
from nativemcp.proxy.external._per_user import IDLE_CLOSE
from nativemcp.proxy.serve import Authorization
from nativemcp.proxy.tool_search import ToolProfile

pytestmark = [pytest.mark.anyio, pytest.mark.real_process, pytest.mark.anyio_backends("asyncio")]

AUDIENCE = "nativemcp-test"
Mode = Literal["legacy", "auto"]
EXCHANGE = {
    "grantType": "token_exchange",
    "clientId": EXCHANGER_ID,
    "clientSecret": EXCHANGER_SECRET,
    "issuer": "UPSTREAM",
}
"""The entry's ``oauth`` for an RFC 8693 exchange at the upstream's issuer."""


@asynccontextmanager
async def _served(
    oauth: dict[str, Any] | None = None,
    profile: ToolProfile | None = None,
    *,
    handshake_only: bool = False,
) -> AsyncIterator[tuple[Issuer, UpstreamIssuer, Recording, str]]:
    """Serve's issuer, the upstream's issuer, what the upstream received, and serve's
    base URL, serving one upstream ``up`` per user (under ``profile``; a 2025-11-25
    upstream when ``handshake_only``)."""
    async with (
        running_issuer() as issuer,
        upstream(issuer, handshake_only=handshake_only) as (url, up, recording),
    ):
        entry = {"url": url, "oauth": oauth or {}, "grantScope": "user"}
        if oauth is not None and oauth.get("issuer") == "UPSTREAM":
            entry["oauth"] = {**oauth, "issuer": up.base}
        pool = WorkerPool(builtins=[], mcp_servers={"up": entry}, timeout=30)
        auth = Authorization(issuer=issuer.url, audience=AUDIENCE)
        async with serving(http_app(pool, auth=auth, profile=profile)) as base:
            yield issuer, up, recording, base


class Browser:
    """A user's browser: signs in at the upstream as ``login`` and comes back to serve."""

    def __init__(self, login: str, lands_on: str | None = None) -> None:
        self.login = login
        self.lands_on = lands_on
        """The serve the way back lands on (a load balancer's pick), if not the one
        the redirect names."""
        self.visits: list[int] = []
        """The status serve's callback answered each visit with."""
        self.links: list[str] = []
        """The sign-in links the client was sent to."""

    async def visit(self, url: str) -> None:
        async with httpx2.AsyncClient() as http:
            signed_in = await http.get(f"{url}&login={self.login}")
            assert signed_in.status_code == 302, signed_in.text
            location = signed_in.headers["location"]
            if self.lands_on is not None:
                location = self.lands_on + location[location.index("/oauth/callback") :]
            back = await http.get(location)
        self.visits.append(back.status_code)

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        """The client's elicitation callback: a URL request is opened in the browser."""
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.links.append(params.url)
        await self.visit(params.url)
        return types.ElicitResult(action="accept")


@asynccontextmanager
async def _user(
    base: str, issuer: Issuer, subject: str, mode: Mode, browser: Browser | None
) -> AsyncIterator[tuple[Client, str]]:
    """An official SDK client signed in to serve as ``subject``, and its token."""
    token = issuer.token(subject)
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        callback = browser.elicit if browser is not None else None
        async with Client(transport, mode=mode, elicitation_callback=callback) as client:
            yield client, token


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _nothing_of(recording: Recording, *secrets: str) -> None:
    """The upstream received none of ``secrets``, and every MCP request it answered
    came with one of its own issuer's tokens."""
    for received in recording.received:
        assert not any(received.carries(secret) for secret in secrets), received
    bearers = [r.headers.get("authorization", "") for r in recording.received]
    assert any(b.startswith("Bearer up-access-") for b in bearers)
    assert all(not b or b.startswith("Bearer up-access-") for b in bearers)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_two_users_each_call_the_upstream_with_their_own_grant(mode: Mode) -> None:
    alice_browser, bob_browser = Browser("alice-upstream"), Browser("bob-upstream")
    async with _served() as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "alice", mode, alice_browser) as (alice, alice_token),
                _user(base, issuer, "bob", mode, bob_browser) as (bob, bob_token),
            ):
                # Nobody has connected yet: the one tool listed asks for consent.
                listed = [tool.name for tool in (await alice.list_tools()).tools]
                assert listed == ["needs_authorization"]
                signed_in = await alice.call_tool("needs_authorization", {})
                assert not signed_in.is_error, signed_in
                assert "authorized for you" in _text(signed_in)
                names = [tool.name for tool in (await bob.list_tools()).tools]
                assert "whoami" in names
                # Bob has no grant: he is asked, his call goes on after his consent.
                bobs = await bob.call_tool("whoami", {})
                alices = await alice.call_tool("whoami", {})
                bobs_again = await bob.call_tool("whoami", {})
    assert _text(alices) == "upstream user alice-upstream"
    assert _text(bobs) == _text(bobs_again) == "upstream user bob-upstream"
    # One consent each, through serve's callback, and no second one.
    assert up.authorizations == ["alice-upstream", "bob-upstream"]
    assert alice_browser.visits == bob_browser.visits == [200]
    _nothing_of(recording, alice_token, bob_token)
    # The upstream's issuer got no token of serve's either (registration, code, tokens).
    assert up.recording is not None and up.recording.received
    assert not any(r.carries(alice_token) or r.carries(bob_token) for r in up.recording.received)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_call_tool_meta_tool_calls_as_its_caller(mode: Mode) -> None:
    browsers = Browser("alice-upstream"), Browser("bob-upstream")
    async with _served(profile=ToolProfile(search=True)) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "alice", mode, browsers[0]) as (alice, alice_token),
                _user(base, issuer, "bob", mode, browsers[1]) as (bob, bob_token),
            ):
                signed_in = await alice.call_tool("call_tool", {"name": "up__needs_authorization"})
                assert not signed_in.is_error, signed_in
                alices = await alice.call_tool("call_tool", {"name": "up__whoami"})
                bobs = await bob.call_tool("call_tool", {"name": "up__whoami"})
    assert _text(alices) == "upstream user alice-upstream"
    assert _text(bobs) == "upstream user bob-upstream"
    assert up.authorizations == ["alice-upstream", "bob-upstream"]
    _nothing_of(recording, alice_token, bob_token)


async def test_a_task_calls_as_the_caller_who_started_it() -> None:
    browsers = Browser("alice-upstream"), Browser("bob-upstream")
    async with _served(profile=ToolProfile(search=True)) as (issuer, _up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "alice", "legacy", browsers[0]) as (alice, alice_token),
                _user(base, issuer, "bob", "legacy", browsers[1]) as (bob, bob_token),
            ):
                await alice.call_tool("call_tool", {"name": "up__needs_authorization"})
                await bob.call_tool("call_tool", {"name": "up__whoami"})
                results = []
                for client in (alice, bob):
                    created = await create_task(client, "call_tool", {"name": "up__whoami"})
                    results.append(await task_result(client, created["task"]["taskId"]))
    assert [_text(result) for result in results] == [
        "upstream user alice-upstream",
        "upstream user bob-upstream",
    ]
    _nothing_of(recording, alice_token, bob_token)


@asynccontextmanager
async def _extension_client(
    base: str, token: str, elicitation: dict[str, Any] | None = None
) -> AsyncIterator[Rpc]:
    """Raw 2026-07-28 requests declaring the Tasks extension (the official client does
    not speak it), signed in to serve with ``token``, its ``elicitation`` capability
    ``elicitation`` (form mode when None)."""
    headers = {"authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        yield Rpc(http, f"{base}/mcp", elicitation)


async def _first_signs_in(base: str, issuer: Issuer) -> str:
    """Alice signs in to the upstream, its tools are listed from then on; her token."""
    browser = Browser("alice-upstream")
    async with _user(base, issuer, "alice", "legacy", browser) as (alice, token):
        await alice.call_tool("needs_authorization", {})
    return token


def _task_text(task: dict[str, Any]) -> str:
    text: str = task["result"]["content"][0]["text"]
    return text


async def test_a_tasks_extension_task_calls_as_the_caller_who_started_it() -> None:
    # On 2026-07-28 the call runs in serve's background, after the request that created
    # the task was answered: it still goes out on its creator's own connection. (Serve
    # makes a task of a tool that declares task support, which only a 2025-11-25
    # upstream's listing can say: a 2026-07-28 tool has no ``execution``.)
    browsers = Browser("alice-upstream"), Browser("bob-upstream")
    async with _served(handshake_only=True) as (issuer, _up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "alice", "legacy", browsers[0]) as (alice, alice_token),
                _user(base, issuer, "bob", "legacy", browsers[1]) as (bob, bob_token),
            ):
                await alice.call_tool("needs_authorization", {})
                await bob.call_tool("whoami", {})
            async with (
                _extension_client(base, alice_token) as alice_rpc,
                _extension_client(base, bob_token) as bob_rpc,
            ):
                call = {"name": "whoami", "arguments": {}}
                created = [await rpc.result("tools/call", call) for rpc in (alice_rpc, bob_rpc)]
                done = [
                    await rpc.until(task["taskId"], "completed")
                    for rpc, task in zip((alice_rpc, bob_rpc), created, strict=True)
                ]
                # Each task is its creator's alone.
                others = await bob_rpc("tasks/get", {"taskId": created[0]["taskId"]})
    assert [task["resultType"] for task in created] == ["task", "task"], created
    assert [_task_text(task) for task in done] == [
        "upstream user alice-upstream",
        "upstream user bob-upstream",
    ]
    assert "error" in others and "result" not in others
    _nothing_of(recording, alice_token, bob_token)


async def test_a_tasks_extension_task_exchanges_its_callers_token() -> None:
    async with _served(EXCHANGE, handshake_only=True) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with _user(base, issuer, "dave", "legacy", None) as (dave, _):
                await dave.call_tool("needs_authorization", {})  # the tools are known
            erin_token = issuer.token("erin")
            async with _extension_client(base, erin_token) as erin:
                created = await erin.result("tools/call", {"name": "whoami", "arguments": {}})
                done = await erin.until(created["taskId"], "completed")
    # Erin's first call is the task's: her token, exchanged in the background.
    assert _task_text(done) == "upstream user erin"
    assert [form["subject_token"] for form in up.exchanges][-1:] == [erin_token]
    _nothing_of(recording, erin_token)


async def test_a_tasks_extension_task_asks_a_user_with_no_grant_in_its_input_requests() -> None:
    async with _served(handshake_only=True) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            alice_token = await _first_signs_in(base, issuer)
            carol_token = issuer.token("carol")
            async with _extension_client(base, carol_token, {"url": {}}) as carol:
                created = await carol.result("tools/call", {"name": "whoami", "arguments": {}})
                task_id = created["taskId"]
                waiting = await carol.until(task_id, "input_required")
                ((key, request),) = waiting["inputRequests"].items()
                browser = Browser("carol-upstream")
                await browser.visit(request["params"]["url"])
                answer = {key: {"action": "accept"}}
                await carol.result("tasks/update", {"taskId": task_id, "inputResponses": answer})
                done = await carol.until(task_id, "completed")
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "url"
    assert request["params"]["url"].startswith(up.base + "/authorize?")
    assert _task_text(done) == "upstream user carol-upstream"
    assert up.authorizations == ["alice-upstream", "carol-upstream"]
    assert browser.visits == [200]
    _nothing_of(recording, alice_token, carol_token)


async def test_a_tasks_extension_task_of_a_form_only_client_says_where_to_consent() -> None:
    async with _served(handshake_only=True) as (issuer, _up, recording, base):
        with anyio.fail_after(60):
            alice_token = await _first_signs_in(base, issuer)
            carol_token = issuer.token("carol")
            async with _extension_client(base, carol_token) as carol:  # form mode only
                call = {"name": "whoami", "arguments": {}}
                created = await carol.result("tools/call", call)
                refused = await carol.until(created["taskId"], "completed")
                text = _task_text(refused)
                browser = Browser("carol-upstream")
                await browser.visit(text[text.index("http") :])
                again = await carol.result("tools/call", call)
                done = await carol.until(again["taskId"], "completed")
    # The extension's rule: a tool error is a completed task, its result saying so.
    assert refused["result"]["isError"] is True
    assert "Open this address in a browser" in text
    assert _task_text(done) == "upstream user carol-upstream"
    assert browser.visits == [200]
    _nothing_of(recording, alice_token, carol_token)


async def test_run_code_calls_as_its_caller() -> None:
    browsers = Browser("alice-upstream"), Browser("bob-upstream")
    # A program's tools are those served when it starts: the first signs in, the
    # next calls the tools listed since.
    program = "print(await up__needs_authorization())"
    async with _served(profile=ToolProfile(code_mode=True)) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "alice", "legacy", browsers[0]) as (alice, alice_token),
                _user(base, issuer, "bob", "legacy", browsers[1]) as (bob, bob_token),
            ):
                signed_in = await alice.call_tool("run_code", {"code": program})
                alices = await alice.call_tool("run_code", {"code": "print(await up__whoami())"})
                bobs = await bob.call_tool("run_code", {"code": "print(await up__whoami())"})
    assert "authorized for you" in _text(signed_in)
    assert _text(alices).strip() == "upstream user alice-upstream"
    assert _text(bobs).strip() == "upstream user bob-upstream"
    assert up.authorizations == ["alice-upstream", "bob-upstream"]
    _nothing_of(recording, alice_token, bob_token)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_grant_revoked_mid_session_asks_the_user_again_during_the_call(
    mode: Mode,
) -> None:
    browser = Browser("alice-upstream")
    async with _served() as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with _user(base, issuer, "alice", mode, browser) as (alice, token):
                await alice.call_tool("needs_authorization", {})
                before = await alice.call_tool("whoami", {})
                up.revoke("alice-upstream")  # the access and the refresh token
                after = await alice.call_tool("whoami", {})
    assert _text(before) == _text(after) == "upstream user alice-upstream"
    assert up.authorizations == ["alice-upstream", "alice-upstream"]
    assert browser.visits == [200, 200]
    _nothing_of(recording, token)


async def test_a_client_that_cannot_elicit_gets_the_address_and_its_retry_goes_on() -> None:
    browser = Browser("carol-upstream")
    async with _served() as (issuer, _up, recording, base):
        with anyio.fail_after(60):
            async with _user(base, issuer, "carol", "legacy", None) as (carol, token):
                refused = await carol.call_tool("needs_authorization", {})
                assert refused.is_error
                text = _text(refused)
                address = text[text.index("http") :]
                assert "Open this address in a browser" in text
                # Called again before going there: the same address, at once.
                again = await carol.call_tool("needs_authorization", {})
                assert again.is_error and _text(again) == text
                await browser.visit(address)
                retried = await carol.call_tool("needs_authorization", {})
                whoami = await carol.call_tool("whoami", {})
                # The address is used once: a second visit is refused.
                await browser.visit(address)
    assert not retried.is_error, retried
    assert _text(whoami) == "upstream user carol-upstream"
    assert browser.visits == [200, 400]
    _nothing_of(recording, token)


async def test_a_forged_or_unknown_state_at_serves_callback_is_refused() -> None:
    async with _served() as (_issuer, _up, _recording, base), httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            unknown = await http.get(f"{base}/oauth/callback?code=x&state=nope")
            bare = await http.get(f"{base}/oauth/callback")
            posted = await http.post(f"{base}/oauth/callback?code=x&state=nope")
    assert unknown.status_code == bare.status_code == 400
    assert posted.status_code == 405
    assert "code" not in unknown.text.lower() or "used already" in unknown.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_token_exchange_gets_each_user_their_own_upstream_token_once(mode: Mode) -> None:
    async with _served(EXCHANGE) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with (
                _user(base, issuer, "dave", mode, None) as (dave, dave_token),
                _user(base, issuer, "erin", mode, None) as (erin, erin_token),
            ):
                first = await dave.call_tool("needs_authorization", {})
                assert not first.is_error, first
                daves = [_text(await dave.call_tool("whoami", {})) for _ in range(2)]
                erins = [_text(await erin.call_tool("whoami", {})) for _ in range(2)]
    assert daves == ["upstream user dave"] * 2
    assert erins == ["upstream user erin"] * 2
    # One exchange per user (the token is kept until it expires), of that user's token.
    assert [form["subject_token"] for form in up.exchanges] == [dave_token, erin_token]
    url = str(recording.received[0].path)
    for form in up.exchanges:
        assert form["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
        assert form["audience"] == form["resource"]
        assert form["resource"].endswith("/mcp") and url.startswith("/mcp")
    assert up.authorizations == []  # nobody was asked
    _nothing_of(recording, dave_token, erin_token)


async def test_a_per_user_server_is_refused_without_serves_oauth() -> None:
    pool = WorkerPool(
        builtins=[],
        mcp_servers={"up": {"url": "http://127.0.0.1:9/mcp", "oauth": {}, "grantScope": "user"}},
    )
    async with pool:
        with pytest.raises(ValueError, match="needs OAuth"):
            http_app(pool)
        with pytest.raises(ValueError, match="grantScope"):
            http_app(pool, token="static-secret")


async def test_a_call_with_no_authenticated_caller_says_the_server_acts_for_each_user() -> None:
    pool = WorkerPool(
        builtins=[],
        mcp_servers={"up": {"url": "http://127.0.0.1:9/mcp", "oauth": {}, "grantScope": "user"}},
    )
    async with pool:
        response = await pool.call_tool("up__needs_authorization", {})
    assert response.result is not None and response.result.is_error
    assert "acts for each user" in str(response.result.content[0])


async def test_the_console_shows_which_users_granted_an_upstream_and_no_token() -> None:
    from nativemcp.proxy.console._app import create_console_app
    from nativemcp.proxy.console._catalog import ConsoleCatalog

    token = "t0ken-for-the-tests-0123456789"
    async with running_issuer() as issuer, upstream(issuer) as (url, up, _recording):
        entry = {"url": url, "oauth": {}, "grantScope": "user"}
        pool = WorkerPool(builtins=[], mcp_servers={"up": entry}, timeout=30)
        auth = Authorization(issuer=issuer.url, audience=AUDIENCE)
        async with serving(http_app(pool, auth=auth)) as base, anyio.create_task_group() as flows:
            with anyio.fail_after(60):
                for subject in ("alice", "bob"):
                    browser = Browser(f"{subject}-upstream")
                    # The first signs in; the second is asked at his first call.
                    tool = "needs_authorization" if subject == "alice" else "whoami"
                    async with _user(base, issuer, subject, "legacy", browser) as (client, _):
                        await client.call_tool(tool, {})
                app = create_console_app(await ConsoleCatalog.load(pool), token, flows)
                transport = httpx2.ASGITransport(app=app)
                console = f"http://127.0.0.1/{token}/"
                async with httpx2.AsyncClient(transport=transport, base_url=console) as http:
                    answer = await http.get("api/tools")
            flows.cancel_scope.cancel()
    (server,) = answer.json()["servers"]
    grants = server["grants"]
    assert grants["grantScope"] == "user"
    assert sorted(g["user"] for g in grants["users"]) == [
        f"{issuer.url}#alice",
        f"{issuer.url}#bob",
    ]
    assert all(g["resource"] == url and g["authorized"] for g in grants["users"])
    # Nothing of a grant but what it is: no upstream token reaches the page.
    assert "up-access-" not in answer.text and "up-refresh-" not in answer.text
    assert len(up.users) == 4  # each user's access and refresh token, none shown


async def test_an_idle_users_connection_is_closed_and_their_next_call_reconnects_unasked() -> None:
    browser = Browser("alice-upstream")
    async with running_issuer() as issuer, upstream(issuer) as (url, up, recording):
        entry = {"url": url, "oauth": {}, "grantScope": "user"}
        pool = WorkerPool(builtins=[], mcp_servers={"up": entry}, timeout=30)
        auth = Authorization(issuer=issuer.url, audience=AUDIENCE)
        async with serving(http_app(pool, auth=auth)) as base:
            with anyio.fail_after(60):
                async with _user(base, issuer, "alice", "legacy", browser) as (alice, token):
                    await alice.call_tool("needs_authorization", {})
                    handle = pool.handles["up"]
                    assert isinstance(handle, UserServers)
                    assert handle.users() == [(issuer.url, "alice")]
                    # Not idle long enough: kept.
                    assert handle.sweep(time.monotonic()) == []
                    later = time.monotonic() + IDLE_CLOSE + 1
                    assert handle.sweep(later) == [(issuer.url, "alice")]
                    assert handle.users() == []
                    again = await alice.call_tool("whoami", {})
    assert _text(again) == "upstream user alice-upstream"
    assert up.authorizations == ["alice-upstream"]  # the kept grant: not asked again
    assert browser.visits == [200]
    _nothing_of(recording, token)


async def test_a_user_logged_out_by_the_operator_is_asked_again_not_served_on_held_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_per_user, "GRANT_LOOK_EVERY", 0.0)  # a look at every call
    browser, bobs = Browser("alice-upstream"), Browser("bob-upstream")
    data = tmp_path / "data"
    async with running_issuer() as issuer, upstream(issuer) as (url, up, recording):
        entry = {"url": url, "oauth": {}, "grantScope": "user"}
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"up": entry}}))
        pool = WorkerPool(data_dir=data, builtins=[], mcp_servers={"up": entry}, timeout=30)
        auth = Authorization(issuer=issuer.url, audience=AUDIENCE)
        async with serving(http_app(pool, auth=auth)) as base:
            with anyio.fail_after(60):
                async with (
                    _user(base, issuer, "alice", "legacy", browser) as (alice, token),
                    _user(base, issuer, "bob", "legacy", bobs) as (bob, bob_token),
                ):
                    await alice.call_tool("needs_authorization", {})
                    first = await alice.call_tool("whoami", {})
                    await bob.call_tool("whoami", {})  # asked, as a new user is
                    # The operator, in another process's place: the rows are deleted.
                    logout = ["auth", "logout", "--user", "alice", "--data-dir", str(data)]
                    logout += ["--mcp-config", str(config)]
                    assert await anyio.to_thread.run_sync(main, logout) == 0
                    again = await alice.call_tool("whoami", {})
                    # Bob's grant, kept, is his alone: it does not keep alice served,
                    # and hers gone does not end his.
                    bobs_answer = await bob.call_tool("whoami", {})
    assert _text(first) == _text(again) == "upstream user alice-upstream"
    assert _text(bobs_answer) == "upstream user bob-upstream"
    # Asked again after the logout, not served on the tokens serve still held.
    assert browser.visits == [200, 200]
    assert bobs.visits == [200]
    assert up.authorizations == ["alice-upstream", "bob-upstream", "alice-upstream"]
    _nothing_of(recording, token, bob_token)


async def test_an_exchanged_token_past_its_expiry_is_exchanged_again() -> None:
    async with _served(EXCHANGE) as (issuer, up, _recording, base):
        up.lifetime = 10  # inside the 30 s kept back for clocks: never reused
        with anyio.fail_after(60):
            async with _user(base, issuer, "dave", "legacy", None) as (dave, _token):
                await dave.call_tool("needs_authorization", {})
                before = len(up.exchanges)
                answer = await dave.call_tool("whoami", {})
    assert _text(answer) == "upstream user dave"
    assert len(up.exchanges) > before  # the call's own request got a new token


async def test_a_refused_token_exchange_is_a_tool_error_naming_the_issuers_answer() -> None:
    oauth = {**EXCHANGE, "clientSecret": "not-the-secret"}
    async with _served(oauth) as (issuer, up, recording, base):
        with anyio.fail_after(60):
            async with _user(base, issuer, "dave", "legacy", None) as (dave, token):
                refused = await dave.call_tool("needs_authorization", {})
    assert refused.is_error
    assert "the issuer refused the token exchange: invalid_client" in _text(refused)
    assert "not-the-secret" not in _text(refused)
    assert [form["subject_token"] for form in up.exchanges] == [token]
    assert not any(received.carries(token) for received in recording.received)


@asynccontextmanager
async def _two_replicas(
    database_url: str | None, tmp_path: Path, *, handshake_only: bool = False
) -> AsyncIterator[tuple[Issuer, UpstreamIssuer, Recording, str, str]]:
    """Serve's issuer, the upstream's issuer, what the upstream received, and two
    serves' base URLs, each serving ``up`` per user over one grant place: one data
    folder for SQLite (one file both read), or one PostgreSQL (the Tasks extension's
    tasks in it too). A 2025-11-25 upstream when ``handshake_only``."""
    async with (
        running_issuer() as issuer,
        upstream(issuer, handshake_only=handshake_only) as (url, up, recording),
    ):
        entry = {"url": url, "oauth": {}, "grantScope": "user"}
        auth = Authorization(issuer=issuer.url, audience=AUDIENCE)

        def replica() -> WorkerPool:
            return WorkerPool(
                builtins=[],
                mcp_servers={"up": entry},
                timeout=30,
                data_dir=tmp_path,
                database_url=database_url,
            )

        async with (
            serving(http_app(replica(), auth=auth)) as first,
            serving(http_app(replica(), auth=auth)) as second,
        ):
            yield issuer, up, recording, first, second


async def test_a_user_who_consented_through_one_replica_is_called_unasked_through_another(
    database_url: str | None, tmp_path: Path
) -> None:
    browser = Browser("alice-upstream")
    async with _two_replicas(database_url, tmp_path) as (issuer, up, recording, first, second):
        with anyio.fail_after(60):
            async with _user(second, issuer, "bob", "legacy", None) as (bob, _):
                before = [tool.name for tool in (await bob.list_tools()).tools]
            async with _user(first, issuer, "alice", "legacy", browser) as (alice, token):
                await alice.call_tool("needs_authorization", {})
            # Both replicas started before the consent, and nobody connected to the
            # upstream through the second: it learns the tools the first listed.
            async with _user(second, issuer, "alice", "legacy", None) as (again, _):
                after = [tool.name for tool in (await again.list_tools()).tools]
                answer = await again.call_tool("whoami", {})
    assert before == ["needs_authorization"]  # nobody had connected anywhere
    assert after == ["whoami"]
    assert not answer.is_error, answer  # no client elicitation: none was needed
    assert _text(answer) == "upstream user alice-upstream"
    assert up.authorizations == ["alice-upstream"]
    _nothing_of(recording, token)


async def test_a_consent_asked_through_one_replica_is_finished_by_a_callback_at_another(
    database_url: str | None, tmp_path: Path
) -> None:
    async with _two_replicas(database_url, tmp_path) as (issuer, up, recording, first, second):
        # The call waits on the first; the browser's way back lands on the second.
        browser = Browser("alice-upstream", lands_on=second)
        with anyio.fail_after(60):
            async with _user(first, issuer, "alice", "legacy", browser) as (alice, token):
                signed_in = await alice.call_tool("needs_authorization", {})
                answer = await alice.call_tool("whoami", {})
            assert len(browser.links) == 1  # asked once
            # The sign-in link is used once, whichever replica it comes back to.
            for lands_on in (first, second):
                browser.lands_on = lands_on
                await browser.visit(browser.links[0])
    assert not signed_in.is_error, signed_in
    assert _text(answer) == "upstream user alice-upstream"
    # Signed in at the upstream three times; serve took the first way back only.
    assert up.authorizations == ["alice-upstream"] * 3
    assert browser.visits == [200, 400, 400]
    _nothing_of(recording, token)


async def test_in_postgresql_a_task_asking_consent_is_followed_and_answered_at_another_replica(
    postgres_url: str, tmp_path: Path
) -> None:
    replicas = _two_replicas(postgres_url, tmp_path, handshake_only=True)
    async with replicas as (issuer, up, recording, first, second):
        # The task runs on the first; the client's next requests and the browser's
        # way back land on the second.
        browser = Browser("carol-upstream", lands_on=second)
        with anyio.fail_after(60):
            alice_token = await _first_signs_in(first, issuer)  # the first knows the tools
            carol_token = issuer.token("carol")
            async with (
                _extension_client(first, carol_token, {"url": {}}) as at_first,
                _extension_client(second, carol_token, {"url": {}}) as at_second,
            ):
                created = await at_first.result("tools/call", {"name": "whoami", "arguments": {}})
                task_id = created["taskId"]
                waiting = await at_second.until(task_id, "input_required")
                ((key, request),) = waiting["inputRequests"].items()
                await browser.visit(request["params"]["url"])
                answer = {"taskId": task_id, "inputResponses": {key: {"action": "accept"}}}
                await at_second.result("tasks/update", answer)
                done = await at_second.until(task_id, "completed")
    assert _task_text(done) == "upstream user carol-upstream"
    assert up.authorizations == ["alice-upstream", "carol-upstream"]
    assert browser.visits == [200]
    _nothing_of(recording, alice_token, carol_token)
