"""The one mistake every spawned-process library sees first: a script without the
``if __name__ == "__main__":`` guard.

A worker process starts by importing the parent's main module again (the ``spawn``
and ``forkserver`` start methods both do), so top-level code that opens a pool runs
once more in each worker, where starting processes is refused. Without help the user
gets a worker traceback about "bootstrapping" and a parent error that says only "exited
with code 1". Here the worker prints one line and exits with `EXIT_NO_MAIN_GUARD`, and
the parent turns that code into an error naming the guard.
"""

from __future__ import annotations

import os
import sys
from typing import Final

import multiprocess

__all__ = ["EXIT_NO_MAIN_GUARD", "exit_if_bootstrapping", "no_main_guard_message"]

EXIT_NO_MAIN_GUARD: Final = 87
"""Exit code of a worker that re-ran a script's pool-opening top-level code."""


def _script() -> str:
    # A spawned worker imports the parent's script as `__mp_main__`.
    main = sys.modules.get("__mp_main__") or sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return os.path.basename(path) if path else "the main script"


def no_main_guard_message(server: str, pool: str = "WorkerPool") -> str:
    """The parent's one-line explanation of `EXIT_NO_MAIN_GUARD` for ``server`` (a
    server of a ``pool``, the class the script opened)."""
    return (
        f"worker for {server!r} could not start: {_script()} opens a {pool} in code "
        'that is not under `if __name__ == "__main__":`, and each worker process runs the '
        "script's top-level code again; move the code that starts the pool under that guard"
    )


def exit_if_bootstrapping(pool: str = "WorkerPool") -> None:
    """In a worker process that is still importing the parent's main module, print one
    line and exit with `EXIT_NO_MAIN_GUARD`; elsewhere, do nothing. ``pool`` is the
    class being opened, as the message names it."""
    if not getattr(multiprocess.current_process(), "_inheriting", False):
        return
    print(
        f"nativemcp: {_script()} opened a {pool} while a worker process was importing "
        'it: put the code that starts the pool under `if __name__ == "__main__":`',
        file=sys.stderr,
        flush=True,
    )
    # The process is half-started (still unpickling its task); nothing to clean up, and
    # a normal exit would run the script's remaining top-level code.
    os._exit(EXIT_NO_MAIN_GUARD)
