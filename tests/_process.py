"""Process checks for the tests that watch worker processes come and go."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is not a zombie (a zombie still
    answers ``kill(pid, 0)``; it is gone once reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state follows the command name, which may hold spaces and parentheses.
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
