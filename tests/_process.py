"""Process checks for the tests that watch worker processes come and go."""

from __future__ import annotations

import socket
import subprocess
import time
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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes], limit: float = 60) -> None:
    """Wait until ``process`` (a server) accepts connections on ``port``.

    Raises:
        AssertionError: the process exited, or did not listen within ``limit`` seconds.
    """
    deadline = time.monotonic() + limit
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert process.poll() is None, f"{process.args!r} exited"
            assert time.monotonic() < deadline, f"{process.args!r} did not listen in {limit} s"
            time.sleep(0.1)


def stop_all(processes: list[subprocess.Popen[bytes]], grace: float = 30) -> None:
    """SIGTERM every process still running, then wait for each: one that has not exited
    within ``grace`` seconds is killed."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
