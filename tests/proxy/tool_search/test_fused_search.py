"""Tool search fused with the search-embed extra's embedding model: reciprocal-rank
fusion exactly, paraphrases BM25 misses found, BM25 alone untouched without it, the
model read from its wheel (nothing fetched), the option refused where it cannot work."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import anyio
import pytest
from test_tool_index import TOOLS

from nativemcp.proxy import SyncWorkerPool, WorkerPool
from nativemcp.proxy.cli import main as cli_main
from nativemcp.proxy.tool_search import (
    RRF_K,
    ToolEmbeddings,
    ToolIndex,
    embedding_text,
    fuse,
)
from nativemcp.workers import Server

needs_model = pytest.mark.skipif(
    not __import__("importlib").util.find_spec("wordllama"),
    reason="the search-embed extra (wordllama) is not installed; the test extra installs it",
)


def test_fusion_sums_reciprocal_ranks_and_breaks_ties_in_catalog_order() -> None:
    fused = fuse([2, 0], [0, 1, 2])
    # Tool 0: rank 2 and rank 1; tool 2: rank 1 and rank 3; tool 1: rank 2 once.
    assert fused == [
        (0, 1 / (RRF_K + 2) + 1 / (RRF_K + 1)),
        (2, 1 / (RRF_K + 1) + 1 / (RRF_K + 3)),
        (1, 1 / (RRF_K + 2)),
    ]
    assert fuse([1], [0]) == [(0, 1 / (RRF_K + 1)), (1, 1 / (RRF_K + 1))]
    assert fuse([], []) == []


def test_without_embed_the_index_is_bm25_alone_and_loads_no_model() -> None:
    # In a fresh process: nothing of the extra is imported by a plain index.
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, "tests/proxy/tool_search")
        from test_tool_index import TOOLS
        from nativemcp.proxy.tool_search import ToolIndex
        index = ToolIndex(TOOLS)
        assert not index.fused
        assert index.search("store some writing on disk") == []
        assert "wordllama" not in sys.modules, "a plain index loaded the model"
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


@needs_model
def test_a_fused_index_finds_paraphrases_that_share_no_word_with_the_tool() -> None:
    plain, fused = ToolIndex(TOOLS), ToolIndex(TOOLS, embed=True)
    assert fused.fused
    for query, want in (
        ("store some writing on disk", "files__write_file"),
        ("visit example.com", "web__navigate"),
        ("what does the coffee shop sell", "cafe__menu"),
    ):
        assert [match.name for match in plain.search(query, 1)] != [want]
        assert fused.search(query, 1)[0].name == want, query
    # Each tool is ranked by its embedding too: a search finds as many as asked for.
    assert plain.search("zzzz") == []
    assert len(fused.search("zzzz", 50)) == len(TOOLS)


@needs_model
def test_fused_ranking_is_the_reciprocal_rank_fusion_of_bm25_and_the_embedding() -> None:
    plain, fused = ToolIndex(TOOLS), ToolIndex(TOOLS, embed=True)
    embeddings = ToolEmbeddings(
        [embedding_text(t.tool.name, t.tool.title, t.tool.description) for t in TOOLS]
    )
    position = {item.full_name: number for number, item in enumerate(TOOLS)}
    for query in ("read a file", "take a screenshot of the page", "메모를 저장", "the"):
        # No word of these widens (test_query_expansion): BM25 is the plain index's.
        assert fused.widened_terms(query) == {}
        bm25 = [position[match.name] for match in plain.search(query, 50)]
        expected = fuse(bm25, embeddings.ranking(query))
        found = fused.search(query, 50)
        assert [(position[m.name], m.score) for m in found] == expected, query
        # `where` keeps the fused order of what it accepts.
        kept = fused.search(query, 3, where=lambda name: name.startswith("files__"))
        files = [m.name for m in found if m.name.startswith("files__")]
        assert [m.name for m in kept] == files[:3]


@needs_model
def test_an_embedding_is_the_average_of_its_tokens_weighed_by_their_catalog_idf() -> None:
    import numpy
    import wordllama

    folder = os.path.dirname(wordllama.__file__)
    model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
    texts = ["read a file", "write a file", "open a web page"]
    embeddings = ToolEmbeddings(texts)

    def tokens(text: str) -> list[int]:
        return list(model.tokenize([text])[0].ids)

    held = [set(tokens(text)) for text in texts]

    def vector(text: str) -> Any:
        ids = tokens(text)
        # log(1 + N / (1 + df)) over the three texts: "a" (in all) weighs least.
        weights = numpy.array([numpy.log(1 + 3 / (1 + sum(i in h for h in held))) for i in ids])
        pooled = weights @ model.embedding[ids] / weights.sum()
        return pooled / numpy.linalg.norm(pooled)

    matrix = numpy.array([vector(text) for text in texts])
    for query in ("read a web file", "zebra"):
        expected = matrix @ vector(query)
        assert numpy.allclose(embeddings.similarities(query), expected, atol=1e-5), query
    assert embeddings.ranking("open the page")[0] == 2
    assert ToolEmbeddings([]).ranking("anything") == []


@needs_model
def test_the_model_is_read_from_its_wheel_with_the_network_refused() -> None:
    # A fresh process whose sockets and HTTP refuse: loading and searching still work.
    script = textwrap.dedent(
        """
        import socket, sys
        def refuse(*args, **kwargs):
            raise AssertionError("the embedding model tried the network")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        import requests
        requests.get = requests.Session.request = refuse
        sys.path.insert(0, "tests/proxy/tool_search")
        from test_tool_index import TOOLS
        from nativemcp.proxy.tool_search import ToolIndex
        found = ToolIndex(TOOLS, embed=True).search("visit example.com", 1)
        assert found[0].name == "web__navigate", found
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, env={"HOME": "/"})


