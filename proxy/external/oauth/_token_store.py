"""Where OAuth grants are kept: one file per issuer and client in the data folder, or
one row per issuer and client in PostgreSQL (``_token_table``) when the pool has a
``database_url``.

A grant is what an authorization server gave one client: its registration (the client
id, and a secret if it issued one) and, per MCP server (the resource), the tokens. The
file is named for the issuer and the client id (a hash: both are URLs or opaque
strings), holds them as JSON, and is written atomically (a new file of mode 0600,
then renamed over the old one) in a folder of mode 0700. Nothing here logs a token.

The SDK's provider asks for a server's tokens before it knows the issuer, so a server
finds its grant by its URL, which every grant lists among its resources. A pool without
a data folder or a database keeps its grants in memory, for its own life. Where they
are kept is a `GrantPlace`: the files (`GrantFiles`), a table, or memory.

An access token's expiry is kept as a time (``expires_at``), so a pool started later
refreshes a token that expired meanwhile rather than sending it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    # The SDK loads only when a pool uses OAuth (nativemcp.proxy imports without it).
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["GRANTS_FOLDER", "GrantFiles", "GrantPlace", "GrantStore", "StoredGrant", "grant_files"]

GRANTS_FOLDER: Final = "oauth"
"""The folder of grant files under the data folder."""
FILE_MODE: Final = 0o600
"""Grant files are readable by their owner only."""
FOLDER_MODE: Final = 0o700


def _file_name(issuer: str, client_id: str) -> str:
    digest = hashlib.sha256(f"{issuer}\n{client_id}".encode()).hexdigest()
    return f"{digest[:32]}.json"


class StoredGrant:
    """One grant file's content: the issuer, the client, and each resource's tokens."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @property
    def issuer(self) -> str:
        """The authorization server's issuer identifier."""
        return str(self.data.get("issuer", ""))

    @property
    def client_id(self) -> str:
        """The client id the issuer knows this client by."""
        return str(self.data.get("client", {}).get("client_id", ""))

    @property
    def key(self) -> tuple[str, str]:
        """What names the grant where it is kept: the issuer and the client id."""
        return self.issuer, self.client_id

    def resources(self) -> dict[str, dict[str, Any]]:
        """Each MCP server URL's tokens (an empty mapping: registered, not authorized)."""
        found = self.data.setdefault("resources", {})
        assert isinstance(found, dict)
        return found

    def describe(self, resource: str) -> dict[str, Any]:
        """What `nativemcp auth status` shows of a resource's grant: no token."""
        tokens = self.resources().get(resource) or {}
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "scope": tokens.get("scope"),
            "expires_at": tokens.get("expires_at"),
            "refreshable": bool(tokens.get("refresh_token")),
            "authorized": bool(tokens.get("access_token")),
        }


def grant_files(folder: Path) -> list[tuple[Path, StoredGrant]]:
    """Every readable grant file in ``folder`` (a damaged one is skipped, not fatal)."""
    found: list[tuple[Path, StoredGrant]] = []
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append((path, StoredGrant(data)))
    return found


