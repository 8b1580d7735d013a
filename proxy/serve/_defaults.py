"""Defaults of the MCP boundary, apart from it so the CLI can name them without loading
the official SDK."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_MAX_BODY", "TOKEN_ENV"]

DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
"""Largest HTTP request body accepted, in bytes (4 MiB); larger ones get 413."""
TOKEN_ENV: Final = "NATIVEMCP_TOKEN"
"""Environment variable `nativemcp serve` reads the bearer token from (``--token`` wins)."""
