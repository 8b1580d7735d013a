"""The tool index: FTS5's BM25, exactly, over the content store's tokens, in any
language; a tool matched only by common words is no match."""

from __future__ import annotations

import math
import sqlite3

import pytest

from nativemcp.protocol import Tool
from nativemcp.proxy.tool_search import IndexedTool, ToolIndex, tool_text
from nativemcp.proxy.tool_search._stem import stem


def _tool(name: str, description: str, **parameters: str) -> Tool:
    properties = {key: {"type": "string", "description": text} for key, text in parameters.items()}
    return Tool(
        name=name,
        description=description,
        input_schema={"type": "object", "properties": properties},
    )


TOOLS = [
    IndexedTool(
        "files__read_file", "files", _tool("read_file", "Read a file's text.", path="path")
    ),
    IndexedTool("files__read", "files", _tool("read", "Read everything.", what="a thing")),
    IndexedTool(
        "files__write_file",
        "files",
        _tool("write_file", "Write text to a file, replacing it.", path="where", text="what"),
    ),
    IndexedTool(
        "web__takeScreenshot",
        "web",
        _tool("takeScreenshot", "Capture the page as a PNG image.", fullPage="whole page"),
    ),
    IndexedTool("web__navigate", "web", _tool("navigate", "Open a URL in the browser.")),
    IndexedTool(
        "메모__메모_저장",
        "메모",
        _tool("메모_저장", "새 메모를 저장합니다. 제목과 내용을 받습니다.", 제목="메모의 제목"),
    ),
    IndexedTool(
        "メモ__検索",
        "メモ",
        _tool("検索", "保存したメモを全文検索します。", 検索語="探す言葉"),
    ),
    IndexedTool(
        "cafe__menu",
        "café",
        _tool("menu", "Show the Café's menü with prices (€)."),
    ),
]

QUERIES = [
    "read a file",
    "take a screenshot of the page",
    "takeScreenshot",
    "메모를 저장",
    "메모",
    "메",
    "メモを検索したい",
    "cafe menu",
    "CAFÉ MENÜ",
    "the",
    "write text to the file and read it back",
    "nothing matches zzzz",
    "reading files and writing texts",
    "captured pages",
]


