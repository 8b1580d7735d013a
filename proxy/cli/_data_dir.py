"""Where the command line keeps its data when ``--data-dir`` is not given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["DATA_DIR_ENV", "default_data_dir"]

DATA_DIR_ENV: Final = "NATIVEMCP_DATA_DIR"
"""Environment variable that overrides the default data folder."""


def default_data_dir() -> Path:
    """Where nativemcp keeps its data: ``$NATIVEMCP_DATA_DIR``, else the user data folder
    (``$XDG_DATA_HOME/nativemcp``, else ``~/.local/share/nativemcp``)."""
    explicit = os.environ.get(DATA_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "nativemcp"