def _write_atomically(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` as JSON: readers see the old file or the new one."""
    path.parent.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


class GrantPlace(Protocol):
    """Where grants are kept, each whole under its `StoredGrant.key`."""

    def grants(self) -> list[StoredGrant]:
        """Every grant kept, read now (a damaged one is skipped)."""
        ...

    def put(self, grant: StoredGrant) -> None:
        """Keep ``grant`` in place of the one of the same key (readers see either)."""
        ...

    def delete(self, key: tuple[str, str]) -> None:
        """Drop the grant of ``key`` (nothing if there is none)."""
        ...


class GrantFiles:
    """Grants as files in ``folder`` (`GRANTS_FOLDER` of the data folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def grants(self) -> list[StoredGrant]:
        """Every readable grant file."""
        return [grant for _, grant in grant_files(self.folder)]

    def put(self, grant: StoredGrant) -> None:
        """Write the grant's file atomically (mode 0600)."""
        _write_atomically(self.folder / _file_name(*grant.key), grant.data)

    def delete(self, key: tuple[str, str]) -> None:
        """Remove the grant's file."""
        (self.folder / _file_name(*key)).unlink(missing_ok=True)


class _Memory:
    """Grants kept for this process's life only."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], StoredGrant] = {}

    def grants(self) -> list[StoredGrant]:
        kept = list(self._kept.values())  # a snapshot: `has_grant` reads from a thread
        return [StoredGrant(json.loads(json.dumps(g.data))) for g in kept]

    def put(self, grant: StoredGrant) -> None:
        self._kept[grant.key] = StoredGrant(json.loads(json.dumps(grant.data)))

    def delete(self, key: tuple[str, str]) -> None:
        self._kept.pop(key, None)


class GrantStore:
    """The SDK's ``TokenStorage`` for one MCP server, over the grant files (or memory).

    Args:
        folder: the grant files' folder, or another `GrantPlace` (a PostgreSQL table);
            None keeps the grant in memory.
        resource: the MCP server's URL.
        client_id: the configured client id, if any: only a grant of that client is used.
        issuer: what the provider has discovered as the issuer (None: not yet); a grant
            whose issuer is not known yet is filed under the server's origin.
        fixed_client: the client of the configuration, if any (see `fixed_client`).
    """

    def __init__(
        self,
        folder: Path | GrantPlace | None,
        resource: str,
        *,
        client_id: str | None = None,
        issuer: Callable[[], str | None] = lambda: None,
        fixed_client: OAuthClientInformationFull | None = None,
    ) -> None:
        if folder is None:
            self.place: GrantPlace = _Memory()
        elif isinstance(folder, Path):
            self.place = GrantFiles(folder)
        else:
            self.place = folder
        self.resource = resource
        self._client_id = client_id
        self._issuer = issuer
        self.fixed_client = fixed_client
        """The configured client, if any: it is the client, whatever a file says, and
        its secret stays in the configuration (never written here)."""
        self._handed_out: str | None = None  # the access token this process last used
        self.dpop_key: dict[str, Any] | None = None
        """The private JWK the tokens are bound to (DPoP, RFC 9449), kept beside them
        (None: bearer tokens); read with them, and written with the next ones."""

    # -- finding and writing the file ---------------------------------------------------

    def _find(self) -> StoredGrant | None:
        for grant in self.place.grants():
            if self.resource not in grant.resources():
                continue
            if self._client_id is not None and grant.client_id != self._client_id:
                continue
            return grant
        return None

    def _save(self, grant: StoredGrant, old: tuple[str, str] | None) -> None:
        self.place.put(grant)
        if old is not None and old != grant.key:
            # The grant moved (a new client, or its issuer became known): the resource
            # leaves the old one, which goes when no server is left in it.
            for other in self.place.grants():
                if other.key == old:
                    other.resources().pop(self.resource, None)
                    self._rewrite(other)

    def _rewrite(self, grant: StoredGrant) -> None:
        if grant.resources():
            self.place.put(grant)
        else:
            self.place.delete(grant.key)

    def _current_issuer(self, client: OAuthClientInformationFull | None) -> str:
        if client is not None and client.issuer:
            return client.issuer
        found = self._issuer()
        if found:
            return found
        from urllib.parse import urlsplit

        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}"

    # -- the SDK's TokenStorage ---------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        """The server's stored tokens, ``expires_in`` counted from now (None: none)."""
        grant = self._find()
        if grant is None:
            return None
        stored = grant.resources().get(self.resource) or {}
        if not stored.get("access_token"):
            return None
        self._handed_out = stored["access_token"]
        key = stored.get("dpop_key")
        self.dpop_key = key if isinstance(key, dict) else None
        fields = {k: v for k, v in stored.items() if k not in ("expires_at", "dpop_key")}
        expires_at = stored.get("expires_at")
        if isinstance(expires_at, int | float):
            fields["expires_in"] = int(expires_at - time.time())
        from mcp.shared.auth import OAuthToken

        return OAuthToken.model_validate(fields)

    def refresh_issuer(self) -> str | None:
        """The issuer of the kept grant when it holds a refresh token for the server
        (None: none kept): the only party a refresh may go to."""
        grant = self._find()
        if grant is None or not (grant.resources().get(self.resource) or {}).get("refresh_token"):
            return None
        return grant.issuer or None

    def expires_at(self) -> float | None:
        """When the stored access token expires (None: no token, or no expiry)."""
        grant = self._find()
        stored = grant.resources().get(self.resource) if grant is not None else None
        value = (stored or {}).get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens for the server (with their expiry as a time)."""
        grant = self._find()
        old = grant.key if grant is not None else None
        if grant is None:
            fixed = self.fixed_client
            client = (
                fixed.model_dump(mode="json", exclude_none=True, exclude={"client_secret"})
                if fixed is not None
                else {}
            )
            grant = StoredGrant({"issuer": self._current_issuer(fixed), "client": client})
        record = tokens.model_dump(mode="json", exclude_none=True)
        expires_in = record.pop("expires_in", None)
        if expires_in is not None:
            record["expires_at"] = time.time() + float(expires_in)
        if self.dpop_key is not None:
            record["dpop_key"] = self.dpop_key
        grant.resources()[self.resource] = record
        self._save(grant, old)
        self._handed_out = tokens.access_token

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registration the server's grant was made with (None: none)."""
        if self.fixed_client is not None:
            return self.fixed_client
        return self.stored_client()

    def stored_client(self) -> OAuthClientInformationFull | None:
        """The kept registration, read now (None: none kept)."""
        grant = self._find()
        client = grant.data.get("client") if grant is not None else None
        if not client:
            return None
        from mcp.shared.auth import OAuthClientInformationFull

        return OAuthClientInformationFull.model_validate(client)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a new registration: its issuer and client id name the grant."""
        grant = self._find()
        resources = dict(grant.resources()) if grant is not None else {}
        if grant is not None and grant.client_id != client_info.client_id:
            resources = {}  # another client's tokens are not this one's
        resources.setdefault(self.resource, {})
        new = StoredGrant(
            {
                "issuer": self._current_issuer(client_info),
                "client": client_info.model_dump(mode="json", exclude_none=True),
                "resources": resources,
            }
        )
        self._save(new, grant.key if grant is not None else None)

    def forget_tokens(self) -> bool:
        """Drop the server's tokens, keeping the registration (True: there were some).

        Tokens another process kept since this one last read or wrote them (a replica's
        refresh, an ``auth login``) are newer than the ones refused here: they stay,
        and the next use of the server tries them.
        """
        grant = self._find()
        stored = grant.resources().get(self.resource) if grant is not None else None
        if grant is None or not stored:
            return False
        kept = stored.get("access_token")
        if kept and self._handed_out is not None and kept != self._handed_out:
            return True
        grant.resources()[self.resource] = {}
        self._save(grant, grant.key)
        self.dpop_key = None
        return True

    def forget(self) -> bool:
        """Drop everything kept for the server: tokens, and the grant if no other server
        uses it (True: there was something)."""
        grant = self._find()
        if grant is None:
            return False
        grant.resources().pop(self.resource, None)
        self._rewrite(grant)
        return True

    def status(self) -> dict[str, Any] | None:
        """The server's grant as `nativemcp auth status` shows it (None: none)."""
        grant = self._find()
        return grant.describe(self.resource) if grant is not None else None
