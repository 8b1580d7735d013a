"""A server whose tool says which `nativemcp serve` process ran it; a module so worker
processes can import it."""

from __future__ import annotations

import os

from nativemcp.workers import Server

server = Server("pids", description="Which serve process answers")


@server.tool
def serve_pid() -> int:
    """The pid of the serve process whose pool runs this worker."""
    return os.getppid()
