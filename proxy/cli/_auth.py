"""``nativemcp auth login|logout|status``: the OAuth grants of remote servers.

```
$ nativemcp auth login github --mcp-config mcp.json
Authorize nativemcp for MCP server 'github': open this address in a browser:
  https://github.com/login/oauth/authorize?response_type=code&client_id=...
Waiting for the browser on http://localhost:43117/callback ...
Authorized 'github' (issuer https://github.com/login/oauth, scopes repo).
```

``login`` runs the authorization-code flow of the server's ``oauth`` entry: it prints
the address (and opens a browser where there is one), listens on the loopback callback
port, and exits once the tokens are kept in the data folder (``DATA/oauth/grants.db``),
where every later pool finds them (a running one at its next use of the server); with
``--database-url`` (or ``NATIVEMCP_DATABASE_URL``) in that PostgreSQL database, where
every replica finds them. ``logout`` revokes the tokens at the issuer where it offers
that (RFC 7009) and deletes what is kept for the server. ``status`` lists each OAuth
server of ``--mcp-config``: its issuer, scopes and expiry, or what to run.

With ``--user SUBJECT`` (serve's callers' grants, kept per user), ``status`` lists the
servers that user has granted and ``logout`` revokes and deletes every grant of that
user (or only the one of ``SERVER``). No token is ever printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import anyio

from nativemcp.proxy import RestartPolicy
from nativemcp.proxy.external import (
    ExternalServer,
    ExternalServerSpec,
    GrantPlace,
    GrantStore,
    NeedsAuthorization,
    ServerAuthorization,
    UnknownUser,
    configured_client,
    describe_grant,
    expiry_text,
    grant_place,
    load_mcp_servers,
    log_out_user,
    login_hint,
    revoke,
    user_grants,
)

from ._content import Runner
from ._errors import CallFailed, UsageError
from ._pool_options import PoolOptions, check_database, pool_options_parser

__all__ = ["add_auth_parser", "log_in"]

OpenURL = Callable[[str], None]


def add_auth_parser(commands: Any) -> Runner:
    """Add the ``auth`` verb (``login``, ``logout``, ``status``); returns its runner."""
    auth = commands.add_parser(
        "auth", help="authorize nativemcp to remote MCP servers that use OAuth"
    )
    actions = auth.add_subparsers(dest="auth_action", metavar="ACTION", required=True)
    login = actions.add_parser(
        "login",
        parents=[pool_options_parser()],
        help="authorize one server in a browser and keep its tokens",
    )
    login.add_argument("server", metavar="SERVER", help="a server of --mcp-config")
    login.add_argument(
        "--no-browser",
        action="store_true",
        help="only print the address (for a machine without a browser)",
    )
    logout = actions.add_parser(
        "logout", parents=[pool_options_parser()], help="delete what is kept for a server"
    )
    logout.add_argument(
        "server",
        metavar="SERVER",
        nargs="?",
        help="a server of --mcp-config (with --user: only this one; default every one)",
    )
    status = actions.add_parser(
        "status",
        parents=[pool_options_parser()],
        help="each OAuth server: issuer, scopes, expiry, or what to run",
    )
    for verb in (logout, status):
        verb.add_argument(
            "--user",
            metavar="SUBJECT",
            help="a user's own grants (serve's callers'), by subject or ISSUER#SUBJECT",
        )
    return _run


def _oauth_servers(options: PoolOptions) -> list[ExternalServerSpec]:
    if options.mcp_config is None:
        raise UsageError("give the servers' config file: --mcp-config FILE")
    try:
        specs = load_mcp_servers(options.mcp_config)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return [spec for spec in specs if spec.oauth is not None and spec.url is not None]


def _server(options: PoolOptions, name: str) -> ExternalServerSpec:
    servers = _oauth_servers(options)
    for spec in servers:
        if spec.name == name:
            return spec
    listing = ", ".join(spec.name for spec in servers) or "(none)"
    raise UsageError(
        f"no OAuth server named {name!r} in {options.mcp_config} (a remote server with an "
        f'"oauth" entry, e.g. "oauth": {{}}); OAuth servers: {listing}'
    )


def _place(options: PoolOptions) -> GrantPlace:
    """Where the pool of these options keeps its grants (its database, else the data
    folder), so that what a verb does here, every pool of the same options sees."""
    return grant_place(options.data_dir, options.database_url)


def _store(options: PoolOptions, spec: ExternalServerSpec) -> GrantStore:
    assert spec.url is not None and spec.oauth is not None
    store = GrantStore(_place(options), spec.url, client_id=spec.oauth.client_id)
    store.fixed_client = configured_client(spec.oauth)
    return store


def _can_open_browser() -> bool:
    """Whether a graphical browser can be opened here (not over SSH, not headless)."""
    if sys.platform in ("darwin", "win32"):
        return not os.environ.get("SSH_CONNECTION")
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def log_in(
    spec: ExternalServerSpec, folder: Path | GrantPlace | None, open_url: OpenURL, out: TextIO
) -> GrantStore:
    """Run the authorization-code flow for ``spec`` and keep its tokens in ``folder``
    (the grant files' folder, or a database's `GrantPlace`): ``open_url`` is given the
    address, the browser comes back to the loopback port.

    Raises:
        NeedsAuthorization: the authorization server refused, or nobody came back.
        ServerStartError: the server cannot be reached or refused the tokens.
    """
    assert spec.url is not None and spec.oauth is not None

    def show(url: str) -> None:
        print(
            f"Authorize nativemcp for MCP server {spec.name!r}: open this address in a "
            f"browser:\n  {url}",
            file=out,
            flush=True,
        )
        open_url(url)
        print(f"Waiting for the browser on {authorization.auth_redirect_uri()} ...", file=out)

    authorization = ServerAuthorization(spec.name, spec.url, spec.oauth, folder, show)
    await authorization.store.forget_tokens()  # a login asks again, whatever is kept
    server = ExternalServer(
        spec, start_timeout=None, restart=RestartPolicy(), authorization=authorization
    )
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        await server.aclose()
    if server.needs_authorization is not None:
        raise NeedsAuthorization(spec.name, server.needs_authorization)
    return authorization.store


async def _run(args: argparse.Namespace, options: PoolOptions) -> int:
    action = args.auth_action
    check_database(options.database_url)  # a missing driver or a database away, said first
    if action != "login" and args.user is not None:
        return await _for_user(args, options)
    if action == "status":
        return await _status(options)
    if args.server is None:
        raise UsageError("name the server to log out of (or give --user SUBJECT)")
    spec = _server(options, args.server)
    if action == "logout":
        store = _store(options, spec)
        assert spec.url is not None
        revoked = await revoke(store, spec.url)
        if await store.forget():
            print(f"Logged out of {spec.name!r}: its tokens are deleted ({revoked}).")
        else:
            print(f"Nothing was kept for {spec.name!r}.")
        return 0

    def open_url(url: str) -> None:
        if not args.no_browser and _can_open_browser():
            webbrowser.open(url)

    try:
        store = await log_in(spec, _place(options), open_url, sys.stderr)
    except NeedsAuthorization as exc:
        # The reason is the whole message here: "run: nativemcp auth login" is this.
        raise CallFailed(f"MCP server {spec.name!r} is not authorized: {exc.reason}") from None
    shown = await store.status() or {}
    print(
        f"Authorized {spec.name!r} (issuer {shown.get('issuer')}, "
        f"scopes {shown.get('scope') or '(none named)'})."
    )
    return 0


async def _status(options: PoolOptions) -> int:
    servers = _oauth_servers(options)
    if not servers:
        print(f'no remote server with an "oauth" entry in {options.mcp_config}')
        return 0
    for spec in servers:
        if spec.oauth is not None and spec.oauth.grant == "workload_identity":
            print(f"{spec.name}: workload identity: a new token for each start, nothing kept")
            continue
        shown = await _store(options, spec).status()
        if shown is None or not shown["authorized"]:
            print(f"{spec.name}: not authorized; {options.pasteable(login_hint(spec.name))}")
            continue
        refresh = ", refreshable" if shown["refreshable"] else ""
        print(
            f"{spec.name}: authorized by {shown['issuer']}, scopes "
            f"{shown['scope'] or '(none named)'}, expires {expiry_text(shown['expires_at'])}"
            f"{refresh}"
        )
    place = _place(options)
    every = await anyio.to_thread.run_sync(lambda: place.find(None, every_user=True))
    users = {grant.key.user for grant in every if grant.key.user is not None}
    if users:
        print(
            f"{len(users)} of serve's users keep grants of their "
            "own: see nativemcp auth status --user SUBJECT"
        )
    return 0


def _server_names(options: PoolOptions) -> dict[str, str]:
    """Each OAuth server's URL and its name in ``--mcp-config`` (none without one)."""
    if options.mcp_config is None:
        return {}
    return {spec.url: spec.name for spec in _oauth_servers(options) if spec.url is not None}


