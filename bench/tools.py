"""Tool search: what a model reads before its first call, whether the search finds the
right tool, and how long a search takes.

The catalog is what a user connects: the built-in servers (content store, planning,
workspace, browser), the official ``mcp-server-time`` and ``mcp-server-git`` (from the
venv) and npm's ``server-everything`` (from ``.ci/.node``, left out where it is not
installed), each started as ``nativemcp serve --mcp-config`` starts it, plus
``office`` (``bench/_tool_servers.py``), a server of ours described in Korean and
Japanese.

- ``tokens``: the o200k tokens of every definition (``tool_definitions(provider)``)
  against the two meta-tools (``tool_definitions(provider, search=True)``), per
  provider: what every request carries before the model does anything.
- ``recall@1`` / ``recall@5``: over the task descriptions in
  ``bench/data/tool_queries.json`` (how they were written is in that file), the share
  whose right tool is first / in the first five, for our BM25 (`ToolIndex`, as
  `WorkerPool.search_tools` ranks without the extra) and for bm25s (in process, its
  default tokenizer) over the same tool texts; also for each half of the queries
  (`query_half`: by the wanted tool, so one tool's phrasings stay in one half): the
  ranking was tuned on the first, the second is held out. Where the ``search-embed``
  extra is installed, the pool is made with ``search_embed=True``: ``fused`` is
  ``await pool.search_tools(query)`` (BM25 with the query's words widened to the
  catalog's nearest, fused with the embedding), ``wordllama``
  the embedding's ranking alone (`ToolEmbeddings`).
- ``latency``: p50 / p95 of ``await pool.search_tools(query)`` over every query (fused
  where the extra is installed), of BM25 alone (``ToolIndex.search``, in process), and
  of the fused search over the catalog twice over (160 tools, in process).

Run: ``python -m bench.tools [--quick] [--json]``
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import msgspec

from bench._report import emit_json, parse_args, print_table, ratio
from nativemcp.protocol import Tool, service_info
from nativemcp.proxy import WorkerPool
from nativemcp.proxy.llm import PROVIDERS, count_tokens, exact_counts, token_note
from nativemcp.proxy.tool_search import (
    IndexedTool,
    ToolEmbeddings,
    ToolIndex,
    embedding_available,
    embedding_text,
    tool_text,
)

ROOT: Final = Path(__file__).resolve().parents[1]
QUERIES: Final = Path(__file__).with_name("data") / "tool_queries.json"
_NODE_BIN: Final = ROOT / ".ci" / ".node" / "node_modules" / ".bin"


def _external() -> dict[str, Any]:
    servers: dict[str, Any] = {
        "time": {
            "command": sys.executable,
            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        },
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"]},
    }
    everything = _NODE_BIN / "mcp-server-everything"
    if everything.exists():
        servers["everything"] = {
            "command": str(everything),
            "args": ["stdio"],
            "env": {"PATH": f"{_NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
            "required": False,
        }
    return servers


def load_queries() -> list[dict[str, str]]:
    """The task descriptions and the full name of the tool each one needs."""
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    return list(data["queries"])


def query_half(query: dict[str, str]) -> int:
    """0 for a query of the tuning half, 1 for the held-out half: by the CRC-32 of the
    tool it wants, so that every phrasing for one tool lands in the same half."""
    return zlib.crc32(query["tool"].encode()) % 2


def _indexed(listed: Tool) -> IndexedTool:
    """A listed tool (under its full name) as the pool's index holds it."""
    service = service_info(listed)
    assert service is not None
    own = msgspec.structs.replace(listed, name=service.tool_name)
    return IndexedTool(listed.name, service.server_name, own)


