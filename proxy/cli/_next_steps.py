"""The content store's next steps in the command line's words.

A model reads ``More: list_content(store_id="st_1", offset=50)``; a person at the
command line reads ``More: nativemcp list --store notes --offset 50``. `CommandSteps`
is the content store's `NextSteps` for the CLI's content verbs; ``call`` keeps printing
the model's text, since it shows what a model would read.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from nativemcp.workers.content_store import NextSteps

__all__ = ["CommandSteps"]


class CommandSteps(NextSteps):
    """Next steps as ``nativemcp`` commands on ``store`` (the name the user typed), with
    the ``--data-dir`` they typed, if any, so the command reaches the same data."""

    def __init__(self, store: str, data_dir: Path | None = None) -> None:
        self._on = f"--store {shlex.quote(store)}"
        if data_dir is not None:
            self._on += f" --data-dir {shlex.quote(str(data_dir))}"

    def list_more(self, store_id: str, offset: int) -> str:
        """``More: nativemcp list --store S --offset N``."""
        return f"More: nativemcp list {self._on} --offset {offset}"

    def add_files(self, store_id: str) -> str:
        """``Add files with: nativemcp ingest PATH --store S``."""
        return f"Add files with: nativemcp ingest PATH... {self._on}"

    def create_store(self) -> str:
        """``Add files with: nativemcp ingest PATH --store NAME`` (it creates the store)."""
        return "Add files with: nativemcp ingest PATH... --store NAME (the store is created)."

    def read_hit(self, store_id: str, content_id: str, lines: tuple[int, int]) -> str:
        """``Read the top hit: nativemcp read CONTENT --store S --from A --to B``."""
        return (
            f"Read the top hit: nativemcp read {content_id} {self._on} "
            f"--from {lines[0]} --to {lines[1]}"
        )

    def read_more(self, store_id: str, content_id: str, from_line: int) -> str:
        """``(more: nativemcp read CONTENT --store S --from N)``."""
        return f"(more: nativemcp read {content_id} {self._on} --from {from_line})"
