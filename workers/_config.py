"""How a server is found and configured inside its worker process."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from ._server import Server

__all__ = ["BUILTIN_SERVERS", "OPT_IN_BUILTINS", "ServerConfig", "ServerSource", "load_server"]


class ServerConfig(msgspec.Struct, kw_only=True, frozen=True):
    """What a server factory is given: where its data lives, and its options."""

    data_dir: Path | None = None
    """The pool's data folder; a server keeps its files in ``data_dir / <server name>``."""
    workspace_root: Path | None = None
    """The workspace server's root folder (None: a per-session folder under data_dir)."""
    options: Mapping[str, Any] = msgspec.field(default_factory=dict)
    """Server-specific options (size limits, locale...)."""
    database_url: str | None = None
    """A ``postgresql://`` URL for the content store's and planning's state, or None.

    That database is shared by every process and machine using it; None keeps the state
    in SQLite files under ``data_dir``."""


ServerFactory = Callable[[ServerConfig], Server]
ServerSource = Server | ServerFactory | str
"""A `Server`, a factory taking a `ServerConfig`, or ``"module:attribute"`` naming either."""

BUILTIN_SERVERS: Final[dict[str, str]] = {
    "content-store": "nativemcp.workers.content_store:create_server",
    "planning": "nativemcp.workers.planning:create_server",
    "workspace": "nativemcp.workers.workspace:create_server",
    "browser": "nativemcp.workers.browser:create_server",
}
"""The built-in servers by name, each a factory path (imported in the worker only)."""

OPT_IN_BUILTINS: Final = frozenset({"browser"})
"""Built-ins a pool starts only when named in ``builtins``.

A browser is a big process to start for every pool that has a data folder, and it
reaches the network."""


def load_server(source: ServerSource, config: ServerConfig) -> Server:
    """Build the server a source names (runs inside the worker process).

    Raises:
        ValueError: the source names nothing importable or not a server/factory.
    """
    if isinstance(source, str):
        module_name, _, attribute = source.partition(":")
        if not module_name or not attribute:
            raise ValueError(f"server source {source!r} is not of the form 'module:attribute'")
        try:
            source = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot import server source {source!r}: {exc}") from exc
    server = source if isinstance(source, Server) else source(config)  # type: ignore[operator]
    if not isinstance(server, Server):
        raise ValueError(f"server source produced {type(server).__name__}, not a Server")
    if config.data_dir is not None and server.data_dir is None:
        server.data_dir = config.data_dir / server.name
    return server
