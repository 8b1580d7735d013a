"""Finding a query term in a chunk: the needle-first search agrees with the term's
pattern searched from the start, wherever the term's tokens, word edges and scripts
fall."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nativemcp.workers.content_store._snippet import _pattern, _search, highlight
from nativemcp.workers.content_store._tokenize import fold

_PIECES = st.sampled_from(["ab", "abc", "b", "x", "한국", "東京", "ab_c", "é", "ß", "A"])
_GLUE = st.sampled_from(["", " ", "-", "_", "\n", ".", "é"])


@settings(max_examples=500)
@given(
    st.lists(st.tuples(_PIECES, _GLUE), max_size=30),
    st.lists(_PIECES, min_size=1, max_size=3),
    _GLUE,
)
def test_the_needle_first_search_finds_what_the_pattern_finds(
    text_parts: list[tuple[str, str]], term_parts: list[str], joint: str
) -> None:
    text = fold("".join(piece + glue for piece, glue in text_parts)).text
    term = joint.join(term_parts)
    pattern = _pattern(term)
    expected = pattern.search(text) if pattern is not None else None
    found = _search(term, text)
    assert (found.span() if found else None) == (expected.span() if expected else None)


def test_a_term_inside_a_longer_word_is_no_match_but_a_later_whole_one_is() -> None:
    text = fold("Xabc, abcd and ABC.").text
    hit = _search("abc", text)
    assert hit is not None and hit.span() == (15, 18)
    assert highlight("Xabc, abcd and ABC.", ["abc"]) == "Xabc, abcd and **ABC**."
