"""The browser server's settings, read from ``ServerConfig.options``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Final

import msgspec

from ._guard import normalize_origin

__all__ = ["CHROMIUM_ENV", "DEFAULT_CHROMIUM", "BrowserOptions", "parse_options"]

CHROMIUM_ENV: Final = "NATIVEMCP_CHROMIUM"
"""Environment variable naming the Chromium binary (default `DEFAULT_CHROMIUM`)."""
DEFAULT_CHROMIUM: Final = "/usr/bin/chromium"
"""Debian's ``chromium`` package: Playwright drives it; it never downloads a browser."""

_Positive = Annotated[int, msgspec.Meta(gt=0)]
_Seconds = Annotated[float, msgspec.Meta(gt=0)]


def _chromium() -> str:
    return os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM


class BrowserOptions(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """What a deployment may tune; every default is the safe choice."""

    allowed_origins: list[str] = msgspec.field(default_factory=list)
    """When set, the only origins (``scheme://host[:port]``) pages load from, private
    addresses included (``WorkerPool(browser_allowed_origins=...)``, ``--browser-allow``)."""
    allow_private_network: bool = False
    """True lets pages reach loopback, private and link-local addresses without an
    allow-list (off: those are refused, after DNS resolution, on every request)."""
    execute_script: bool = False
    """True enables the `execute_script` tool (JavaScript from the model, in the page)."""
    max_sessions: _Positive = 8
    """Open sessions (browser contexts) at once per caller (the call's session scope:
    one MCP client under ``serve``)."""
    max_total_sessions: _Positive = 32
    """Open sessions at once over all callers (what the machine can hold)."""
    max_tabs: _Positive = 8
    """Open tabs per session; a page's extra pop-ups are closed."""
    idle_timeout: _Seconds = 600.0
    """Seconds a session may go unused before it is closed."""
    page_timeout: _Seconds = 20.0
    """Seconds a navigation may take before it answers (with what has loaded)."""
    action_timeout: _Seconds = 10.0
    """Seconds a click, a fill or a wait may take."""
    max_text_chars: _Positive = 20_000
    """The most characters `read_text` returns."""
    max_changes: _Positive = 60
    """The most changed lines an action reports before it says to take a snapshot."""
    executable_path: str = msgspec.field(default_factory=_chromium)
    """The Chromium binary (default ``$NATIVEMCP_CHROMIUM``, else Debian's)."""
    headless: bool = True
    viewport_width: _Positive = 1280
    viewport_height: _Positive = 800


def parse_options(options: Mapping[str, Any]) -> BrowserOptions:
    """Validate ``options`` into `BrowserOptions`.

    Raises:
        ValueError: an unknown key (a typo would otherwise be ignored), a bad value or an
            allowed origin that is not ``scheme://host[:port]``.
    """
    try:
        parsed = msgspec.convert(dict(options), BrowserOptions)
    except msgspec.ValidationError as exc:
        raise ValueError(f"invalid browser options: {exc}") from exc
    origins = [normalize_origin(origin) for origin in parsed.allowed_origins]
    return msgspec.structs.replace(parsed, allowed_origins=origins)
