"""The grants a test's pool kept, read from where they are kept (the data folder's
SQLite file), and time passing over them."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from nativemcp.proxy.external import GRANTS_FOLDER, Grant, GrantDatabase


def kept_grants(data_dir: Path) -> list[Grant]:
    """Every grant kept in ``data_dir``, every user's."""
    return GrantDatabase(data_dir / GRANTS_FOLDER).find(None, every_user=True)


def stored(data_dir: Path) -> dict[str, Any]:
    """The pool's own grants in ``data_dir``, of one issuer and client, as one document:
    ``issuer``, ``client`` and each server's tokens (``resources``)."""
    grants = [grant for grant in kept_grants(data_dir) if grant.key.user is None]
    assert len({(grant.key.issuer, grant.key.client_id) for grant in grants}) == 1, grants
    return {
        "issuer": grants[0].key.issuer,
        "client": grants[0].client,
        "resources": {grant.key.resource: grant.tokens for grant in grants},
    }


def expire(data_dir: Path, url: str) -> None:
    """Time passes while no pool runs: the kept access token of ``url`` expires."""
    place = GrantDatabase(data_dir / GRANTS_FOLDER)
    (grant,) = place.find(None, url)
    tokens = {**grant.tokens, "expires_at": time.time() - 60}
    place.write(dataclasses.replace(grant, tokens=tokens))
