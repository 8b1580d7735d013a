"""Finding a query term in a chunk: the needle-first search agrees with the term's
pattern searched from the start (its first match, and every match highlighting
marks), wherever the term's tokens, word edges and scripts fall."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nativemcp.workers.content_store._snippet import _matches, _pattern, _search, highlight
from nativemcp.workers.content_store._tokenize import fold

_PIECES = st.sampled_from(["ab", "abc", "b", "x", "한국", "東京", "ab_c", "é", "ß", "A"])
_GLUE = st.sampled_from(["", " ", "-", "_", "\n", ".", "é"])


@settings(max_examples=500)
@given(
    st.lists(st.tuples(_PIECES, _GLUE), max_size=30),
    st.lists(_PIECES, min_size=1, max_size=3),
    _GLUE,
)
# A CJK term matches inside runs: its next match may start within the last one.
@example([("한국", "")] * 3, ["한국", "한국"], "")
def test_the_needle_first_search_finds_what_the_pattern_finds(
    text_parts: list[tuple[str, str]], term_parts: list[str], joint: str
) -> None:
    text = fold("".join(piece + glue for piece, glue in text_parts)).text
    term = joint.join(term_parts)
    pattern = _pattern(term)
    expected = pattern.search(text) if pattern is not None else None
    found = _search(term, text)
    assert (found.span() if found else None) == (expected.span() if expected else None)
    every = pattern.finditer(text) if pattern is not None else ()
    assert [hit.span() for hit in _matches(term, text)] == [hit.span() for hit in every]


def test_a_term_inside_a_longer_word_is_no_match_but_a_later_whole_one_is() -> None:
    text = fold("Xabc, abcd and ABC.").text
    hit = _search("abc", text)
    assert hit is not None and hit.span() == (15, 18)
    assert highlight("Xabc, abcd and ABC.", ["abc"]) == "Xabc, abcd and **ABC**."


@settings(max_examples=300)
@given(
    st.lists(st.tuples(_PIECES, _GLUE), max_size=20),
    st.lists(_PIECES, min_size=1, max_size=2),
    st.integers(0, 2),
    st.integers(0, 2),
)
def test_a_context_s_cut_marks_change_no_match_of_a_term(
    text_parts: list[tuple[str, str]], term_parts: list[str], lead: int, trail: int
) -> None:
    # highlight() folds a context without the "…" at its ends ("…" folds to three
    # dots): the terms' matches must be those found folding the whole text.
    core = "".join(piece + glue for piece, glue in text_parts)
    text = "…" * lead + core + "…" * trail
    term = " ".join(term_parts)
    pattern = _pattern(term)
    assert pattern is not None
    whole, alone = fold(text), fold(core)
    expected = [whole.span(*hit.span()) for hit in pattern.finditer(whole.text) if hit.group()]
    found = [alone.span(*hit.span()) for hit in pattern.finditer(alone.text) if hit.group()]
    assert [(start + lead, end + lead) for start, end in found] == expected
    assert highlight(text, [term]) == "…" * lead + highlight(core, [term]) + "…" * trail


def test_a_cut_context_is_highlighted_through_its_accents() -> None:
    text = "…Herr Müller wohnt in der Straße…"
    assert highlight(text, ["muller", "strasse"]) == "…Herr **Müller** wohnt in der **Straße**…"
