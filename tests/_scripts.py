"""The console scripts of the environment running the tests.

A venv's scripts (``nativemcp``, ``mcp-server-git``) sit beside its interpreter. The
README runs the tests as ``.venv/bin/python -m pytest`` without activating the venv, so
they are not on ``PATH``: find them through ``sys.executable``, never by bare name.
"""

from __future__ import annotations

import sys
from pathlib import Path


def venv_script(name: str) -> str:
    """The path of console script ``name`` of the environment running the tests.

    Raises:
        FileNotFoundError: the environment has no such script (its package is missing).
    """
    script = Path(sys.executable).parent / name
    if not script.exists():
        raise FileNotFoundError(f"no console script {name!r} beside {sys.executable}")
    return str(script)
