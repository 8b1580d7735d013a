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
# The second set: from bench.codemode's tasks, written before round 5's changes, never
# tuned on (its how_written says how).
TASK_QUERIES: Final = Path(__file__).with_name("data") / "tool_queries_tasks.json"
LATENCY_TOOLS: Final = 100
_NODE_BIN: Final = ROOT / ".ci" / ".node" / "node_modules" / ".bin"


def _external(folder: str) -> dict[str, Any]:
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
    memory = _NODE_BIN / "mcp-server-memory"
    if memory.exists():  # the second query set's memory_team task needs it
        servers["memory"] = {
            "command": str(memory),
            "env": {
                "MEMORY_FILE_PATH": str(Path(folder) / "memory.jsonl"),
                "PATH": os.environ.get("PATH", ""),
            },
            "required": False,
        }
    return servers


def load_queries(path: Path = QUERIES) -> list[dict[str, str]]:
    """The task descriptions of a query set (the tuning set unless ``path``) and the
    full name of the tool each one needs."""
    data = json.loads(path.read_text(encoding="utf-8"))
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


def _timed(search: Any, queries: list[dict[str, str]], rounds: int) -> dict[str, float]:
    """p50 / p95 of ``search(query)`` over every query, ``rounds`` times: wall-clock
    milliseconds, and the CPU time of this thread (``cpu_p50`` / ``cpu_p95``: what a
    search costs where other work shares the cores, as on the development machine)."""
    wall, cpu = [], []
    for _ in range(rounds):
        for query in queries:
            start, start_cpu = time.perf_counter(), time.thread_time()
            search(query["query"])
            cpu.append(time.thread_time() - start_cpu)
            wall.append(time.perf_counter() - start)
    cpu_ms = _percentiles(sorted(cpu))
    return {**_percentiles(sorted(wall)), "cpu_p50": cpu_ms["p50"], "cpu_p95": cpu_ms["p95"]}


def _percentiles(samples: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(samples) * 1e3,
        "p95": samples[int(0.95 * (len(samples) - 1))] * 1e3,
    }


def _padded(tools: list[IndexedTool], size: int) -> list[IndexedTool]:
    """The catalog, grown to ``size`` tools by copies of its tools under other full
    names (or its first ``size``)."""
    grown = list(tools)
    for n in range(size):
        if len(grown) >= size:
            break
        tool = tools[n % len(tools)]
        grown.append(tool._replace(full_name=f"copy{n // len(tools)}_{tool.full_name}"))
    return grown[:size]


def _recall(ranked: list[list[str]], expected: list[str], k: int) -> float:
    hits = sum(1 for names, want in zip(ranked, expected, strict=True) if want in names[:k])
    return hits / len(expected) if expected else 0.0


async def _run_pool(
    folder: str, queries: list[dict[str, str]], embed: bool, rounds: int
) -> dict[str, Any]:
    """Start the catalog, count its definitions, search every query through the pool."""
    async with WorkerPool(
        ["bench._tool_servers:server"],
        data_dir=folder,
        builtins=["content-store", "planning", "workspace", "browser"],
        mcp_servers=_external(folder),
        search_embed=embed,
        # The catalog's definitions and the two meta-tools' alone: read_result,
        # declared beside either under a result budget, would add the same to both.
        result_budget=None,
    ) as pool:
        tools = await pool.list_tools()
        names = {tool.name for tool in tools}
        # A query whose server did not start (everything or memory without Node) is left out.
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
        for _ in range(rounds):
            pooled = []
            for query in queries:
                start = time.perf_counter()
                found = await pool.search_tools(query["query"], 5)
                samples.append(time.perf_counter() - start)
                pooled.append([match.name for match in found])
        return {
            "tools": tools,
            "names": names,
            "queries": queries,
            "tokens": tokens,
            "build_ms": build_ms,
            "pooled": pooled,
            "samples": sorted(samples),
            "servers": pool.names,
        }


