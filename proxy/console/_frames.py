"""One-time capability URLs for the console's UI frames.

A UIResource's script can read its frame's URL, so that URL must not carry the console's
token. The page asks for a capability per frame it renders (``POST
api/calls/<id>/frames/<n>``, under the token), and the frame loads ``/ui/<capability>``:
a random name for that one document, valid for its first load within ``ttl`` seconds.
What a frame's script can learn from its URL is a spent name for what it already has.
"""

from __future__ import annotations

import secrets
import time
from typing import Final

__all__ = ["FrameCapabilities"]

_CAPABILITY_BYTES: Final = 24


class FrameCapabilities:
    """Capabilities granted and not yet used: each names one UI document, once."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._granted: dict[str, tuple[float, int, int]] = {}

    def grant(self, call: int, block: int) -> str:
        """A fresh capability for block ``block`` of call ``call``."""
        now = time.monotonic()
        # Unused ones expire here: a page that never loaded its frame leaves nothing behind.
        for capability, (granted, _, _) in list(self._granted.items()):
            if now - granted > self._ttl:
                del self._granted[capability]
        capability = secrets.token_urlsafe(_CAPABILITY_BYTES)
        self._granted[capability] = (now, call, block)
        return capability

    def redeem(self, capability: str) -> tuple[int, int] | None:
        """``(call, block)`` the capability names, spending it; None if unknown, used or
        expired."""
        found = self._granted.pop(capability, None)
        if found is None or time.monotonic() - found[0] > self._ttl:
            return None
        return found[1], found[2]
