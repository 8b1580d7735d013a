"""The README's install is one a type checker can follow: ``mypy --strict`` in a user's
own folder (outside the repository, no MYPYPATH) type-checks code that uses nativemcp,
the Python blocks of the README and the docs pages, and the examples.

This checks the environment the tests run in, which `.ci/run` installs with the
README's command (``pip install -e . --config-settings editable_mode=strict``). With
the default editable mode mypy reports ``Cannot find implementation or library stub
for module named "nativemcp.proxy"``: run the README's install command again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from _pages import ROOT, unique_blocks

USER_CODE = """
from typing import Any, assert_type

import anyio

from nativemcp.protocol import NativeMCPResponse, result_text
from nativemcp.proxy import WorkerPool
from nativemcp.workers.content_store import ContentStoreAPI, SearchResult


async def main() -> None:
    async with WorkerPool(data_dir="data") as pool:
        store = pool.server(ContentStoreAPI)
        info = await store.create_store(name="notes")
        found = await store.keyword_similarity_search(store_id=info.store_id, query="x")
        assert_type(found, SearchResult)
        response = await pool.server("planning").call_tool("get_current_state", {})
        assert_type(response, NativeMCPResponse[Any])
        text: str = result_text(response)  # the typed way to the model's text
        print(text)


if __name__ == "__main__":
    anyio.run(main)
"""


def test_mypy_strict_in_a_users_folder_follows_the_installed_package(tmp_path: Path) -> None:
    (tmp_path / "user_code.py").write_text(USER_CODE)
    for number, block in enumerate(unique_blocks("python").values()):
        (tmp_path / f"docs_block_{number}.py").write_text(block)
    for example in (ROOT / "examples").glob("*.py"):
        shutil.copy(example, tmp_path / example.name)
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    files = sorted(path.name for path in tmp_path.glob("*.py"))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".cache"), *files],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        "mypy --strict failed in a user's folder; if it cannot find nativemcp, install "
        "with the README's command (--config-settings editable_mode=strict)\n" + done.stdout
    )