def _bm25s_ranker(tools: list[IndexedTool]) -> Any:
    """bm25s over the same tool texts, with its default tokenizer (None: not installed)."""
    try:
        import bm25s
    except ImportError:
        return None
    corpus = [tool_text(t.full_name, t.server, t.tool) for t in tools]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, show_progress=False), show_progress=False)

    def rank(query: str, k: int) -> list[str]:
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        found, scores = retriever.retrieve(
            tokens, k=min(k, len(tools)), show_progress=False, n_threads=1
        )
        return [tools[int(i)].full_name for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return rank


def _embedding_ranker(tools: list[IndexedTool]) -> Any:
    """The embedding's ranking alone, as the fused search embeds (None: no extra)."""
    if not embedding_available():
        return None
    embeddings = ToolEmbeddings(
        [embedding_text(t.tool.name, t.tool.title, t.tool.description) for t in tools]
    )

    def rank(query: str, k: int) -> list[str]:
        return [tools[n].full_name for n in embeddings.ranking(query)[:k]]

    return rank


def _timed(search: Any, queries: list[dict[str, str]], rounds: int) -> list[float]:
    """Seconds per ``search(query)`` over every query, ``rounds`` times, sorted."""
    samples = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            search(query["query"])
            samples.append(time.perf_counter() - start)
    return sorted(samples)


def _percentiles(samples: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(samples) * 1e3,
        "p95": samples[int(0.95 * (len(samples) - 1))] * 1e3,
    }


def _twice(tools: list[IndexedTool]) -> list[IndexedTool]:
    """The catalog and a copy of it under other full names (twice the tools)."""
    return tools + [tool._replace(full_name=f"copy_{tool.full_name}") for tool in tools]


def _recall(ranked: list[list[str]], expected: list[str], k: int) -> float:
    hits = sum(1 for names, want in zip(ranked, expected, strict=True) if want in names[:k])
    return hits / len(expected) if expected else 0.0


async def main(quick: bool) -> dict[str, Any]:
    """Start the catalog, count its definitions, run every query; the report."""
    queries = load_queries()
    embed = embedding_available()
    with tempfile.TemporaryDirectory(prefix="nativemcp-tools-") as folder:
        async with WorkerPool(
            ["bench._tool_servers:server"],
            data_dir=folder,
            builtins=["content-store", "planning", "workspace", "browser"],
            mcp_servers=_external(),
            search_embed=embed,
            # The catalog's definitions and the two meta-tools' alone: read_result,
            # declared beside either under a result budget, would add the same to both.
            result_budget=None,
        ) as pool:
            tools = await pool.list_tools()
            names = {tool.name for tool in tools}
            unknown = sorted({q["tool"] for q in queries} - names)
            # A query whose server did not start (everything without Node) is left out.
            queries = [q for q in queries if q["tool"] in names]
            tokens = {}
            for provider in PROVIDERS:
                full = await pool.tool_definitions(provider)
                meta = await pool.tool_definitions(provider, search=True)
                tokens[provider] = (
                    count_tokens(json.dumps(full, ensure_ascii=False)),
                    count_tokens(json.dumps(meta, ensure_ascii=False)),
                )
            first = time.perf_counter()
            await pool.search_tools("warm up the index")
            build_ms = (time.perf_counter() - first) * 1e3
            pooled: list[list[str]] = []
            samples: list[float] = []
            rounds = 1 if quick else 5
            for _ in range(rounds):
                pooled = []
                for query in queries:
                    start = time.perf_counter()
                    found = await pool.search_tools(query["query"], 5)
                    samples.append(time.perf_counter() - start)
                    pooled.append([match.name for match in found])
            indexed = [_indexed(tool) for tool in tools]
            servers = pool.names
    samples.sort()
    # BM25 alone: the index the pool searches without the extra, in process.
    plain = ToolIndex(indexed)
    ours = [[m.name for m in plain.search(q["query"], 5)] for q in queries]
    latency = {
        "pool_fused" if embed else "pool_bm25": _percentiles(samples),
        "bm25": _percentiles(_timed(plain.search, queries, rounds)),
    }
    fused = pooled if embed else None
    if embed:
        twice = ToolIndex(_twice(indexed), embed=True)
        latency["fused_twice"] = _percentiles(_timed(twice.search, queries, rounds))
    rank = _bm25s_ranker(indexed)
    theirs = [rank(q["query"], 5) for q in queries] if rank is not None else None
    embedding = _embedding_ranker(indexed)
    embedded = [embedding(q["query"], 5) for q in queries] if embedding else None
    expected = [q["tool"] for q in queries]
    cjk = [i for i, q in enumerate(queries) if q.get("language") in ("ko", "ja")]
    halves = [[i for i, q in enumerate(queries) if query_half(q) == h] for h in (0, 1)]

    def recalls(ranked: list[list[str]] | None, subset: Sequence[int] | None = None) -> Any:
        if ranked is None:
            return None
        pick = list(range(len(expected))) if subset is None else list(subset)
        got = [ranked[i] for i in pick]
        want = [expected[i] for i in pick]
        return {"at1": _recall(got, want, 1), "at5": _recall(got, want, 5), "queries": len(pick)}

    return {
        "servers": servers,
        "tools": len(tools),
        "exact_tokens": exact_counts(),
        "tokens": {
            provider: {"full": full, "search": meta, "share": ratio(meta, full)}
            for provider, (full, meta) in tokens.items()
        },
        "recall": {
            "nativemcp": recalls(ours),
            "wordllama": recalls(embedded),
            "fused": recalls(fused),
            "bm25s": recalls(theirs),
        },
        "recall_tuning": {
            "nativemcp": recalls(ours, halves[0]),
            "wordllama": recalls(embedded, halves[0]),
            "fused": recalls(fused, halves[0]),
            "bm25s": recalls(theirs, halves[0]),
        },
        "recall_held_out": {
            "nativemcp": recalls(ours, halves[1]),
            "wordllama": recalls(embedded, halves[1]),
            "fused": recalls(fused, halves[1]),
            "bm25s": recalls(theirs, halves[1]),
        },
        "recall_cjk": {
            "nativemcp": recalls(ours, cjk),
            "wordllama": recalls(embedded, cjk),
            "fused": recalls(fused, cjk),
            "bm25s": recalls(theirs, cjk),
        },
        "latency_ms": {
            **latency,
            "first_search_ms": build_ms,
            "searches": len(samples),
            "tools_twice": 2 * len(indexed),
        },
        # The misses of what search_tools answers here (fused where the extra is).
        "misses_of": "fused" if embed else "BM25",
        "misses": [
            {"query": q["query"], "want": q["tool"], "got": got[:3]}
            for q, got in zip(queries, pooled, strict=True)
            if q["tool"] not in got[:5]
        ],
        "queries_for_missing_servers": unknown,
    }


def cli(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, run the bench, print its tables (and one JSON line with ``--json``)."""
    args = parse_args(__doc__.splitlines()[0] if __doc__ else "bench.tools", argv)
    report = anyio.run(main, args.quick)
    print(f"{report['tools']} tools from {len(report['servers'])} servers; {token_note()}")
    print_table(
        "Tokens the model reads before its first call",
        ["provider", "every definition", "search_tools + call_tool", "share"],
        [
            [provider, row["full"], row["search"], f"{row['share']:.1%}"]
            for provider, row in report["tokens"].items()
        ],
    )
    rows = []
    for label, key in (
        ("all queries", "recall"),
        ("tuning half", "recall_tuning"),
        ("held-out half", "recall_held_out"),
        ("Korean + Japanese", "recall_cjk"),
    ):
        ours = report[key]["nativemcp"]
        row = [f"{label} ({ours['queries']})", f"{ours['at1']:.2f}", f"{ours['at5']:.2f}"]
        for other in ("fused", "wordllama", "bm25s"):
            found = report[key][other]
            row += [f"{found['at1']:.2f}", f"{found['at5']:.2f}"] if found else ["-", "-"]
        rows.append(row)
    columns = ["BM25", "fused", "wordllama", "bm25s"]
    print_table(
        "Recall of the right tool",
        ["queries", *(f"{name} @{k}" for name in columns for k in (1, 5))],
        rows,
    )
    latency = report["latency_ms"]
    for key, label in (
        ("pool_fused", "await pool.search_tools, fused"),
        ("pool_bm25", "await pool.search_tools, BM25"),
        ("bm25", "BM25 alone, in process"),
        ("fused_twice", f"fused over {latency['tools_twice']} tools, in process"),
    ):
        if key in latency:
            row = latency[key]
            print(f"{label}: p50 {row['p50']:.3f} ms, p95 {row['p95']:.3f} ms")
    print(
        f"({latency['searches']} searches each; the first search, building the index: "
        f"{latency['first_search_ms']:.1f} ms)"
    )
    if report["misses"]:
        print(f"not in the first five ({report['misses_of']}, {len(report['misses'])}):")
        for miss in report["misses"]:
            print(f"  {miss['query']!r}: want {miss['want']}, got {', '.join(miss['got'])}")
    if args.json:
        emit_json(report)
    return report


if __name__ == "__main__":
    cli()
