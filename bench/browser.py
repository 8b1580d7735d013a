"""What a model reads from a browser server, and how fast it acts: ours against Playwright's.

The contenders, both driven by the official MCP client over stdio and both on Debian's
Chromium:

- ``nativemcp serve browser --browser-allow <site>``: our built-in server;
- npm ``@playwright/mcp`` (the browser server most agents use), run with
  ``--headless --isolated --no-sandbox --executable-path /usr/bin/chromium``.

For each local page (a sign-up form, a shop catalog, release notes), the snapshot text
each server gives the model (``snapshot`` / ``browser_snapshot``): its bytes, its
o200k_base tokens (``quicktok``, offline), and whether every interactive element of the
page is named on a line with a ref. Then the time of navigate + snapshot + click (a
button that changes the page in place), median over rounds, the two servers in turn.

Goal: at most 0.7x Playwright's tokens with every interactive element present, and no
slower. ``@playwright/mcp`` is installed with npm into the user's cache folder on the
first run (the version below; Node 18+ from PATH).

Run: ``python -m bench.browser [--quick] [--json]``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import anyio

from bench._browser_site import Page, pages, serve
from bench._report import emit_json, parse_args, print_table, ratio

PLAYWRIGHT_MCP: Final = "@playwright/mcp@0.0.83"
"""The version compared against (checked to run on Debian's chromium)."""
CHROMIUM: Final = os.environ.get("NATIVEMCP_CHROMIUM", "/usr/bin/chromium")
TOKEN_GOAL: Final = 0.7
"""Our snapshot's tokens at most this fraction of Playwright's."""


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nativemcp" / "bench" / "playwright-mcp"


def _playwright_mcp() -> list[str]:
    """The command starting ``@playwright/mcp`` (installed with npm on first use)."""
    folder = _cache()
    cli = folder / "node_modules" / "@playwright" / "mcp" / "cli.js"
    if not cli.exists():
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("bench.browser: npm is needed to install @playwright/mcp (apt install npm)")
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
             "--loglevel=error", PLAYWRIGHT_MCP],
            check=True,
            stdout=sys.stderr,
        )  # fmt: skip
    node = shutil.which("node") or sys.exit("bench.browser: node is needed (apt install nodejs)")
    return [
        node, str(cli), "--headless", "--isolated", "--no-sandbox",
        "--executable-path", CHROMIUM,
    ]  # fmt: skip


def _counter() -> Any:
    try:
        import quicktok
    except ImportError:
        sys.exit("bench.browser: install the bench extra (quicktok-v1 counts tokens offline)")
    return quicktok.get_encoding("o200k_base")


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def named_with_ref(text: str, role: str, name: str) -> bool:
    """Whether a line of ``text`` names ``role "name"`` with a ref."""
    needle = f'{role} "{name}"'
    return any(needle in line and "[ref=" in line for line in text.splitlines())


class Contender:
    """One server behind an MCP client, with its tool names."""

    def __init__(self, label: str, client: Any, prefix: str) -> None:
        self.label = label
        self.client = client
        self.prefix = prefix

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        result = await self.client.call_tool(self.prefix + tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{self.label} {tool} failed: {_text(result)}")
        return _text(result)

    async def navigate(self, url: str) -> str:
        return await self.call("navigate", {"url": url})

    async def snapshot(self) -> str:
        return await self.call("snapshot", {})

    async def click(self, ref: str, what: str) -> str:
        # @playwright/mcp names the ref "target" (0.0.83), with a description for consent.
        arguments = {"ref": ref} if self.prefix != "browser_" else {"target": ref, "element": what}
        return await self.call("click", arguments)


@contextlib.asynccontextmanager
async def _contenders(site: str, data: str) -> AsyncIterator[list[Contender]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    ours = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nativemcp.proxy.cli", "serve", "browser", "--browser-allow", site,
              "--data-dir", data],
    )  # fmt: skip
    command = _playwright_mcp()
    # It writes console logs and snapshots under its working folder: a temporary one.
    theirs = StdioServerParameters(command=command[0], args=command[1:], cwd=data)
    async with Client(ours) as native, Client(theirs) as playwright:
        tools = [tool.name for tool in (await native.list_tools()).tools]
        prefix = next(name for name in tools if name.endswith("navigate"))[: -len("navigate")]
        yield [
            Contender("nativemcp", native, prefix),
            Contender("playwright-mcp", playwright, "browser_"),
        ]