@needs_model
def test_a_pools_first_fused_search_loads_the_model_off_its_event_loop() -> None:
    # In a fresh process (the model not loaded yet): the load runs in a worker thread,
    # so the pool's other calls go on while the 16 MB are read.
    script = textwrap.dedent(
        """
        import threading
        import anyio, wordllama
        from nativemcp.proxy import WorkerPool
        from nativemcp.workers import Server

        loaded_on = []
        load = wordllama.WordLlama.load
        def recording(*args, **kwargs):
            loaded_on.append(threading.current_thread())
            return load(*args, **kwargs)
        wordllama.WordLlama.load = recording

        links = Server("links")

        @links.tool
        def open_url(url: str) -> str:
            \"\"\"Load a URL in the browser tab.\"\"\"
            return url

        async def main():
            async with WorkerPool([links], in_process=["links"], search_embed=True) as pool:
                loop = threading.current_thread()
                first = await pool.search_tools("visit a website", 1)
                again = await pool.search_tools("go to a page", 1)
            assert [m.name for m in first + again] == ["links__open_url"] * 2
            assert len(loaded_on) == 1 and loaded_on[0] is not loop, loaded_on

        anyio.run(main)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def _links() -> Server:
    links = Server("links", description="Web pages")

    @links.tool
    def open_url(url: str) -> str:
        """Load a URL in the browser tab."""
        return url

    @links.tool
    def add_bookmark(url: str, label: str) -> str:
        """Remember a URL under a label."""
        return label

    return links


@needs_model
@pytest.mark.anyio
async def test_a_pool_fuses_by_default_where_wordllama_is_installed_and_not_with_false() -> None:
    with anyio.fail_after(30):
        async with WorkerPool([_links()], in_process=["links"]) as pool:
            assert pool.config.search_embed
            found = await pool.search_tools("visit a website", 1)
            assert [match.name for match in found] == ["links__open_url"]
        async with WorkerPool([_links()], in_process=["links"], search_embed=True) as pool:
            assert pool.config.search_embed
        async with WorkerPool([_links()], in_process=["links"], search_embed=False) as pool:
            assert not pool.config.search_embed
            assert await pool.search_tools("visit a website") == []


@needs_model
@pytest.mark.real_process
def test_the_sync_pool_fuses_by_default_too_and_takes_search_embed_false() -> None:
    with SyncWorkerPool(["_serve_servers:server"]) as pool:
        assert pool.search_tools("what is my identity", 1)[0].name == "shapes__caller"
        assert len(pool.search_tools("zzzz", 3)) == 3
    with SyncWorkerPool(["_serve_servers:server"], search_embed=False) as pool:
        assert pool.search_tools("zzzz") == []


def test_search_embed_is_refused_when_it_is_not_a_bool_or_the_model_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(TypeError, match="search_embed must be True, False or None, not 'yes'"):
        WorkerPool(search_embed="yes")  # type: ignore[arg-type]
    # A module set to None in sys.modules is one that is not installed.
    monkeypatch.setitem(sys.modules, "wordllama", None)
    with pytest.raises(ImportError, match=r"pip install 'nativemcp\[search-embed\]'"):
        WorkerPool(search_embed=True)
    WorkerPool(search_embed=False)  # BM25 alone needs nothing
    # By default, an install without wordllama searches by BM25 alone.
    assert not WorkerPool().config.search_embed


def test_serve_refuses_search_embed_without_tool_search_or_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["serve", "workspace", "--search-embed"]) == 2
    assert "--search-embed ranks --tool-search's matches; add --tool-search" in (
        capsys.readouterr().err
    )
    assert cli_main(["serve", "workspace", "--search-bm25"]) == 2
    assert "--search-bm25 ranks the search of --tool-search or --code-mode" in (
        capsys.readouterr().err
    )
    assert cli_main(["serve", "workspace", "--tool-search", "--search-bm25", "--search-embed"]) == 2
    assert "--search-bm25 and --search-embed contradict" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "wordllama", None)
    assert cli_main(["serve", "workspace", "--tool-search", "--search-embed"]) == 2
    assert "pip install 'nativemcp[search-embed]'" in capsys.readouterr().err