def _recall_table(
    rankings: dict[str, list[list[str]] | None],
    expected: list[str],
    subsets: dict[str, list[int]],
) -> dict[str, dict[str, Any]]:
    """Recall@1 / @5 of each ranking over each subset of the queries (by index)."""

    def recalls(ranked: list[list[str]] | None, pick: list[int]) -> Any:
        if ranked is None:
            return None
        got = [ranked[i] for i in pick]
        want = [expected[i] for i in pick]
        return {"at1": _recall(got, want, 1), "at5": _recall(got, want, 5), "queries": len(pick)}

    return {
        subset: {name: recalls(ranked, pick) for name, ranked in rankings.items()}
        for subset, pick in subsets.items()
    }


def _learned(
    indexed: list[IndexedTool],
    queries: list[dict[str, str]],
    sets: dict[str, list[int]],
    embed: bool,
) -> dict[str, Any]:
    """A catalog that learns its users' words, on a split: the queries whose CRC-32 is
    even are "used" (each kept as extra text of the tool it wants, as if a search for
    it had been followed by a call of that tool), the odd ones are evaluated, against
    the same index without the learned words."""
    used = [q for q in queries if zlib.crc32(q["query"].encode()) % 2 == 0]
    learned: dict[str, list[str]] = {}
    for query in used:
        learned.setdefault(query["tool"], []).append(query["query"])
    plain, taught = (
        ToolIndex(indexed, embed=embed),
        ToolIndex(indexed, embed=embed, learned=learned),
    )
    report = {}
    for label, pick in sets.items():
        evaluated = [queries[i] for i in pick if zlib.crc32(queries[i]["query"].encode()) % 2]
        want = [q["tool"] for q in evaluated]
        row: dict[str, Any] = {"queries": len(evaluated)}
        for name, index in (("without", plain), ("learned", taught)):
            got = [[m.name for m in index.search(q["query"], 5)] for q in evaluated]
            row[name] = {"at1": _recall(got, want, 1), "at5": _recall(got, want, 5)}
        report[label] = row
    return {"used": len(used), "ranking": "fused" if embed else "BM25", "sets": report}


