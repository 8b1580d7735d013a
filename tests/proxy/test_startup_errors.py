"""Start-up mistakes a new user makes are one clear error saying what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nativemcp.proxy import PoolConfig, SyncWorkerPool, WorkerPool
from nativemcp.workers import Server

SCRIPT_WITHOUT_GUARD = """
import anyio
from nativemcp.proxy import PoolConfig, SyncWorkerPool, WorkerPool
from nativemcp.workers import Server

server = Server("greeter")

@server.tool
async def hello(name: str) -> str:
    return "hi " + name

async def main() -> None:
    async with WorkerPool([server]) as pool:
        print(await pool.server("greeter").hello(name="x"))

anyio.run(main)
"""


@pytest.mark.real_process
def test_a_script_without_the_main_guard_gets_an_error_naming_the_guard(tmp_path: Path) -> None:
    (tmp_path / "noguard.py").write_text(SCRIPT_WITHOUT_GUARD)
    done = subprocess.run(
        [sys.executable, "noguard.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nativemcp.protocol._exceptions.ServerStartError: worker for 'greeter'")
    guard = '`if __name__ == "__main__":`'
    assert f"noguard.py opens a WorkerPool in code that is not under {guard}" in last
    # The worker's side is one line too, not multiprocessing's "bootstrapping" traceback.
    assert "bootstrapping phase" not in done.stderr
    assert "nativemcp: noguard.py opened a WorkerPool while a worker process" in done.stderr


def test_a_server_defined_inside_a_function_is_refused_before_any_process_starts() -> None:
    def build() -> Server:
        server = Server("inner")

        @server.tool
        async def ping() -> str:
            return "pong"

        return server

    with pytest.raises(TypeError) as caught:
        WorkerPool([build()])
    message = str(caught.value)
    assert message == (
        "server 'inner' is defined inside the function build(), so a worker process cannot "
        "import it: define it at module level, or pass a factory or a 'module:attribute' "
        "string to the pool"
    )
    # In-process, where nothing is imported by reference, it is fine.
    WorkerPool([build()], in_process=["inner"])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("notaurl", ""),
        ("me:hunter2@db/app", ""),
        ("mysql://me:hunter2@db", ", not 'mysql://me@db'"),
    ],
)
def test_a_database_url_that_is_not_postgresql_is_refused_echoing_no_password(
    url: str, shown: str
) -> None:
    with pytest.raises(ValueError) as caught:
        WorkerPool(database_url=url)
    assert str(caught.value) == (
        f"database_url must be a postgresql://user:password@host/database URL{shown}"
    )


def test_a_data_dir_that_is_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        WorkerPool(data_dir=afile)


def test_a_misspelled_pool_option_is_refused_by_name_as_python_refuses_a_keyword() -> None:
    with pytest.raises(TypeError, match=r"WorkerPool\(\) got an unexpected keyword .* 'timout'"):
        WorkerPool(timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"PoolConfig.build\(\) got an unexpected keyword"):
        PoolConfig.build(data_dirr="x")  # type: ignore[call-arg]


def test_the_blocking_pool_refuses_the_options_only_the_async_pool_has() -> None:
    # Not silently ignored: a blocking pool has no external servers and no replicas.
    given: dict[str, Any] = {}
    for option in ("mcp_servers", "in_process", "replicas", "database_url"):
        given = {option: None}
        with pytest.raises(TypeError, match=f"SyncWorkerPool\\(\\) got .* '{option}'"):
            SyncWorkerPool(**given)
    assert SyncWorkerPool(timeout=None).config.timeouts.call is None


TWO_SERVERS_WITHOUT_GUARD = """
import anyio
from nativemcp.proxy import WorkerPool

async def main() -> None:
    async with WorkerPool(data_dir="data", builtins=["content-store", "planning"]):
        pass

anyio.run(main)
"""

SYNC_POOL_WITHOUT_GUARD = """
from nativemcp.proxy import SyncWorkerPool

with SyncWorkerPool(data_dir="data", builtins=["planning"]) as pool:
    print(pool.names)
"""


def _run_script(folder: Path, text: str) -> subprocess.CompletedProcess[str]:
    (folder / "noguard.py").write_text(text)
    return subprocess.run(
        [sys.executable, "noguard.py"], cwd=folder, capture_output=True, text=True, timeout=60
    )


@pytest.mark.real_process
def test_servers_that_fail_to_start_alike_are_one_error_naming_them_all(tmp_path: Path) -> None:
    done = _run_script(tmp_path, TWO_SERVERS_WITHOUT_GUARD)
    assert done.returncode == 1
    assert "ExceptionGroup" not in done.stderr and "sub-exception" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nativemcp.protocol._exceptions.ServerStartError: worker for ")
    assert "'content-store' and 'planning'" in last or "'planning' and 'content-store'" in last
    assert last.count("opens a WorkerPool") == 1


@pytest.mark.real_process
def test_a_sync_pool_script_without_the_guard_is_told_about_the_sync_pool(tmp_path: Path) -> None:
    done = _run_script(tmp_path, SYNC_POOL_WITHOUT_GUARD)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "noguard.py opens a SyncWorkerPool in code that is not under" in last
    assert "nativemcp: noguard.py opened a SyncWorkerPool while a worker process" in done.stderr
    assert "bootstrapping phase" not in done.stderr