def _fts5_scores(tools: list[IndexedTool], query: str) -> dict[int, float]:
    """SQLite's own BM25 for the index's terms of ``query``, over the same texts."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
    for number, item in enumerate(tools):
        # The index's own tokens (stemmed), which FTS5 keeps as they are.
        text = " ".join(ToolIndex.index_tokens(tool_text(item.full_name, item.server, item.tool)))
        db.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (number, text))
    terms = ToolIndex.query_terms(query)
    if not terms:
        return {}
    expression = " OR ".join(f'"{token}"' + (" *" if prefix else "") for token, prefix in terms)
    rows = db.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (expression,)).fetchall()
    return {rowid: -score for rowid, score in rows}


@pytest.mark.parametrize("query", QUERIES)
def test_scores_are_sqlite_fts5_bm25_for_the_same_text_and_terms(query: str) -> None:
    index = ToolIndex(TOOLS)
    expected = _fts5_scores(TOOLS, query)
    got = index.scores(query)
    assert got.keys() == expected.keys()
    for number, score in expected.items():
        assert math.isclose(got[number], score, rel_tol=1e-9), (number, got[number], score)


def test_the_reference_sees_matches_in_every_language() -> None:
    # The comparison above would pass on empty sets: the queries do find tools.
    assert len(_fts5_scores(TOOLS, "메모를 저장")) >= 1
    assert len(_fts5_scores(TOOLS, "メモを検索したい")) >= 1
    assert len(_fts5_scores(TOOLS, "CAFÉ MENÜ")) >= 1
    assert len(_fts5_scores(TOOLS, "takeScreenshot")) >= 1


def test_the_best_match_comes_first_with_its_one_line_and_schema() -> None:
    index = ToolIndex(TOOLS)
    (best, *rest) = index.search("capture the page as an image", 3)
    assert best.name == "web__takeScreenshot"
    assert best.server == "web"
    assert best.description == "Capture the page as a PNG image."
    assert best.input_schema["properties"]["fullPage"]["description"] == "whole page"
    assert all(best.score > match.score for match in rest)


def test_korean_and_japanese_queries_find_tools_with_other_particles_glued_on() -> None:
    index = ToolIndex(TOOLS)
    # "메모를" is not in the description ("메모의", "메모를 저장합니다" share "메모").
    assert index.search("메모를 저장하기", 1)[0].name == "메모__메모_저장"
    assert index.search("メモを探す", 1)[0].name == "メモ__検索"
    # A lone character matches as a prefix, as in the content store.
    assert {m.name for m in index.search("검", 5)} == set()
    assert index.search("저", 1)[0].name == "메모__메모_저장"


@pytest.mark.parametrize(
    ("forms", "same"),
    [
        (("file", "files"), True),
        (("read", "reads", "reading"), True),
        (("copy", "copies"), True),
        (("match", "matches"), True),
        (("run", "running"), True),
        (("stop", "stopped"), True),
        (("fill", "filling"), True),
        (("class", "status", "analysis"), False),
    ],
)
def test_english_plurals_and_verb_endings_share_one_stem(
    forms: tuple[str, ...], same: bool
) -> None:
    stems = {stem(form) for form in forms}
    assert (len(stems) == 1) is same, stems


def test_short_words_and_other_scripts_are_not_stemmed() -> None:
    for token in ("has", "css", "uses", "파일을", "メモを", "menüs", "ss"):
        assert stem(token) == (token if token != "uses" else "use")


def test_inflected_words_find_the_tool_in_either_direction() -> None:
    index = ToolIndex(TOOLS)
    # "writing" and "texts" are not in the text, "write" and "text" are.
    assert [m.name for m in index.search("writing texts", 5)][:1] == ["files__write_file"]
    assert [m.name for m in index.search("capturing pages", 5)] == ["web__takeScreenshot"]
    assert [m.name for m in index.search("opening URLs", 5)] == ["web__navigate"]


def test_camel_case_and_snake_case_names_are_found_by_their_words() -> None:
    index = ToolIndex(TOOLS)
    assert index.search("screenshot", 1)[0].name == "web__takeScreenshot"
    assert index.search("write file", 1)[0].name == "files__write_file"


def test_a_tool_matched_only_by_words_most_tools_hold_is_not_returned() -> None:
    tools = [
        IndexedTool("a__open", "a", _tool("open", "Open the door.")),
        IndexedTool("a__shut", "a", _tool("shut", "Shut the door.")),
        IndexedTool("a__lock", "a", _tool("lock", "Lock the gate.")),
        IndexedTool("a__ring", "a", _tool("ring", "Ring a bell.")),
    ]
    index = ToolIndex(tools)
    # "the" is in three of four tools: FTS5 scores it just above zero ...
    assert set(index.scores("the")) == {0, 1, 2}
    assert index.search("the", 5) == []  # ... and it finds nothing alone
    assert [m.name for m in index.search("lock the", 5)] == ["a__lock"]
    # In exactly half the tools a word still tells nothing (FTS5 floors its idf too).
    assert index.search("door", 5) == []
    assert [m.name for m in index.search("gate", 5)] == ["a__lock"]
    # ... unless one tool alone holds it: in a catalog of one or two tools, say.
    assert [m.name for m in ToolIndex(tools[:1]).search("door", 5)] == ["a__open"]
    assert [m.name for m in ToolIndex(tools[:2]).search("open", 5)] == ["a__open"]
    assert ToolIndex(tools[:2]).search("door", 5) == []


def test_where_filters_matches_without_changing_their_scores() -> None:
    index = ToolIndex(TOOLS)
    everything = {m.name: m.score for m in index.search("read file", 10)}
    kept = index.search("read file", 10, where=lambda name: name != "files__read_file")
    assert "files__read_file" in everything
    assert [m.name for m in kept] == [n for n in everything if n != "files__read_file"]
    assert all(m.score == everything[m.name] for m in kept)


@pytest.mark.parametrize("limit", [0, -1, 51, 2.5, True, "3"])
def test_a_limit_outside_1_to_50_is_refused_with_the_range(limit: object) -> None:
    with pytest.raises(ValueError, match="from 1 to 50"):
        ToolIndex(TOOLS).search("read", limit)  # type: ignore[arg-type]


def test_limit_cuts_the_ranking_and_ties_keep_catalog_order() -> None:
    same = [IndexedTool(f"s__t{i}", "s", _tool(f"t{i}", "Fetch a thing.")) for i in range(4)]
    other = [IndexedTool(f"o__u{i}", "o", _tool(f"u{i}", "Other work.")) for i in range(5)]
    index = ToolIndex(same + other)
    assert [m.name for m in index.search("fetch", 3)] == ["s__t0", "s__t1", "s__t2"]
    assert index.search("", 5) == []
    assert len(ToolIndex([])) == 0 and ToolIndex([]).search("fetch") == []


def test_words_users_found_a_tool_by_find_it_for_the_next_user() -> None:
    tools = [
        IndexedTool("kg__create_entities", "kg", _tool("create_entities", "Add nodes.")),
        IndexedTool("kg__open_nodes", "kg", _tool("open_nodes", "Fetch nodes by name.")),
    ]
    assert ToolIndex(tools).search("remember a person") == []
    learned = {"kg__create_entities": ["remember that Ada is a person"]}
    taught = ToolIndex(tools, learned=learned)
    assert [m.name for m in taught.search("remember a person")] == ["kg__create_entities"]
    # The tool's own words still find it as before.
    assert [m.name for m in taught.search("fetch nodes")][:1] == ["kg__open_nodes"]