async def main(quick: bool) -> dict[str, Any]:
    """Start the catalog, count its definitions, run both query sets; the report."""
    tuning, tasks = load_queries(), load_queries(TASK_QUERIES)
    embed = embedding_available()
    rounds = 1 if quick else 5
    with tempfile.TemporaryDirectory(prefix="nativemcp-tools-") as folder:
        run = await _run_pool(folder, tuning + tasks, embed, rounds)
    queries: list[dict[str, str]] = run["queries"]
    unknown = sorted({q["tool"] for q in tuning + tasks} - run["names"])
    indexed = [_indexed(tool) for tool in run["tools"]]
    # BM25 alone: the index the pool searches without the extra, in process.
    plain = ToolIndex(indexed)
    rank = _bm25s_ranker(indexed)
    embedding = _embedding_ranker(indexed)
    rankings: dict[str, list[list[str]] | None] = {
        "nativemcp": [[m.name for m in plain.search(q["query"], 5)] for q in queries],
        "wordllama": [embedding(q["query"], 5) for q in queries] if embedding else None,
        "fused": run["pooled"] if embed else None,
        "bm25s": [rank(q["query"], 5) for q in queries] if rank is not None else None,
    }
    # Latency at 100 tools: the catalog grown (or cut) to that many, in process.
    hundred = _padded(indexed, LATENCY_TOOLS)
    latency = {
        "pool_fused" if embed else "pool_bm25": _percentiles(run["samples"]),
        "bm25_100": _timed(ToolIndex(hundred).search, queries, rounds),
    }
    if embed:
        fused_index = ToolIndex(hundred, embed=True)
        latency["fused_100"] = _timed(fused_index.search, queries, rounds)
    first_set = {id(q) for q in tuning}
    own = [i for i, q in enumerate(queries) if id(q) in first_set]
    second = [i for i, q in enumerate(queries) if id(q) not in first_set]
    subsets = {
        "tuning set": own,
        "tuning half": [i for i in own if query_half(queries[i]) == 0],
        "held-out half": [i for i in own if query_half(queries[i]) == 1],
        "Korean + Japanese": [i for i in own if queries[i].get("language") in ("ko", "ja")],
        "task set": second,
        "task requests": [i for i in second if queries[i].get("kind") == "request"],
        "task steps": [i for i in second if queries[i].get("kind") == "step"],
    }
    expected = [q["tool"] for q in queries]
    return {
        "servers": run["servers"],
        "tools": len(run["tools"]),
        "exact_tokens": exact_counts(),
        "tokens": {
            provider: {"full": full, "search": meta, "share": ratio(meta, full)}
            for provider, (full, meta) in run["tokens"].items()
        },
        "recall": _recall_table(rankings, expected, subsets),
        "latency_ms": {
            **latency,
            "first_search_ms": run["build_ms"],
            "searches": len(run["samples"]),
            "latency_tools": len(hundred),
        },
        # The misses of what search_tools answers here (fused where the extra is).
        "misses_of": "fused" if embed else "BM25",
        "misses": [
            {"query": q["query"], "want": q["tool"], "got": got[:3], "set": s}
            for q, got, s in zip(
                queries,
                run["pooled"],
                ["tuning" if id(q) in first_set else "task" for q in queries],
                strict=True,
            )
            if q["tool"] not in got[:5]
        ],
        "queries_for_missing_servers": unknown,
        "learned": _learned(
            indexed, queries, {"tuning set": subsets["tuning set"], "task set": second}, embed
        ),
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
    for label, found in report["recall"].items():
        ours = found["nativemcp"]
        row = [f"{label} ({ours['queries']})", f"{ours['at1']:.2f}", f"{ours['at5']:.2f}"]
        for other in ("fused", "wordllama", "bm25s"):
            theirs = found[other]
            row += [f"{theirs['at1']:.2f}", f"{theirs['at5']:.2f}"] if theirs else ["-", "-"]
        rows.append(row)
    columns = ["BM25", "fused", "wordllama", "bm25s"]
    print_table(
        "Recall of the right tool (the tuning set, then the task set)",
        ["queries", *(f"{name} @{k}" for name in columns for k in (1, 5))],
        rows,
    )
    latency = report["latency_ms"]
    for key, label in (
        ("pool_fused", "await pool.search_tools, fused"),
        ("pool_bm25", "await pool.search_tools, BM25"),
        ("bm25_100", f"BM25 over {latency['latency_tools']} tools, in process"),
        ("fused_100", f"fused over {latency['latency_tools']} tools, in process"),
    ):
        if key in latency:
            row = latency[key]
            cpu = (
                f" (CPU p50 {row['cpu_p50']:.3f}, p95 {row['cpu_p95']:.3f})"
                if "cpu_p50" in row
                else ""
            )
            print(f"{label}: p50 {row['p50']:.3f} ms, p95 {row['p95']:.3f} ms{cpu}")
    print(
        f"({latency['searches']} searches each; the first search, building the index: "
        f"{latency['first_search_ms']:.1f} ms)"
    )
    learned = report["learned"]
    print_table(
        f"Learned words ({learned['ranking']}; {learned['used']} queries used, the rest evaluated)",
        ["queries", "without @1", "without @5", "learned @1", "learned @5"],
        [
            [f"{label} ({row['queries']})"]
            + [f"{row[k][f'at{n}']:.2f}" for k in ("without", "learned") for n in (1, 5)]
            for label, row in learned["sets"].items()
        ],
    )
    if report["misses"]:
        print(f"not in the first five ({report['misses_of']}, {len(report['misses'])}):")
        for miss in report["misses"]:
            got = ", ".join(miss["got"])
            print(f"  [{miss['set']}] {miss['query']!r}: want {miss['want']}, got {got}")
    if args.json:
        emit_json(report)
    return report


if __name__ == "__main__":
    cli()
