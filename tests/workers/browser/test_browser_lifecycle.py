"""Chromium starts on first use and never outlives its worker, however the worker ends.

Each test marks the processes it starts with an environment variable of its own (the
worker, the Playwright driver, every Chromium process and the reaper inherit it) and
looks for them in ``/proc``: after the pool closes, after SIGKILL of the worker, and
after SIGKILL of the process that opened the pool, none may be left. Nor may any of the
files they made in the temporary folder (Chromium's profile, Playwright's artifacts):
each test gives its processes a ``TMPDIR`` of their own and looks there.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from _browser_pages import (
    PageServer,
    command_line,
    require_chromium,
    tagged_processes,
    wait_until,
)

from nativemcp.protocol import ToolError
from nativemcp.proxy import WorkerPool
from nativemcp.workers.browser import BrowserAPI
from nativemcp.workers.browser._sessions import LONGEST_TMPDIR

require_chromium()

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.anyio_backends("asyncio"),
    pytest.mark.real_process,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

TAG_VARIABLE = "NATIVEMCP_TEST_BROWSER_TAG"
GONE_WITHIN = 20.0
"""Seconds the processes get to go (the promise is moments; the machine may be loaded)."""


@pytest.fixture
def tag(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``NAME=value`` set in this process's environment, so its workers inherit it."""
    value = secrets.token_hex(8)
    monkeypatch.setenv(TAG_VARIABLE, value)
    entry = f"{TAG_VARIABLE}={value}"
    yield entry
    for pid in _left(entry):  # leave nothing behind, even on failure
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def temp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``TMPDIR`` for the processes this test starts (inherited, as ``tag`` is): a short
    path, as Chromium needs (`LONGEST_TMPDIR`), not in ``tmp_path``."""
    root = Path(tempfile.mkdtemp(prefix="nmcp-"))
    monkeypatch.setenv("TMPDIR", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _browser_files(root: Path) -> list[str]:
    """What the browser made in ``root``: the worker's scratch folder and anything of
    Playwright's or Chromium's beside it (other programs' files are not counted)."""
    return sorted(
        path.name
        for path in root.iterdir()
        if path.name.startswith(("nativemcp-browser-", "playwright", ".org.chromium"))
    )


def _tree(root: Path) -> list[str]:
    """Every path below ``root``, relative to it (what a failed check found left)."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def _scratch_holds_the_profile(root: Path) -> bool:
    """While Chromium runs: its profile is in the worker's scratch folder, nowhere else."""
    (scratch,) = _browser_files(root)
    return scratch.startswith("nativemcp-browser-") and any(
        path.name.startswith("playwright_chromiumdev_profile-")
        for path in (root / scratch).iterdir()
    )


def _left(tag: str) -> list[int]:
    """The tagged processes but multiprocess's resource tracker, which serves the test
    process (started with its first pool) and ends with it."""
    return [
        pid
        for pid in tagged_processes(tag)
        if "resource_tracker" not in " ".join(command_line(pid))
    ]


def _chromium(tag: str) -> list[int]:
    return [
        pid
        for pid in tagged_processes(tag)
        if any("chrom" in Path(arg).name for arg in command_line(pid)[:1])
    ]


def _browser_process(tag: str) -> int:
    """Chromium's browser process: its own binary (not Debian's wrapper script) with the
    pipe Playwright talks over, and no --type= (renderers, GPU, zygotes)."""
    (main,) = [
        pid
        for pid in _chromium(tag)
        if os.readlink(f"/proc/{pid}/exe").endswith("/chromium")
        and "--remote-debugging-pipe" in command_line(pid)
        and not any(arg.startswith("--type=") for arg in command_line(pid))
    ]
    return main


def _driver_parent(tag: str) -> int:
    """The worker: the parent of the Playwright driver."""
    for pid in tagged_processes(tag):
        args = command_line(pid)
        if any("playwright" in arg for arg in args) and "run-driver" in args:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError("no Playwright driver among the tagged processes")


def _pool(folder: Path, site: PageServer, **options: object) -> WorkerPool:
    return WorkerPool(
        data_dir=folder,
        builtins=["browser"],
        browser_allowed_origins=[site.base],
        options={"browser": dict(options)},
        timeout=60,
    )


async def test_chromium_starts_on_first_use_and_ends_with_the_pool(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path
) -> None:
    async with _pool(tmp_path, site) as pool:
        assert _chromium(tag) == []  # nothing started before a call needs a page
        await pool.server(BrowserAPI).navigate(url=f"{site.base}/")
        assert _chromium(tag)
        assert _scratch_holds_the_profile(temp_root)
    assert wait_until(lambda: _left(tag) == [], GONE_WITHIN), [
        command_line(pid)[:2] for pid in _left(tag)
    ]
    assert wait_until(lambda: _browser_files(temp_root) == [], GONE_WITHIN)


async def test_sigkill_of_the_worker_leaves_no_chromium_and_none_of_its_files(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path
) -> None:
    async with _pool(tmp_path, site) as pool:
        await pool.server(BrowserAPI).navigate(url=f"{site.base}/")
        worker = _driver_parent(tag)
        assert _chromium(tag)
        assert _scratch_holds_the_profile(temp_root)
        os.kill(worker, signal.SIGKILL)
        assert wait_until(lambda: _chromium(tag) == [], GONE_WITHIN)
        assert wait_until(lambda: _browser_files(temp_root) == [], GONE_WITHIN), _tree(temp_root)


async def test_a_hung_chromium_is_killed_when_its_worker_dies(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path
) -> None:
    # A browser that hangs (here: stopped) never notices its pipe closing; only the
    # reaper's SIGKILL ends it.
    async with _pool(tmp_path, site) as pool:
        await pool.server(BrowserAPI).navigate(url=f"{site.base}/")
        worker = _driver_parent(tag)
        os.kill(_browser_process(tag), signal.SIGSTOP)
        os.kill(worker, signal.SIGKILL)
        assert wait_until(lambda: _chromium(tag) == [], GONE_WITHIN)
        assert wait_until(lambda: _browser_files(temp_root) == [], GONE_WITHIN)


@pytest.mark.timeout(120)
def test_sigkill_of_the_pools_process_leaves_no_chromium(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path
) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, anyio\n"
        "from nativemcp.proxy import WorkerPool\n"
        "async def main() -> None:\n"
        "    async with WorkerPool(data_dir=sys.argv[2], builtins=['browser'],\n"
        "                          browser_allowed_origins=[sys.argv[1]]) as pool:\n"
        "        await pool.server('browser').navigate(url=sys.argv[1] + '/')\n"
        "        print('ready', flush=True)\n"
        "        await anyio.sleep(600)\n"
        "if __name__ == '__main__':\n"
        "    anyio.run(main)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, str(script), site.base, str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        # An empty line: the parent failed (its traceback is on stderr).
        assert parent.stdout.readline().strip() == "ready"
        assert _chromium(tag)
        parent.kill()
        parent.wait(10)
        assert wait_until(lambda: _left(tag) == [], GONE_WITHIN), [
            command_line(pid)[:2] for pid in _left(tag)
        ]
        assert wait_until(lambda: _browser_files(temp_root) == [], GONE_WITHIN)
    finally:
        parent.kill()
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()


async def test_chromium_starts_where_a_scratch_folder_would_make_its_tmpdir_too_long(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Room for Chromium's socket in TMPDIR itself, none in a folder made inside it.
    room = LONGEST_TMPDIR - len(os.fsencode(temp_root)) - 1
    longest = temp_root / ("d" * (room - len("/nativemcp-browser-XXXXXXXX") + 1))
    longest.mkdir()
    assert len(os.fsencode(longest)) <= LONGEST_TMPDIR
    monkeypatch.setenv("TMPDIR", str(longest))
    async with _pool(tmp_path, site) as pool:
        page = await pool.server(BrowserAPI).navigate(url=f"{site.base}/")
        assert page.title == "Home"
    assert wait_until(lambda: _left(tag) == [], GONE_WITHIN)


async def test_a_crashed_browser_fails_the_pending_call_and_the_next_call_starts_afresh(
    tmp_path: Path, site: PageServer, tag: str, temp_root: Path
) -> None:
    async with _pool(tmp_path, site) as pool:
        browser = pool.server(BrowserAPI)
        await browser.navigate(url=f"{site.base}/dynamic")
        main = _browser_process(tag)
        failure: list[BaseException] = []

        async def wait_forever() -> None:
            try:
                await browser.wait_for_text(text="never shown", timeout=25)
            except ToolError as exc:
                failure.append(exc)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(wait_forever)
                # No signal comes out of the worker when the wait has begun: give the
                # call a moment to reach the page before Chromium dies under it.
                await anyio.sleep(1)
                os.kill(main, signal.SIGKILL)
        assert failure, "the pending call did not fail"
        assert "the browser closed unexpectedly" in str(failure[0])
        again = await browser.navigate(url=f"{site.base}/")
        assert again.title == "Home"
        assert [s.session_id for s in (await browser.list_sessions()).sessions] == ["default"]
    # The killed Chromium's profile too: the reaper removes the whole scratch folder.
    assert wait_until(lambda: _browser_files(temp_root) == [], GONE_WITHIN)


async def test_an_idle_session_closes_after_the_idle_timeout(
    tmp_path: Path, site: PageServer, tag: str
) -> None:
    async with _pool(tmp_path, site, idle_timeout=0.5) as pool:
        browser = pool.server(BrowserAPI)
        await browser.navigate(url=f"{site.base}/", session_id="idle")
        for _ in range(100):
            if not (await browser.list_sessions()).sessions:
                break
            await anyio.sleep(0.1)
        assert (await browser.list_sessions()).sessions == []
