"""No Chromium outlives its worker, however the worker ends (SIGKILL included).

Playwright starts a driver process, which starts Chromium, which starts its renderer
and helper processes: grandchildren of the worker that no parent-death signal reaches.
So before the first browser starts, the worker sets `MARKER_VARIABLE` in its own
environment (every process it starts from then on inherits it) and starts a reaper: a
small process in a session of its own that blocks reading a pipe only the worker holds
open. When the worker exits, cleanly or killed, the pipe reaches end-of-file and the
reaper SIGKILLs every process still carrying the marker (``/proc``, as
``execute_shell`` does for its calls), then removes the worker's browser scratch folder
and exits. The driver and Chromium make their temporary files there (a profile of about
1.3 MB per browser started, download artifacts): killed, they cannot remove them, and
once the worker is gone nothing else knows they are not some other program's.

Run as ``python -m nativemcp.workers.browser._reaper MARKER_ENTRY SCRATCH_FOLDER``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from nativemcp.workers.process_sweep import carrying, kill_until_gone

__all__ = ["MARKER_VARIABLE", "REMOVE_WITHIN", "start_reaper"]

MARKER_VARIABLE: Final = "NATIVEMCP_BROWSER_OWNER"
"""Set in the worker (and so in the driver and every Chromium process) to a value
unique to the worker."""


REMOVE_WITHIN: Final = 10.0
"""Seconds the reaper keeps trying to remove the scratch folder."""


def start_reaper(value: str, scratch: Path) -> subprocess.Popen[bytes]:
    """Start the reaper for processes carrying ``MARKER_VARIABLE=value`` and for the
    folder ``scratch`` (removed, with everything in it, after the sweep).

    The caller keeps the returned process's stdin open for as long as it lives; closing
    it (or dying) makes the reaper sweep.
    """
    env = {key: item for key, item in os.environ.items() if key != MARKER_VARIABLE}
    return subprocess.Popen(
        [sys.executable, "-m", __name__, f"{MARKER_VARIABLE}={value}", str(scratch)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        # Its own session: a signal to the worker's process group does not reach it.
        start_new_session=True,
    )


def main() -> None:
    """Wait for end-of-file on stdin, then kill every process carrying the marker and
    remove the scratch folder (no process is left to write into it)."""
    marker, scratch = sys.argv[1], sys.argv[2]
    while sys.stdin.buffer.read(4096):
        pass
    deadline = time.monotonic() + REMOVE_WITHIN
    while True:
        kill_until_gone(lambda: carrying(marker))
        shutil.rmtree(scratch, ignore_errors=True)
        # A file written as the folder was walked (Chromium saves its state as it
        # shuts down, and its last write may land after the sweep) leaves it behind.
        if not os.path.lexists(scratch) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


if __name__ == "__main__":
    main()