async def _for_user(args: argparse.Namespace, options: PoolOptions) -> int:
    """``status --user`` and ``logout --user``: one user's own grants."""
    place = _place(options)
    names = _server_names(options)
    try:
        grants = await anyio.to_thread.run_sync(user_grants, place, args.user)
    except UnknownUser as exc:
        raise UsageError(str(exc)) from None
    if args.auth_action == "status":
        for grant in grants:
            shown = describe_grant(grant)
            where = names.get(grant.key.resource, grant.key.resource)
            state = "authorized" if shown["authorized"] else "registered, not authorized"
            refresh = ", refreshable" if shown["refreshable"] else ""
            print(
                f"{grant.key.user}: {where}: {state} by {grant.key.issuer}, scopes "
                f"{shown['scope'] or '(none named)'}, expires "
                f"{expiry_text(shown['expires_at'])}{refresh}"
            )
        return 0
    clients: dict[str, Any] = {}
    only: str | None = None
    if args.server is not None:
        spec = _server(options, args.server)
        assert spec.url is not None and spec.oauth is not None
        only = spec.url
        if not any(grant.key.resource == only for grant in grants):
            raise UsageError(f"user {args.user!r} has no grant kept for {args.server!r}")
    for spec in _oauth_servers(options) if options.mcp_config is not None else []:
        assert spec.oauth is not None
        clients[str(spec.url)] = configured_client(spec.oauth)
    done = await log_out_user(place, args.user, clients, only=only)
    for grant, said in done:
        where = names.get(grant.key.resource, grant.key.resource)
        print(f"Logged {grant.key.user} out of {where}: its tokens are deleted ({said}).")
    return 0
