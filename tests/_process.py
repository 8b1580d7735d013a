"""Process checks for the tests that watch worker processes come and go."""

from __future__ import annotations

import subprocess
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


def stop(process: subprocess.Popen[bytes], sig: int, timeout: float = 30) -> None:
    """Send ``sig`` to ``process`` (unless it has exited), wait up to ``timeout`` s for
    it to exit, and kill it if it has not."""
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
