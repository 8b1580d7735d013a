"""A remote server that serve calls as each of its users (``"grantScope": "user"``).

`UserServers` is the pool's handle for such an entry. It holds no connection of its
own: each user serve authenticated (the verified issuer and subject of the call's
`Caller`) gets a connection of their own, an `ExternalServer` whose OAuth grant is
that user's, kept apart from every other user's and from the pool's (`auth login`).

A user with no grant is asked for consent: the SDK's provider makes the authorization
request (PKCE, state) with serve's callback as its redirect URI, `Consents` keeps it
bound to the user and the call, and the call sends the user there with a URL-mode
elicitation (on 2026-07-28, serve makes it an input request). Once the browser is back
at serve's callback the connection is made and the call goes on; a client that cannot
elicit gets a tool error with the address, and its retry goes on once the user has been
there. With ``"grantType": "token_exchange"`` nobody is asked: the caller's token is
exchanged (``oauth/_token_exchange``). A user whose grant an operator deleted
(``auth logout --user``, at any process) is asked again at their next call once
`GRANT_LOOK_EVERY` passed, not served on the tokens their connection still holds.

Until a first user connects, the server's tools are not known: it lists one tool,
``needs_authorization``, whose call asks for the caller's consent and then lists the
server's tools. A connection's tool list is kept beside the grants (`ToolRows`), so
every serve process sharing them (``--workers N``, replicas) lists the server's tools
once any process's connection listed them: read when the handle starts, before the
pool lists or looks up tools (`freshen`), at a call while only the sign-in tool is
known, and every `SWEEP_EVERY` seconds until then. A user's connection that lists
other tools (the upstream changed) replaces the list here and in the row.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
import anyio.to_thread

from nativemcp.protocol import (
    NativeMCPResponse,
    Tool,
    text_response,
    tool_error_response,
)
from nativemcp.workers import ServerStartError

from .._handle import CallOptions, answer_client_request, call_deadline
from ._external_handle import ExternalHandle
from ._mcp_config import ExternalServerSpec
from ._server import ExternalServer
from .oauth import (
    UNAVAILABLE_TOOL,
    Consent,
    Consents,
    GrantPlace,
    ServerAuthorization,
    ToolRows,
    UserKey,
    describe_grant,
    first_of,
    user_key,
)

_logger = logging.getLogger("nativemcp.external")

__all__ = ["UserServers", "sign_in_tool"]

CLOSE_WAIT: Final = 10.0
"""Seconds `UserServers.aclose` waits for the users' connections to end."""
IDLE_CLOSE: Final = 900.0
"""Seconds a user's connection lives on unused; their grant stays kept, and their next
call connects again without asking them (a gateway for a hundred people holds the
connections of those at work, not of everyone who ever called)."""
GRANT_LOOK_EVERY: Final = 5.0
"""Seconds between looks, at a user's calls, whether their grant is still kept: a user
``nativemcp auth logout --user`` logged out (the rows deleted, the tokens revoked) is
asked again within that, not served on the tokens this process still holds."""
SWEEP_EVERY: Final = 60.0
"""Seconds between looks for idle connections."""


def sign_in_tool(server: str) -> Tool:
    """The one tool a per-user server lists before anyone has connected."""
    return Tool(
        name=UNAVAILABLE_TOOL,
        description=(
            f"MCP server {server!r} acts for each user with their own authorization: "
            "call this to authorize it (you are sent to its sign-in page), then list "
            "its tools"
        ),
        input_schema={"type": "object", "properties": {}},
    )


@dataclass(eq=False)
class _Session:
    """One user's connection, and where its consent stands."""

    server: ExternalServer
    subject_token: str | None = None
    """The caller's token at their latest call (for a token exchange)."""
    consent: Consent | None = None
    asked: anyio.Event = field(default_factory=anyio.Event)
    """Set when the provider opens a consent for the user (then replaced by a new one,
    for the next: a grant refused later, mid-session, asks again)."""
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    """Calls running on the connection now (an idle one has none)."""
    started: anyio.Event = field(default_factory=anyio.Event)
    """Set when the connection is ready, or its start failed or ended."""
    failure: str | None = None
    grant_seen: float = field(default_factory=time.monotonic)
    """When the user's grant was last seen kept (`GRANT_LOOK_EVERY`)."""

    def ready(self) -> bool:
        return self.started.is_set() and self.failure is None and self.waiting() is None

    def waiting(self) -> str | None:
        return self.server.needs_authorization


