"""Workload identity federation (SEP-1933): a platform's JWT as the grant (RFC 7523 §2.1).

A pool that runs unattended (a Kubernetes pod, a CI job, a SPIFFE workload) already
holds a short-lived JWT its platform issued it: a projected service-account token, a
JWT-SVID, a cloud's OIDC token. The authorization server trusts that platform's issuer,
so the JWT itself is the grant: ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``
with the JWT as ``assertion`` and the MCP server as ``resource``; no person, no browser,
no client secret (a client id only where the authorization server wants one).

The assertion is read anew for each token request, since platforms rotate it: from a
file (``assertionFile``, the projected-token path; read in a worker thread), an
environment variable (``assertionEnv``), or else the pool's ``oauth_assertion`` hook,
given the issuer (the JWT's audience) and the MCP server's resource identifier. No
refresh token is asked for or kept: on expiry or a 401 the SDK's flow comes back here
for a new token with a fresh assertion. The tokens live in memory only (SEP-1933: avoid
persisting them), and go only to the entry's ``issuer`` (the SDK's client-credentials
provider checks the discovered metadata names it), never to whatever authorization
server the MCP server names.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs

import anyio
import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from ._identity_assertion import AssertionHook
from ._oauth_config import OAuthSettings
from ._refresh_on_401 import BoundClientCredentials
from ._token_store import GrantStore

__all__ = ["ASSERTION_LIMIT", "NO_ASSERTION_SOURCE", "WorkloadIdentity", "read_assertion"]

ASSERTION_LIMIT: Final = 64 * 1024
"""The most bytes of a workload token read (a few KiB in practice)."""
NO_ASSERTION_SOURCE: Final = (
    'its grant is workload_identity, the entry names no "assertionFile" or "assertionEnv", '
    "and the pool has no oauth_assertion hook to get the workload's JWT"
)
"""Why a workload-identity server cannot get a token without a source of assertions."""


def _checked(assertion: str, where: str) -> str:
    """``assertion`` stripped, if it has a JWT's shape (three dot-separated parts).

    Raises:
        OAuthFlowError: it is empty, too large or not a JWT (its text is never shown).
    """
    text = assertion.strip()
    if not text:
        raise OAuthFlowError(f"the workload identity token in {where} is empty")
    if len(text) > ASSERTION_LIMIT:
        raise OAuthFlowError(
            f"the workload identity token in {where} is over {ASSERTION_LIMIT} bytes"
        )
    if text.count(".") != 2 or any(c.isspace() for c in text):
        raise OAuthFlowError(f"the workload identity token in {where} is not a JWT")
    return text


async def _read_file(name: str) -> tuple[str, str]:
    """The file's path (``~`` expanded) and text, at most `ASSERTION_LIMIT` + 1 bytes of
    it, read off the event loop.

    Raises:
        OAuthFlowError: it cannot be read.
    """
    path = Path(name)

    def read() -> tuple[Path, bytes]:
        full = path.expanduser()
        with full.open("rb") as file:
            return full, file.read(ASSERTION_LIMIT + 1)

    try:
        full, data = await anyio.to_thread.run_sync(read)
    except OSError as exc:
        raise OAuthFlowError(
            f"cannot read the workload identity token file {name}: {exc.strerror or exc}"
        ) from None
    return str(full), data.decode("utf-8", errors="replace")


async def read_assertion(
    settings: OAuthSettings,
    hook: AssertionHook | None,
    audience: str,
    resource: str,
    give_up: Callable[[str], Exception],
) -> str:
    """The workload's JWT now: from the entry's file or variable, or from ``hook``.

    Raises:
        OAuthFlowError: the source is missing, unreadable, empty or not a JWT.
        Exception: ``give_up(NO_ASSERTION_SOURCE)`` when there is no source at all.
    """
    if settings.assertion_file is not None:
        path, text = await _read_file(settings.assertion_file)
        return _checked(text, path)
    if settings.assertion_env is not None:
        name = settings.assertion_env
        value = os.environ.get(name)
        if value is None:
            raise OAuthFlowError(f"the environment variable {name} (oauth.assertionEnv) is not set")
        return _checked(value, f"${name}")
    if hook is None:
        raise give_up(NO_ASSERTION_SOURCE)
    answer = hook(audience, resource)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, str):
        raise TypeError(
            f"the oauth_assertion hook must return the workload's JWT (a string), "
            f"not {type(answer).__name__}"
        )
    return _checked(answer, "the oauth_assertion hook's answer")


class WorkloadIdentity(BoundClientCredentials):
    """The SDK's client-credentials provider (discovery, the pinned issuer, resource
    and scope, client authentication), its token request turned into RFC 7523's
    jwt-bearer grant with a fresh assertion."""

    def __init__(
        self,
        url: str,
        settings: OAuthSettings,
        store: GrantStore,
        hook: AssertionHook | None,
        give_up: Callable[[str], Exception],
    ) -> None:
        # Checked when the entry was read: a pinned issuer; a secret only with an id.
        assert settings.issuer is not None
        post = settings.token_endpoint_auth_method == "client_secret_post"
        # The SDK's client model needs an id; without one configured, this stands in,
        # and is never sent (the JWT names the workload). Without a secret the SDK adds
        # no client authentication (as for "none"); `_perform_authorization` names a
        # configured id in the form.
        client_id = settings.client_id or "workload-identity"
        super().__init__(
            server_url=url,
            storage=store,
            client_id=client_id,
            client_secret=settings.client_secret or "",
            token_endpoint_auth_method="client_secret_post" if post else "client_secret_basic",
            scope=settings.scope,
            issuer=settings.issuer,
        )
        self._settings = settings
        self._hook = hook
        self._give_up = give_up

    async def _perform_authorization(self) -> httpx2.Request:
        """The jwt-bearer token request (RFC 7523 §2.1), with the workload's JWT now."""
        built = await self._exchange_token_client_credentials()
        form = {name: values[0] for name, values in parse_qs(built.content.decode()).items()}
        form["grant_type"] = JWT_BEARER_GRANT_TYPE
        assert self._settings.issuer is not None
        resource = form.get("resource") or self.context.get_resource_url()
        form["assertion"] = await read_assertion(
            self._settings, self._hook, self._settings.issuer, resource, self._give_up
        )
        client_id = self._settings.client_id
        if client_id and "authorization" not in built.headers:
            form["client_id"] = client_id  # a public client names itself (RFC 6749 §3.2.1)
        headers = {
            name: value
            for name, value in built.headers.items()
            if name.lower() not in ("content-length", "content-type")
        }
        return httpx2.Request("POST", built.url, data=form, headers=headers)
