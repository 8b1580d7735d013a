"""Each user's grants, for operators: who has granted what, and logging a user out.

A user's grants are keyed by `user_key` (the caller's verified issuer and subject, as
serve's authentication names them). An operator names a user by subject
(``nativemcp auth status --user alice``) or by the whole key where one subject is
known to two issuers. Logging a user out revokes each of their grants at its issuer
(RFC 7009, where the issuer offers a ``revocation_endpoint``) and then deletes its row,
whatever the issuer said: the tokens are gone from here either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio.to_thread

from ._grant_rows import Grant, GrantPlace
from ._token_store import GrantStore

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull

__all__ = ["UnknownUser", "log_out_user", "user_grants", "user_key"]

_SEPARATOR = "#"  # an issuer identifier has no fragment (RFC 8414 §2): the first '#' ends it


def user_key(issuer: str, subject: str) -> str:
    """The key of the user ``subject`` of the identity provider ``issuer`` (what
    `GrantStore` takes as ``user``)."""
    return f"{issuer}{_SEPARATOR}{subject}"


def subject_of(user: str) -> str:
    """The subject part of a `user_key` (the whole string if it is no such key)."""
    issuer, separator, subject = user.partition(_SEPARATOR)
    return subject if separator and "://" in issuer else user


class UnknownUser(LookupError):
    """No grant is kept for the user named (or the name fits more than one user)."""


def user_grants(place: GrantPlace, user: str) -> list[Grant]:
    """The grants of the user named ``user`` (a subject, or a whole `user_key`); blocks.

    Raises:
        UnknownUser: none is kept for that name, or two users of two issuers share the
            subject (the message names their keys, to give one of them).
    """
    every = place.find(None, every_user=True)
    exact = [grant for grant in every if grant.key.user == user]
    if exact:
        return exact
    found = [g for g in every if g.key.user is not None and subject_of(g.key.user) == user]
    users = sorted({g.key.user for g in found if g.key.user is not None})
    if not users:
        known = sorted({g.key.user for g in every if g.key.user is not None})
        listing = ", ".join(known[:20]) or "(none)"
        raise UnknownUser(f"no grant is kept for user {user!r}; users with grants: {listing}")
    if len(users) > 1:
        raise UnknownUser(
            f"{len(users)} users of different issuers have the subject {user!r}: give one "
            f"of {', '.join(users)}"
        )
    return found


async def log_out_user(
    place: GrantPlace,
    user: str,
    clients: Mapping[str, OAuthClientInformationFull | None] | None = None,
    *,
    only: str | None = None,
) -> list[tuple[Grant, str]]:
    """Revoke every grant of the user named ``user`` (only the one of the server URL
    ``only``, where given) at its issuer, then delete it; each grant with what its
    issuer said (in words). ``clients`` gives the configured client of a server URL,
    whose secret a revocation may need.

    Raises:
        UnknownUser: see `user_grants`.
    """
    from ._oauth import revoke

    grants = await anyio.to_thread.run_sync(user_grants, place, user)
    done: list[tuple[Grant, str]] = []
    for grant in grants:
        resource = grant.key.resource
        if only is not None and resource != only:
            continue
        fixed = (clients or {}).get(resource)
        if fixed is not None and fixed.client_id != grant.key.client_id:
            fixed = None  # the entry names another client now: the kept one revokes
        store = GrantStore(
            place,
            resource,
            user=grant.key.user,
            client_id=grant.key.client_id,
            fixed_client=fixed,
        )
        said = await revoke(store, resource)
        await anyio.to_thread.run_sync(place.delete, grant.key)
        done.append((grant, said))
    return done
