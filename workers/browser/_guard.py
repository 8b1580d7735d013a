"""Which URLs the browser may load: http(s) only, an optional allow-list, public addresses.

Every request a page makes (the document, each redirect hop, scripts, images, XHR,
WebSockets) passes this policy in the session's egress proxy (``_egress.py``), which
then connects to the very address it checked:

- a scheme other than ``http``/``https`` is refused (``file:``, ``chrome:``, ``data:``
  documents never load through ``navigate``; Chromium itself keeps pages from
  navigating to them);
- with ``allowed_origins``, only those origins (``scheme://host[:port]``) load, private
  addresses included: an allow-list is how a deployment opens an intranet site;
- otherwise the host is resolved (literal IPs, ``localhost``, decimal forms such as
  ``2130706433`` and DNS names alike) and every address must be public: loopback,
  private networks, link-local (cloud metadata at 169.254.169.254), shared, reserved
  and multicast addresses are refused.

The proxy resolves each name once and connects to the address it checked, so a DNS
server that answers a public address first and a private one a moment later (DNS
rebinding) gets nowhere.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = ["Refused", "UrlPolicy", "address_refusal", "normalize_origin"]

SCHEMES: Final = ("http", "https")
"""The only schemes pages may load."""
UNRESOLVED: Final = "does not resolve"
"""In a refusal's reason: the host has no address (listing its origin would not help)."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# WebSocket URLs are checked as the http(s) origin they belong to.
_WS: Final = {"ws": "http", "wss": "https"}


class Refused(Exception):
    """A URL or address the policy does not let the browser reach; the message says why."""


def _origin(scheme: str, host: str, port: int | None) -> str:
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    default = _DEFAULT_PORTS.get(scheme)
    return f"{scheme}://{host}" if port in (None, default) else f"{scheme}://{host}:{port}"


def normalize_origin(text: str) -> str:
    """``text`` as ``scheme://host[:port]`` (lower case, default port left out).

    Raises:
        ValueError: not an http(s) origin (a path, a query or a missing scheme).
    """
    parts = urlsplit(text.strip())
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError(
            f"allowed origin {text!r} is not an origin: write scheme://host[:port], "
            "for example https://example.com or http://127.0.0.1:8000"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"allowed origin {text!r} has more than scheme://host[:port]")
    return _origin(parts.scheme, parts.hostname, parts.port)


def address_refusal(address: str) -> str | None:
    """Why the browser may not reach ``address`` (an IP), or None when it is public."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return f"{ip} is a loopback address"
    if ip.is_link_local:
        return f"{ip} is a link-local address (cloud metadata lives at 169.254.169.254)"
    if ip.is_multicast:
        return f"{ip} is a multicast address"
    if ip.is_private:
        return f"{ip} is a private network address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    """What the browser may load (see the module docstring)."""

    allowed_origins: frozenset[str] = frozenset()
    """Normalized origins; when non-empty, the only ones that load."""
    allow_private: bool = False
    """True: skip the address check (a trusted network, or tests)."""

    @classmethod
    def build(cls, origins: Iterable[str], allow_private: bool = False) -> UrlPolicy:
        """A policy with ``origins`` normalized.

        Raises:
            ValueError: one of ``origins`` is not an http(s) origin.
        """
        return cls(frozenset(normalize_origin(o) for o in origins), allow_private)

    def scheme_refusal(self, url: str) -> str | None:
        """Why ``url`` may not load, judged on its text alone (scheme, allow-list)."""
        parts = urlsplit(url)
        scheme = _WS.get(parts.scheme, parts.scheme)
        if scheme not in SCHEMES:
            return f"only http and https URLs load, not {parts.scheme or 'a bare path'}:"
        if not parts.hostname:
            return "the URL has no host"
        try:
            port = parts.port
        except ValueError:
            return "the URL's port is not a number from 0 to 65535"
        origin = _origin(scheme, parts.hostname, port)
        if self.allowed_origins and origin not in self.allowed_origins:
            allowed = ", ".join(sorted(self.allowed_origins))
            return f"{origin} is not an allowed origin (allowed: {allowed})"
        return None

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, each one checked (unless the policy
        trusts the host's origin or private networks).

        Raises:
            Refused: the host does not resolve, or resolves to a refused address (one
                is enough: a name that points inwards is not trusted for its other
                addresses either).
        """
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError as exc:
            raise Refused(f"{host} {UNRESOLVED} ({exc.strerror or exc})") from None
        found = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if self.allowed_origins or self.allow_private:
            return found  # the allow-list (checked on the URL) decides, not the address
        for address in found:
            why = address_refusal(address)
            if why is not None:
                raise Refused(why if why.startswith(host) else f"{host} resolves to {why}")
        return found

    def how_to_allow(self, url: str, reason: str) -> str | None:
        """A sentence saying how a deployment lets ``url``, refused for ``reason``, load
        (list its origin), or None when listing it would not help: not an http(s) URL,
        or a name that does not resolve. Judged on the text: nothing is resolved."""
        parts = urlsplit(url)
        scheme = _WS.get(parts.scheme, parts.scheme)
        try:
            port = parts.port
        except ValueError:
            return None
        if scheme not in SCHEMES or not parts.hostname or UNRESOLVED in reason:
            return None
        origin = _origin(scheme, parts.hostname, port)
        return (
            f"To let the browser open it, list its origin: --browser-allow {origin} "
            f'(nativemcp serve) or browser_allowed_origins=["{origin}"] (WorkerPool); '
            "an allow-list admits only the origins it lists"
        )

    async def refusal(self, url: str) -> str | None:
        """Why ``url`` may not load, the host resolved (None: it may)."""
        reason = self.scheme_refusal(url)
        if reason is not None:
            return reason
        parts = urlsplit(url)
        try:
            await self.addresses(parts.hostname or "", parts.port or 0)
        except Refused as exc:
            return str(exc)
        return None
