"""Which of a pool's servers are served, and the instructions a client gets for them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nativemcp.protocol import ServerError

if TYPE_CHECKING:
    from .._pool import WorkerPool

__all__ = ["gather_instructions", "select_servers"]

_logger = logging.getLogger("nativemcp.serve")


async def gather_instructions(pool: WorkerPool, servers: Sequence[str] | None = None) -> str | None:
    """The servers' service-context texts (what an agent's system prompt gets), as the
    MCP ``instructions``: one paragraph per server, headed by its name when several.
    Each is asked under the pool's default time limit; one that fails is left out.

    Raises:
        ValueError: a named server is not running in the pool.
    """
    names = select_servers(pool, servers)
    parts: list[str] = []
    for name in names:
        try:
            text = await pool.server(name).get_service_context()
        except ServerError as exc:
            _logger.warning("no service context from %s: %s", name, exc)
            continue
        text = text.strip()
        if text:
            parts.append(text if len(names) == 1 else f"{name}: {text}")
    return "\n\n".join(parts) or None


def select_servers(pool: WorkerPool, names: Sequence[str] | None) -> list[str]:
    """The running servers named (all of them for None), in the order given.

    Raises:
        ValueError: a name is not a running server.
    """
    running = pool.names
    if names is None:
        return running
    missing = [name for name in names if name not in running]
    if missing:
        raise ValueError(
            f"no server named {', '.join(missing)}; servers: {', '.join(running) or '(none)'}"
        )
    return list(names)
