"""Where one user's grants are kept, apart from every other user's and the pool's.

A user is the issuer and subject serve verified. In the data folder their grants are
files of their own folder, ``oauth/users/<hash of issuer and subject>/``; without a
data folder, in memory for the pool's life (one place per user, kept by the caller).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

from ._token_store import GrantPlace, _Memory

__all__ = ["USERS_FOLDER", "user_grants"]

USERS_FOLDER: Final = "users"
"""The folder of per-user grant folders, under the grants folder."""


def user_grants(grants: Path | GrantPlace | None, user: tuple[str, str]) -> Path | GrantPlace:
    """The place of ``user``'s grants within the pool's ``grants`` place (in memory: a
    new one, which the caller keeps for the user).

    Raises:
        ValueError: the pool keeps its grants in PostgreSQL, where grants per user are
            not kept yet.
    """
    issuer, subject = user
    if isinstance(grants, Path):
        digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()[:32]
        return grants / USERS_FOLDER / digest
    if grants is None:
        return _Memory()
    raise ValueError("grants per user are kept in the data folder or in memory")