class UserServers(ExternalHandle):
    """The handle of an entry with ``"grantScope": "user"``: a connection per user.

    Args:
        spec: the entry (an HTTP or SSE server with OAuth).
        make: makes one user's `ExternalServer` given its authorization.
        grants: where the pool keeps grants; each user's are rows of their own there
            (keyed by `user_key` of the caller's issuer and subject).
        consents: the pending consents of serve's callback (`Consents`).
    """

    def __init__(
        self,
        spec: ExternalServerSpec,
        *,
        make: Callable[[ServerAuthorization], ExternalServer],
        grants: GrantPlace,
        consents: Consents,
    ) -> None:
        assert spec.oauth is not None and spec.url is not None  # checked when read
        self.spec = spec
        self.name = spec.name
        self.description = ""
        self.default_timeout = spec.timeout
        self.on_resource_updated: Any = None
        self.consents = consents
        self._make = make
        self._grants = grants
        self._rows = ToolRows(grants)
        self._signing_in: Final = [sign_in_tool(spec.name)]
        self._tools: list[Tool] = self._signing_in
        self._sessions: dict[UserKey, _Session] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self._stop = anyio.Event()
        self._finished = anyio.Event()

    @property
    def tools(self) -> list[Tool]:
        """The tools a user's connection listed, here or at another process sharing
        the grants (the sign-in tool before)."""
        return self._tools

    def users(self) -> list[UserKey]:
        """The users connected to the server now."""
        return [user for user, session in self._sessions.items() if session.ready()]

    async def granted(self) -> list[dict[str, Any]]:
        """Each user's grant for the server, as ``auth status`` shows it (never a
        token), the most recently written first; read off the event loop."""
        url = self.spec.url
        grants = await anyio.to_thread.run_sync(
            functools.partial(self._grants.find, None, url, every_user=True)
        )
        return [describe_grant(grant) for grant in grants if grant.key.user is not None]

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the users' connections until `aclose` (nothing connects at start),
        closing idle ones (`sweep`) every `SWEEP_EVERY` seconds."""
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                await self.freshen()
                task_status.started()
                while not self._stop.is_set():
                    with anyio.move_on_after(SWEEP_EVERY):
                        await self._stop.wait()
                    self.sweep(time.monotonic())
                    if not self._stop.is_set():
                        await self.freshen()
                group.cancel_scope.cancel()
        finally:
            self._group = None
            self._finished.set()

    async def freshen(self) -> bool:
        """While only the sign-in tool is known: the tools another process's connection
        listed, if it kept them (read in a thread); whether the tools changed. A row
        that cannot be read or used is logged, and the sign-in tool stays."""
        if self._tools is not self._signing_in:
            return False
        url = self.spec.url
        assert url is not None
        try:
            known = await anyio.to_thread.run_sync(self._rows.read, self.name, url)
        except Exception as exc:  # a look in passing: the database may be away a while
            _logger.warning("MCP server %r: reading its kept tools failed: %s", self.name, exc)
            return False
        # Another process's entry may allow other tools: this one's filters decide here.
        tools = [t for t in known.tools if self.spec.allows(t.name)] if known else []
        if not tools or self._tools is not self._signing_in:
            return False
        assert known is not None
        self._tools, self.description = tools, known.instructions
        return True

    async def _listed(self, session: _Session) -> None:
        """A user's connection is ready: its tools, if they are other than known, are
        the server's now, here and for every process sharing the grants."""
        tools = list(session.server.tools)
        if not tools or tools == self._tools:
            return
        self._tools, self.description = tools, session.server.description
        url = self.spec.url
        assert url is not None
        write = functools.partial(self._rows.write, self.name, url, tools, self.description)
        try:
            await anyio.to_thread.run_sync(write)
        except Exception as exc:  # this process lists them still; others learn later
            _logger.warning("MCP server %r: keeping its tools failed: %s", self.name, exc)

    def sweep(self, now: float) -> list[UserKey]:
        """Close the connections unused for `IDLE_CLOSE` seconds before ``now`` (their
        grants stay kept); the users whose connection was closed."""
        idle = [
            (user, session)
            for user, session in self._sessions.items()
            if session.calls == 0 and session.ready() and now - session.last_used > IDLE_CLOSE
        ]
        for user, session in idle:
            self._drop(user, session)
        return [user for user, _ in idle]

    async def aclose(self) -> None:
        """Close every user's connection, then stop (shielded, bounded, idempotent)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT):
            sessions, self._sessions = list(self._sessions.values()), {}
            for session in sessions:
                await session.server.aclose()
            self._stop.set()
            if self._group is not None:
                await self._finished.wait()

    # -- one user's connection ---------------------------------------------------------

    def _session(self, user: UserKey) -> _Session:
        session = self._sessions.get(user)
        if session is not None and (session.failure is not None or session.waiting()):
            # A connection that failed or gave up on consent: the next call starts over.
            self._drop(user, session)
            session = None
        if session is None:
            if self._group is None:
                raise ServerStartError(f"MCP server {self.name!r} is closed", server=self.name)
            session = self._new_session(user)
            self._sessions[user] = session
            self._group.start_soon(self._run, session)
        return session

    def _new_session(self, user: UserKey) -> _Session:
        spec = self.spec
        assert spec.oauth is not None and spec.url is not None
        holder: list[_Session] = []

        async def redirect(authorization_url: str) -> str | None:
            session = holder[0]
            consent = await self.consents.open(user, self.name, authorization_url)
            session.consent = consent
            opened, session.asked = session.asked, anyio.Event()
            opened.set()
            return await consent.wait()

        authorization = ServerAuthorization(
            self.name,
            spec.url,
            spec.oauth,
            self._grants,
            redirect,
            user=user_key(*user),
            redirect_uri=self.consents.redirect_uri,
            subject_token=lambda: holder[0].subject_token,
        )
        session = _Session(self._make(authorization))
        holder.append(session)
        return session

    async def _run(self, session: _Session) -> None:
        group = self._group
        assert group is not None
        try:
            await group.start(session.server.run)
        except ServerStartError as exc:
            session.failure = str(exc)
        except Exception as exc:  # the top of this user's task: it must not end the pool
            _logger.warning("MCP server %r: a user's connection failed: %s", self.name, exc)
            session.failure = f"{type(exc).__name__}: {exc}"
        finally:
            session.started.set()
        if session.ready():
            await self._listed(session)

    def _drop(self, user: UserKey, session: _Session) -> None:
        self._sessions.pop(user, None)
        if self._group is not None:
            self._group.start_soon(session.server.aclose)

    # -- calls -----------------------------------------------------------------------

    async def _connected(
        self, tool: str, options: CallOptions
    ) -> _Session | NativeMCPResponse[Any]:
        """The caller's ready connection, or the tool error that says why there is none
        (no caller, no consent, a failed start)."""
        caller = options.caller
        if caller is None:
            return tool_error_response(
                f"MCP server {self.name!r} acts for each user ('grantScope': 'user'): it "
                "is called through serve with OAuth (serve --auth-issuer), as the user "
                "serve authenticated"
            )
        user: UserKey = (caller.issuer or "", caller.subject)
        session = self._session(user)
        if options.caller_token is not None:
            session.subject_token = options.caller_token.reveal()
        with call_deadline(self.name, tool, options.limit):
            if not session.started.is_set() and not _pending(session.consent):
                await first_of(session.started, session.asked)
            consent = session.consent
            if not session.started.is_set() and consent is not None:
                # Back from the browser already (here or at another process, though
                # not yet taken): the provider is trading the code.
                if not await consent.came_back():
                    refused = await self._ask(consent, tool, options)
                    if refused is not None:
                        return refused
                await session.started.wait()
        if session.failure is not None or session.waiting() is not None:
            self._drop(user, session)
            return tool_error_response(
                f"MCP server {self.name!r} is not connected for you: "
                f"{session.failure or session.waiting()}; call again to start over"
            )
        if not await self._still_granted(user, session):
            # Logged out by an operator: this connection's tokens are not to be used
            # again; a new one asks the user, as a first call does.
            _logger.info("MCP server %r: a user's grant is gone; asking again", self.name)
            self._drop(user, session)
            return await self._connected(tool, options)
        return session

    async def _still_granted(self, user: UserKey, session: _Session) -> bool:
        """Whether ``user``'s consented grant is still kept, looked at most every
        `GRANT_LOOK_EVERY` seconds (read in a thread; a failed read keeps the
        connection: the issuer still decides on its tokens)."""
        now = time.monotonic()
        assert self.spec.oauth is not None
        if self.spec.oauth.grant != "authorization_code" or now - session.grant_seen < (
            GRANT_LOOK_EVERY
        ):
            return True  # a token exchange's rows come and go with the caller's token
        find = functools.partial(self._grants.find, user_key(*user), self.spec.url)
        try:
            kept = bool(await anyio.to_thread.run_sync(find))
        except Exception as exc:  # the database away a while: the issuer still decides
            _logger.warning("MCP server %r: reading a user's grant failed: %s", self.name, exc)
            kept = True
        if kept:
            session.grant_seen = now
        return kept

    async def _ask(
        self, consent: Consent, tool: str, options: CallOptions
    ) -> NativeMCPResponse[Any] | None:
        """Send the user to the consent page (URL-mode elicitation); the tool error of
        a client that cannot go, or of a user who declined (None: they went)."""
        params = {
            "mode": "url",
            "message": (
                f"{self.name} needs your authorization to act for you: sign in on the page "
                "this opens (the link is yours alone: whoever signs in there grants it to "
                "you); the call goes on when you are back"
            ),
            "url": consent.url,
            "elicitationId": consent.id,
        }
        result, error, _ = await answer_client_request(
            options.on_request, "elicitation/create", params
        )
        if error is not None:
            return tool_error_response(
                f"MCP server {self.name!r} needs your authorization to call {tool!r}, and "
                f"this client cannot open a page for you ({error}). Open this address in "
                f"a browser and sign in, then call {tool!r} again: {consent.url}"
            )
        action = result.get("action") if isinstance(result, dict) else None
        if action != "accept":
            return tool_error_response(
                f"MCP server {self.name!r} was not authorized ({action or 'no answer'}): "
                f"{tool!r} was not called; call it again to be asked again"
            )
        return None

    async def call(
        self, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Call ``tool`` as the caller of ``options``, on their own connection (asking
        for their consent first where they have no grant).

        Raises:
            CallTimeout: no answer (or no consent) within the time limit.
            ServerCrashed: the user's connection ended during the call.
        """
        await self.freshen()  # the tools another process listed, while none are known
        session = await self._connected(tool, options)
        if not isinstance(session, _Session):
            return session
        if tool == UNAVAILABLE_TOOL and not any(t.name == tool for t in session.server.tools):
            return text_response(f"MCP server {self.name!r} is authorized for you; list its tools")
        session.calls += 1
        try:
            return await self._call(session, tool, arguments, options)
        finally:
            session.calls -= 1
            session.last_used = time.monotonic()

    async def _call(
        self, session: _Session, tool: str, arguments: dict[str, Any], options: CallOptions
    ) -> NativeMCPResponse[Any]:
        """Call on the user's connection; a consent the provider opens meanwhile (their
        grant refused mid-session) is sent to them as the first one was."""
        answer: list[NativeMCPResponse[Any]] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                try:
                    answer.append(await session.server.call(tool, arguments, options))
                except Exception as exc:  # raised below as it is, not in a group
                    failed.append(exc)
                group.cancel_scope.cancel()

            async def ask_again() -> None:
                # The grant refused mid-session (revoked, its refresh refused): the
                # provider opens a new consent while the call waits; send the user.
                while True:
                    await session.asked.wait()
                    consent = session.consent
                    if not _pending(consent):
                        continue
                    assert consent is not None
                    refused = await self._ask(consent, tool, options)
                    if refused is not None:
                        answer.append(refused)
                        group.cancel_scope.cancel()
                        return
                    await consent.returned.wait()

            group.start_soon(run)
            group.start_soon(ask_again)
        if failed:
            raise failed[0]
        return answer[0]

    async def list_tools(self, options: CallOptions) -> list[Tool]:
        """The tools as listed (each user's connection lists the same server)."""
        return self._tools

    async def feature(self, method: str, params: dict[str, Any], options: CallOptions) -> Any:
        """A resources/prompts/completion request on the caller's own connection.

        Raises:
            FeatureError: the caller has no connection now (a tool call makes one).
        """
        from nativemcp.protocol import FeatureError

        caller = options.caller
        session = self._sessions.get((caller.issuer or "", caller.subject)) if caller else None
        if session is None or not session.ready():
            raise FeatureError(
                f"MCP server {self.name!r} acts for each user and is not connected for "
                "this caller yet: call one of its tools first"
            )
        return await session.server.feature(method, params, options)

    async def ping(self, options: CallOptions) -> None:
        """Nothing to reach without a user: the handle is there while the pool runs."""


def _pending(consent: Consent | None) -> bool:
    """Whether ``consent`` waits for the user's browser still."""
    return consent is not None and not consent.returned.is_set()
