"""The content store, in-process: tools, tokenisation, paging, dedup, errors, durability."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativemcp.protocol import NativeMCPResponse, result_text, unwrap
from nativemcp.workers import Context, Notification, Server, ServerConfig, load_server
from nativemcp.workers.content_store import (
    AddContentResult,
    ListContentResult,
    ListStoresResult,
    ReadContentResult,
    SearchResult,
    StoreInfo,
)
from nativemcp.workers.content_store._chunking import chunk_lines, split_lines

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


SOURCE = "nativemcp.workers.content_store:create_server"


def make_server(data_dir: Path, database_url: str | None = None, **options: Any) -> Server:
    return load_server(
        SOURCE, ServerConfig(data_dir=data_dir, options=options, database_url=database_url)
    )


@pytest.fixture
async def server(tmp_path: Path, database_url: str | None) -> AsyncIterator[Server]:
    srv = make_server(tmp_path, database_url, allowed_paths=[str(tmp_path)])
    yield srv
    await srv.aclose()


async def call(server: Server, tool: str, **args: Any) -> NativeMCPResponse[Any]:
    with anyio.fail_after(10):
        return await server.call_tool(tool, args)


def text_of(response: NativeMCPResponse[Any]) -> str:
    assert response.result is not None
    return result_text(response.result)


def is_error(response: NativeMCPResponse[Any]) -> bool:
    return response.error is not None or (
        response.result is not None and bool(response.result.is_error)
    )


async def new_store(server: Server, name: str = "docs") -> str:
    store = unwrap(await call(server, "create_store", name=name), StoreInfo)
    return store.store_id


async def add(
    server: Server, store_id: str, text: str, filename: str = "a.txt"
) -> AddContentResult:
    response = await call(server, "add_content", store_id=store_id, content=text, filename=filename)
    assert not is_error(response), text_of(response)
    return unwrap(response, AddContentResult)


async def search(server: Server, store_id: str, query: str, **options: Any) -> SearchResult:
    response = await call(
        server, "keyword_similarity_search", store_id=store_id, query=query, **options
    )
    assert not is_error(response), text_of(response)
    return unwrap(response, SearchResult)


# -- tokenisation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("우리는 학교에서 공부했다.", "학교"),  # Korean stem, particle attached
        ("도서관에 갔다", "도서관"),
        ("東京都庁の展望台に行った", "都庁"),  # two-character word inside a kanji/kana run
        ("東京都庁の展望台に行った", "展望"),
        ("カタカナのコンピュータ", "コンピュータ"),
        ("我们在北京大学学习中文", "北京"),  # Chinese
        ("A letter from Herr Müller", "muller"),  # accents folded
        ("A letter from Herr Muller", "Müller"),
        ("Crème brûlée recipe", "creme brulee"),
        ("東京都庁", "庁"),  # one CJK character, at the end of a run
        ("東京都庁", "京"),  # one CJK character, inside a run
        ("Python으로 코드를 작성", "Python으로"),
        ("Die Straße ist lang", "strasse"),  # ß folds to ss (NFKC + casefold)
        ("Die Strasse ist lang", "Straße"),
        ("\uff26\uff35\uff2c\uff2c width letters", "full"),  # full-width: compatibility forms
        ("the ﬁle is here", "file"),  # ligature
    ],
)
async def test_search_finds_words_the_way_a_reader_expects(
    server: Server, text: str, query: str
) -> None:
    store_id = await new_store(server)
    await add(server, store_id, text)
    await add(server, store_id, "unrelated filler text about gardening", "b.txt")
    result = await search(server, store_id, query)
    assert [hit.filename for hit in result.results] == ["a.txt"]


async def test_search_does_not_find_absent_cjk_words(server: Server) -> None:
    store_id = await new_store(server)
    await add(server, store_id, "東京都庁の展望台")
    assert (await search(server, store_id, "大阪")).results == []
    assert (await search(server, store_id, "학교")).results == []


HOSTILE_QUERIES = [
    '"',
    '""',
    "'",
    "(",
    ")",
    "*",
    "^",
    ":",
    "-",
    "+",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(a b, 2)",
    "a AND",
    "OR b",
    "NOT a",
    "body:alpha",
    "{body}: alpha",
    "alpha*",
    "^alpha",
    '"alpha',
    "alpha\x00beta",
    "\x00",
    "",
    "   ",
    "rowid:1",
    "chunks_fts MATCH 'x'",
    "a' OR '1'='1",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
async def test_fts5_syntax_in_a_query_never_errors(server: Server, query: str) -> None:
    store_id = await new_store(server)
    await add(server, store_id, "alpha beta gamma\nNEAR the body of the text AND more")
    await search(server, store_id, query)


async def test_operators_in_a_query_are_plain_words(server: Server) -> None:
    store_id = await new_store(server)
    await add(server, store_id, "alpha and omega", "words.txt")
    await add(server, store_id, "completely unrelated", "other.txt")
    # "NOT omega" must not mean "without omega": it finds the chunk that holds omega.
    assert [h.filename for h in (await search(server, store_id, "NOT omega")).results] == [
        "words.txt"
    ]
    # A column filter is just the words it is made of, in order.
    await add(server, store_id, "see the body: omega section", "column.txt")
    assert [h.filename for h in (await search(server, store_id, "body:omega")).results] == [
        "column.txt"
    ]
    # A trailing * is no prefix operator: "alph*" finds nothing.
    assert (await search(server, store_id, "alph*")).results == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=40))
async def test_any_query_text_is_answered_without_error(server: Server, query: str) -> None:
    # Hypothesis reuses the fixture's server across examples: make the store once.
    stores = unwrap(await call(server, "list_stores"), ListStoresResult).stores
    if stores:
        sid = stores[0].store_id
    else:
        sid = await new_store(server)
        await add(server, sid, "alpha beta 학교에서 東京都庁 Müller")
    response = await call(server, "keyword_similarity_search", store_id=sid, query=query)
    assert not is_error(response), text_of(response)


# -- search results --------------------------------------------------------------------------


async def test_search_results_are_scored_located_and_explained(server: Server) -> None:
    store_id = await new_store(server)
    lines = [f"line {n} filler words" for n in range(1, 200)]
    lines[149] = "the quick brown fox jumps over the lazy dog"
    added = await add(server, store_id, "\n".join(lines), "story.txt")
    await add(server, store_id, "a fox was here, no dog", "other.txt")
    result = await search(server, store_id, "quick brown fox")
    best = result.results[0]
    assert best.content_id == added.content_id
    assert best.line_range[0] <= 150 <= best.line_range[1]
    assert best.score == 1.0
    assert best.relevance_type == "exact_phrase"
    assert "quick brown fox" in best.context
    assert all(0 < hit.score <= 1 and hit.raw_score > 0 for hit in result.results)
    text = text_of(await call(server, "keyword_similarity_search", store_id=store_id, query="fox"))
    assert "story.txt:" in text and "Chunk ID:" in text and "**fox**" in text
    assert "relevance:" in text and "Match Type:" in text


async def test_relevance_says_how_much_of_the_query_a_hit_holds_even_alone(
    server: Server,
) -> None:
    store_id = await new_store(server)
    await add(server, store_id, "a note about apples", "only.txt")
    # One document: BM25 says nothing (FTS5's floor idf), the share of terms does.
    weak = await search(server, store_id, "apples oranges")
    assert [hit.filename for hit in weak.results] == ["only.txt"]
    assert weak.results[0].score <= 0.5 and weak.results[0].matched_terms == ["apples"]
    full = await search(server, store_id, "apples")
    assert full.results[0].score == 1.0


async def test_a_hit_with_every_term_outranks_a_stronger_bm25_hit_with_some(
    server: Server,
) -> None:
    store_id = await new_store(server)
    await add(server, store_id, "zebra zebra zebra zebra", "many.txt")
    await add(server, store_id, "a zebra and a yak " + "filler " * 30, "both.txt")
    for n in range(5):
        await add(server, store_id, f"yak notes {n}", f"yak{n}.txt")
    result = await search(server, store_id, "zebra yak", top_n=3)
    assert result.results[0].filename == "both.txt"
    assert result.results[0].relevance_type == "all_terms"
    scores = [hit.score for hit in result.results]
    assert scores == sorted(scores, reverse=True)


async def test_search_text_ends_with_the_call_that_reads_the_top_hit(server: Server) -> None:
    store_id = await new_store(server)
    added = await add(server, store_id, "one\ntwo\nDie Straße\nfour", "street.txt")
    response = await call(server, "keyword_similarity_search", store_id=store_id, query="strasse")
    text = text_of(response)
    assert "**Straße**" in text
    hit = unwrap(response, SearchResult).results[0]
    start, end = hit.line_range
    assert text.splitlines()[-1].startswith(
        f'Read the top hit: read_content(store_id="{store_id}", '
        f'content_id="{added.content_id}", from_line={start}, to_line={end})'
    )


def test_an_index_written_before_case_folding_is_rebuilt_when_opened(tmp_path: Path) -> None:
    import sqlite3

    from nativemcp.workers.content_store._db import ContentDB, NewContent

    path = tmp_path / "content.sqlite3"
    db = ContentDB(path)
    store = db.create_store("old", None, None)
    text = "Die Straße ist lang"
    chunks = chunk_lines(split_lines(text))
    db.add_content(store.store_id, NewContent("a.txt", "text/plain", text, "0" * 64, 1, chunks))
    db.close()
    # What a version-1 database holds: the text as written, not case-folded.
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        conn.execute("DELETE FROM fts_1")
        conn.execute("INSERT INTO fts_1 (rowid, body) SELECT id, body FROM chunks")
    conn.close()
    reopened = ContentDB(path)
    try:
        hits = reopened.search(store.store_id, "strasse", 5, None)
        assert hits is not None and [hit.filename for hit in hits] == ["a.txt"]
    finally:
        reopened.close()


def test_ranking_is_a_pure_function_of_the_candidates_any_backend_returns() -> None:
    from nativemcp.workers.content_store._relevance import Candidate, rank_hits, relevance

    candidates = [
        Candidate("ct_a", 0, 1, 4, "apples apples apples", "a.txt", bm25=3.0),
        Candidate("ct_b", 0, 1, 2, "apples and pears", "b.txt", bm25=1.5),
        Candidate("ct_c", 0, 1, 1, "nothing", "c.txt", bm25=0.0),
    ]
    hits = rank_hits(candidates, "apples pears", top_n=5, threshold=None)
    assert [hit.filename for hit in hits] == ["b.txt", "a.txt"]  # c.txt: no positive BM25
    assert hits[0].score == round(relevance(2, 2, 1.5, 3.0), 4) == 0.875
    assert hits[1].score == 0.5  # half the terms, the best BM25
    assert rank_hits(candidates, "apples pears", top_n=5, threshold=0.6) == hits[:1]


async def test_search_never_returns_zero_score_hits_and_honours_threshold(server: Server) -> None:
    store_id = await new_store(server)
    for n in range(20):
        await add(
            server, store_id, f"document {n} mentions apples" + " rare" * (n == 3), f"{n}.txt"
        )
    everything = await search(server, store_id, "apples rare", top_n=20)
    assert len(everything.results) == 20
    assert all(hit.raw_score > 0 for hit in everything.results)
    assert everything.results[0].filename == "3.txt"
    strong = await search(server, store_id, "apples rare", top_n=20, threshold=0.9)
    assert [hit.filename for hit in strong.results] == ["3.txt"]


async def test_search_is_limited_to_its_store(server: Server) -> None:
    first, second = await new_store(server, "one"), await new_store(server, "two")
    await add(server, first, "shared keyword in one")
    await add(server, second, "shared keyword in two")
    result = await search(server, second, "keyword")
    assert [hit.context for hit in result.results] == ["shared keyword in two"]


# -- chunking ---------------------------------------------------------------------------------


@given(
    lines=st.lists(st.text(alphabet="ab .\t한字", max_size=120), max_size=80),
    max_chars=st.integers(1, 300),
    max_lines=st.integers(1, 12),
    overlap=st.integers(0, 11),
)
def test_chunks_cover_every_line_with_exact_ranges(
    lines: list[str], max_chars: int, max_lines: int, overlap: int
) -> None:
    overlap = min(overlap, max_lines - 1)
    chunks = chunk_lines(lines, max_chars=max_chars, max_lines=max_lines, overlap_lines=overlap)
    covered: set[int] = set()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        window = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.text in window if chunk.start_line == chunk.end_line else chunk.text == window
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    assert covered == set(range(1, len(lines) + 1))
    # An oversized line is split into pieces that rebuild it exactly.
    for number, line in enumerate(lines, 1):
        if len(line) > max_chars:
            pieces = [c.text for c in chunks if c.start_line == c.end_line == number]
            assert "".join(pieces) == line


def test_trailing_text_without_punctuation_is_kept() -> None:
    text = "First sentence. Second one!\nno punctuation at the end"
    chunks = chunk_lines(split_lines(text), max_chars=30, max_lines=1, overlap_lines=0)
    assert chunks[-1].text == "no punctuation at the end"
    assert chunks[-1].start_line == chunks[-1].end_line == 2


# -- add / list / read --------------------------------------------------------------------------


async def test_same_text_twice_returns_the_existing_id(server: Server) -> None:
    store_id = await new_store(server)
    first = await add(server, store_id, "hello\nworld", "one.txt")
    again = await add(server, store_id, "hello\r\nworld", "two.txt")
    assert again.duplicate and not first.duplicate
    assert again.content_id == first.content_id
    text = text_of(
        await call(server, "add_content", store_id=store_id, content="hello\nworld", filename="x")
    )
    assert first.content_id in text and "Not added" in text
    assert f"SHA-256: {first.content_hash}" in text  # the whole hash: what makes it the same
    listing = unwrap(await call(server, "list_content", store_id=store_id), ListContentResult)
    assert listing.total == 1
    # Another store takes the same text as its own item.
    other = await new_store(server, "other")
    assert not (await add(server, other, "hello\nworld")).duplicate


async def test_add_and_list_state_the_exact_size_beside_the_rounded_one(server: Server) -> None:
    store_id = await new_store(server)
    response = await call(
        server, "add_content", store_id=store_id, content="x" * 3000, filename="big.txt"
    )
    assert "Size: 2.9 KB = 3000 B" in text_of(response)
    listing = text_of(await call(server, "list_content", store_id=store_id))
    assert "1. big.txt (2.9 KB = 3000 B, 1 line)" in listing


async def test_list_content_pages_over_every_item(server: Server) -> None:
    store_id = await new_store(server)
    ids = [
        (await add(server, store_id, f"item number {n}", f"f{n}.txt")).content_id
        for n in range(230)
    ]
    seen: list[str] = []
    offset = 0
    while True:
        page = unwrap(
            await call(server, "list_content", store_id=store_id, offset=offset, limit=100),
            ListContentResult,
        )
        assert page.total == 230
        seen.extend(item.content_id for item in page.contents)
        offset += len(page.contents)
        if not page.has_more:
            break
    assert seen == ids
    assert is_error(await call(server, "list_content", store_id=store_id, limit=101))
    text = text_of(await call(server, "list_content", store_id=store_id, offset=100, limit=2))
    assert text.startswith("Files 101-102 of 230")
    assert "101. f100.txt" in text and "ID: " in text and "Preview: item number 100" in text
    shown = unwrap(
        await call(server, "list_content", store_id=store_id, offset=100, limit=2),
        ListContentResult,
    )
    assert all(f"SHA-256: {c.content_hash}" in text for c in shown.contents)
    assert "offset=102" in text


async def test_read_content_returns_exact_lines(server: Server) -> None:
    store_id = await new_store(server)
    added = await add(server, store_id, "\n".join(f"line {n}" for n in range(1, 51)) + "\n")
    assert added.line_count == 50
    read = unwrap(
        await call(
            server,
            "read_content",
            store_id=store_id,
            content_id=added.content_id,
            from_line=10,
            to_line=12,
        ),
        ReadContentResult,
    )
    assert read.content == "line 10\nline 11\nline 12"
    assert read.line_range == (10, 12)
    tail = unwrap(
        await call(
            server,
            "read_content",
            store_id=store_id,
            content_id=added.content_id,
            from_line=49,
            to_line=500,
        ),
        ReadContentResult,
    )
    assert tail.content == "line 49\nline 50" and tail.line_range == (49, 50)
    bad = await call(
        server, "read_content", store_id=store_id, content_id=added.content_id, from_line=51
    )
    assert is_error(bad) and "50 lines" in text_of(bad)
    backwards = await call(
        server,
        "read_content",
        store_id=store_id,
        content_id=added.content_id,
        from_line=5,
        to_line=4,
    )
    assert is_error(backwards)


async def test_errors_name_the_missing_id_and_the_server_keeps_serving(server: Server) -> None:
    store_id = await new_store(server)
    missing_store = await call(server, "list_content", store_id="st_nope")
    assert is_error(missing_store) and "st_nope" in text_of(missing_store)
    assert store_id in text_of(missing_store)  # the known stores are listed
    missing_content = await call(server, "read_content", store_id=store_id, content_id="ct_gone")
    assert is_error(missing_content) and "ct_gone" in text_of(missing_content)
    assert missing_content.result is not None
    assert missing_content.result.structured_content == {
        "code": "CONTENT_NOT_FOUND",
        "storeId": store_id,
        "contentId": "ct_gone",
    }
    for tool in ("keyword_similarity_search", "delete_store"):
        args = (
            {"store_id": "st_gone", "query": "x"}
            if tool.startswith("keyword")
            else {"store_id": "st_gone"}
        )
        response = await server.call_tool(tool, args)
        assert is_error(response) and "st_gone" in text_of(response)
    deleted = await call(server, "delete_content", store_id=store_id, content_id="ct_gone")
    assert is_error(deleted) and "ct_gone" in text_of(deleted)
    assert not is_error(await call(server, "list_stores"))


async def test_add_content_argument_errors_are_clear(server: Server, tmp_path: Path) -> None:
    store_id = await new_store(server)
    both = await call(server, "add_content", store_id=store_id, content="x", path="/etc/hosts")
    assert is_error(both) and "exactly one" in text_of(both)
    missing = await call(server, "add_content", store_id=store_id, path=str(tmp_path / "no.txt"))
    assert is_error(missing) and "no.txt" in text_of(missing)
    folder = await call(server, "add_content", store_id=store_id, path=str(tmp_path))
    assert is_error(folder) and "directory" in text_of(folder)
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    unsupported = await call(server, "add_content", store_id=store_id, path=str(image))
    assert is_error(unsupported) and "image/png" in text_of(unsupported)
    empty = await call(server, "add_content", store_id=store_id, content="  \n ")
    assert is_error(empty)


async def test_size_limits_are_configurable_and_reported(tmp_path: Path) -> None:
    srv = make_server(
        tmp_path, max_text_bytes=100, max_file_bytes=200, allowed_paths=[str(tmp_path)]
    )
    try:
        store_id = await new_store(srv)
        big_text = await call(srv, "add_content", store_id=store_id, content="x" * 101)
        assert is_error(big_text) and "too large" in text_of(big_text)
        big_file = tmp_path / "big.txt"
        big_file.write_text("y" * 201)
        response = await call(srv, "add_content", store_id=store_id, path=str(big_file))
        assert (
            is_error(response) and "big.txt" in text_of(response) and "limit" in text_of(response)
        )
        assert not is_error(await call(srv, "add_content", store_id=store_id, content="x" * 100))
    finally:
        await srv.aclose()
    with pytest.raises(ValueError, match="options"):
        make_server(tmp_path, max_text_byte=1)


# -- file types -----------------------------------------------------------------------------------


async def add_file(server: Server, store_id: str, path: Path) -> AddContentResult:
    response = await call(server, "add_content", store_id=store_id, path=str(path))
    assert not is_error(response), text_of(response)
    return unwrap(response, AddContentResult)


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF showing ``text`` (Helvetica), built by hand."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


async def test_documents_are_read_as_text(server: Server, tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    openpyxl = pytest.importorskip("openpyxl")
    store_id = await new_store(server)

    pdf_path = tmp_path / "report.pdf"
    pdf_path.write_bytes(minimal_pdf("Quarterly revenue grew strongly"))
    document = docx.Document()
    document.add_paragraph("Meeting notes about the zeppelin project")
    docx_path = tmp_path / "notes.docx"
    document.save(docx_path)
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["product", "price"])
    sheet.append(["xylophone", 42])
    xlsx_path = tmp_path / "prices.xlsx"
    workbook.save(xlsx_path)
    html_path = tmp_path / "page.html"
    html_path.write_text(
        "<html><head><style>.x{}</style><script>var hidden=1</script></head>"
        "<body><h1>Title</h1><p>Paragraph about walruses &amp; seals</p></body></html>"
    )

    pdf = await add_file(server, store_id, pdf_path)
    assert pdf.mime_type == "application/pdf"
    await add_file(server, store_id, docx_path)
    xlsx = await add_file(server, store_id, xlsx_path)
    html = await add_file(server, store_id, html_path)
    for query, filename in [
        ("revenue", "report.pdf"),
        ("zeppelin", "notes.docx"),
        ("xylophone", "prices.xlsx"),
        ("walruses", "page.html"),
    ]:
        assert [h.filename for h in (await search(server, store_id, query)).results] == [filename]
    assert (await search(server, store_id, "hidden")).results == []
    read = unwrap(
        await call(server, "read_content", store_id=store_id, content_id=html.content_id),
        ReadContentResult,
    )
    assert read.content == "Title\n\nParagraph about walruses & seals"
    sheet_text = unwrap(
        await call(server, "read_content", store_id=store_id, content_id=xlsx.content_id),
        ReadContentResult,
    ).content
    assert "xylophone\t42" in sheet_text


async def test_minified_json_is_spread_over_lines(server: Server) -> None:
    store_id = await new_store(server)
    payload = "[" + ",".join(f'{{"id": {n}, "name": "item{n}"}}' for n in range(200)) + "]"
    added = await add(server, store_id, payload, "data.json")
    assert added.line_count > 200
    hit = (await search(server, store_id, "item150")).results[0]
    read = unwrap(
        await call(
            server,
            "read_content",
            store_id=store_id,
            content_id=added.content_id,
            from_line=hit.line_range[0],
            to_line=hit.line_range[1],
        ),
        ReadContentResult,
    )
    assert "item150" in read.content


# -- delete, stores, progress, service context, durability -------------------------------------


async def test_delete_content_removes_it_from_search(server: Server) -> None:
    store_id = await new_store(server)
    added = await add(server, store_id, "ephemeral words")
    response = await call(server, "delete_content", store_id=store_id, content_id=added.content_id)
    assert "ephemeral" not in text_of(response) and added.content_id in text_of(response)
    assert (await search(server, store_id, "ephemeral")).results == []
    # Deleted text can be added again (the dedup hash went with it).
    assert not (await add(server, store_id, "ephemeral words")).duplicate


async def test_stores_are_listed_and_deleted_with_their_contents(server: Server) -> None:
    keep, drop = await new_store(server, "keep"), await new_store(server, "drop")
    await add(server, drop, "soon gone")
    listing = text_of(await call(server, "list_stores"))
    assert '"keep"' in listing and drop in listing
    response = await call(server, "delete_store", store_id=drop)
    assert "1 content item" in text_of(response)
    stores = unwrap(await call(server, "list_stores"), ListStoresResult).stores
    assert [s.store_id for s in stores] == [keep]
    assert is_error(await call(server, "keyword_similarity_search", store_id=drop, query="soon"))


async def test_add_content_reports_progress(tmp_path: Path) -> None:
    srv = make_server(tmp_path, chunk_max_lines=2, chunk_overlap_lines=0)
    seen: list[Notification] = []

    async def notify(note: Notification) -> None:
        seen.append(note)

    try:
        store_id = await new_store(srv)
        context = Context(server_name=srv.name, tool_name="add_content", notify=notify)
        text = "\n".join(f"line {n}" for n in range(3000))
        with anyio.fail_after(20):
            response = await srv.call_tool(
                "add_content", {"store_id": store_id, "content": text}, context=context
            )
        assert not is_error(response)
        progress = [getattr(note, "progress", None) for note in seen]
        assert progress[-1] == 1500 and len(progress) >= 3
    finally:
        await srv.aclose()


async def test_service_context_lists_the_sessions_files(server: Server) -> None:
    await server.switch_context("session-1", None)
    store_id = await new_store(server, "attached")
    added = await add(server, store_id, "notes", "notes.md")
    await server.switch_context("session-2", None)
    await new_store(server, "elsewhere")
    await server.switch_context("session-1", None)
    context = await server.get_service_context()
    assert "notes.md" in context and added.content_id in context and "elsewhere" not in context


async def test_stores_contents_and_search_survive_a_restart(
    tmp_path: Path, database_url: str | None
) -> None:
    first = make_server(tmp_path, database_url)
    store_id = await new_store(first)
    added = await add(first, store_id, "persistent 학교에서 text")
    await first.aclose()
    second = make_server(tmp_path, database_url)
    try:
        listing = unwrap(await call(second, "list_content", store_id=store_id), ListContentResult)
        assert [c.content_id for c in listing.contents] == [added.content_id]
        assert (await search(second, store_id, "학교")).results[0].content_id == added.content_id
    finally:
        await second.aclose()


def test_all_lists_exactly_the_public_names() -> None:
    import types

    import nativemcp.workers.content_store as package

    public = {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(package.__all__) == public
