"""nativemcp from plain synchronous code: `SyncWorkerPool` calls each worker with
blocking I/O on the calling thread (no event loop anywhere).

Run it:  .venv/bin/python examples/sync_script.py [FOLDER]
It adds FOLDER's text files (default: a few it writes itself) to a content store in a
temporary data folder, searches it, and reads the top hit's lines.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from nativemcp.proxy import SyncWorkerPool


def sample_folder(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir()
    (folder / "straße.txt").write_text("Die Straße ist lang.\nHerr Müller wohnt hier.\n")
    (folder / "school.md").write_text("# 학교\n\n우리는 학교에서 공부했다.\n")
    return folder


def main(folder: Path | None) -> None:
    with tempfile.TemporaryDirectory() as data:
        folder = folder or sample_folder(Path(data))
        options = {"content-store": {"allowed_paths": [str(folder.resolve())]}}
        with SyncWorkerPool(
            data_dir=Path(data) / "s", builtins=["content-store"], options=options
        ) as pool:
            store = pool.server("content-store")
            info = store.create_store(name="docs")
            for path in sorted(folder.glob("*.*")):
                added = store.add_content(store_id=info.store_id, path=str(path.resolve()))
                print(f"added {added.filename}: {added.line_count} lines")
            found = store.keyword_similarity_search(store_id=info.store_id, query="strasse")
            for hit in found.results:
                print(f"{hit.filename}:{hit.line_range[0]}-{hit.line_range[1]} {hit.score:.2f}")
            if found.results:
                top = found.results[0]
                lines = store.read_content(
                    store_id=info.store_id,
                    content_id=top.content_id,
                    from_line=top.line_range[0],
                    to_line=top.line_range[1],
                )
                print(lines.content)


# Worker processes import this file again: run only under the guard.
if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