async def _read(contender: Contender, site: str, page: Page, count: Any) -> dict[str, Any]:
    await contender.navigate(site + page.path)
    text = await contender.snapshot()
    missing = [f"{r} {n!r}" for r, n in page.interactive if not named_with_ref(text, r, n)]
    return {
        "bytes": len(text.encode()),
        "tokens": len(count.encode(text)),
        "missing": missing,
        "text": text,
    }


async def _act(contender: Contender, url: str) -> float:
    """Seconds for navigate + snapshot + click on the form's "Save draft" button."""
    start = time.perf_counter()
    await contender.navigate(url)
    text = await contender.snapshot()
    match = re.search(r'button "Save draft" \[ref=([^\]]+)\]', text)
    if match is None:
        raise RuntimeError(f"{contender.label}: no Save draft button in its snapshot")
    await contender.click(match.group(1), "Save draft button")
    return time.perf_counter() - start


async def measure(quick: bool) -> dict[str, Any]:
    """Run the bench, print its tables and return its JSON part."""
    count = _counter()
    rounds = 3 if quick else 10
    with serve() as site, tempfile.TemporaryDirectory() as data:
        async with _contenders(site, data) as contenders:
            reads = {
                page.path: {c.label: await _read(c, site, page, count) for c in contenders}
                for page in pages()
            }
            for contender in contenders:  # warm up: the browser starts on first use
                await _act(contender, site + "/form")
            samples: dict[str, list[float]] = {c.label: [] for c in contenders}
            for _ in range(rounds):
                for contender in contenders:
                    samples[contender.label].append(await _act(contender, site + "/form"))
    rows = []
    pages_json: dict[str, Any] = {}
    for path, by in reads.items():
        ours, theirs = by["nativemcp"], by["playwright-mcp"]
        share = ratio(ours["tokens"], theirs["tokens"])
        rows.append(
            (
                path,
                theirs["bytes"],
                ours["bytes"],
                theirs["tokens"],
                ours["tokens"],
                share,
                "yes" if not theirs["missing"] else f"no: {', '.join(theirs['missing'])}",
                "yes" if not ours["missing"] else f"no: {', '.join(ours['missing'])}",
            )
        )
        pages_json[path] = {
            "playwright_bytes": theirs["bytes"],
            "nativemcp_bytes": ours["bytes"],
            "playwright_tokens": theirs["tokens"],
            "nativemcp_tokens": ours["tokens"],
            "token_ratio": round(share, 3),
            "playwright_missing": theirs["missing"],
            "nativemcp_missing": ours["missing"],
        }
    print_table(
        "Snapshot text a model reads (o200k_base tokens): @playwright/mcp vs nativemcp",
        [
            "page", "pw bytes", "ours bytes", "pw tokens", "ours tokens", "x pw tokens",
            "pw names all", "ours names all",
        ],
        rows,
    )  # fmt: skip
    ms = {label: statistics.median(values) * 1000 for label, values in samples.items()}
    print()
    print_table(
        f"navigate + snapshot + click on /form, median of {rounds} rounds (ms)",
        ["contender", "median ms", "x playwright-mcp"],
        [
            ("playwright-mcp", ms["playwright-mcp"], 1.0),
            ("nativemcp", ms["nativemcp"], ratio(ms["nativemcp"], ms["playwright-mcp"])),
        ],
    )
    worst = max(page["token_ratio"] for page in pages_json.values())
    complete = all(not page["nativemcp_missing"] for page in pages_json.values())
    faster = ms["nativemcp"] <= ms["playwright-mcp"]
    met = worst <= TOKEN_GOAL and complete and faster
    speed = ratio(ms["nativemcp"], ms["playwright-mcp"])
    print(
        f"\ngoal: <= {TOKEN_GOAL}x tokens (worst page {worst:.2f}x), every element named "
        f"({'yes' if complete else 'no'}), no slower ({speed:.2f}x): "
        f"{'met' if met else 'NOT met'}"
    )
    return {
        "bench": "browser",
        "quick": quick,
        "playwright_mcp": PLAYWRIGHT_MCP,
        "token_goal": TOKEN_GOAL,
        "pages": pages_json,
        "act_ms": {label: round(value, 1) for label, value in ms.items()},
        "act_ratio": round(speed, 3),
        "worst_token_ratio": worst,
        "goal_met": met,
        "rounds": rounds,
    }


def main() -> None:
    """``python -m bench.browser [--quick] [--json]``."""
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "browser bench")
    if not Path(CHROMIUM).exists():
        sys.exit(f"bench.browser: no Chromium at {CHROMIUM} (apt install chromium)")
    result = anyio.run(measure, args.quick)
    if args.json:
        emit_json(result)


if __name__ == "__main__":
    main()
