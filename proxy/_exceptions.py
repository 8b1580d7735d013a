"""Deprecated import path, kept for round-1 code: the caller-side errors now live with
every other exception in `nativemcp.protocol._exceptions` (import them from
``nativemcp.protocol`` or ``nativemcp.proxy``). Nothing is defined here."""

from __future__ import annotations

from nativemcp.protocol import ArgumentsError as ArgumentsError
from nativemcp.protocol import ToolNameClash as ToolNameClash
from nativemcp.protocol import UnknownServer as UnknownServer
from nativemcp.protocol import UnknownTool as UnknownTool

__all__ = ["ArgumentsError", "ToolNameClash", "UnknownServer", "UnknownTool"]
