"""`fold` (search-side case and accent folding): the run-by-run translation agrees with
folding character by character, and the map back to the original stays exact."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from nativemcp.workers.content_store._tokenize import fold


def _fold_one(char: str) -> str:
    base = unicodedata.normalize("NFKD", char)
    stripped = "".join(c for c in base if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", stripped).casefold()


@given(st.text(max_size=60))
def test_fold_agrees_with_folding_each_character(text: str) -> None:
    pieces = [_fold_one(char) for char in text]
    folded = fold(text)
    assert folded.text == "".join(pieces)
    if folded.origin is not None:
        expected = [index for index, piece in enumerate(pieces) for _ in piece]
        assert folded.origin == [*expected, len(text)]
    else:
        assert all(len(piece) == 1 for piece in pieces)


def test_a_character_that_changes_length_keeps_the_map_back_even_when_lengths_match() -> None:
    # "ß" grows by one and the lone combining mark shrinks by one: same length, not 1:1.
    text = "Straße\u0301x"
    folded = fold(text)
    assert folded.text == "strassex"
    assert folded.origin is not None
    assert folded.span(0, 8) == (0, len(text))
    assert fold("학교 東京 İstanbul").origin is None


def test_cjk_punctuation_hangul_syllables_and_cjk_ideographs_fold_to_themselves() -> None:
    # fold() lowercases runs of these (with ASCII) in C instead of looking each one up.
    for block in (range(0x3001, 0x302A), range(0xAC00, 0xD7A4), range(0x4E00, 0xA000)):
        text = "".join(map(chr, block))
        assert "".join(_fold_one(char) for char in text) == text


_MIXED = st.text(
    # Line breaks of every kind: ASCII lines and the others are folded separately.
    st.sampled_from("aZ é ß\u0301ǅİ학교東京がｶﾀ。ﬁ\n\r\x0b\x85\u2028"),
    max_size=80,
)


@given(_MIXED)
def test_fold_agrees_on_mixed_scripts(text: str) -> None:
    pieces = [_fold_one(char) for char in text]
    folded = fold(text)
    assert folded.text == "".join(pieces)
    if folded.origin is None:
        assert all(len(piece) == 1 for piece in pieces)
