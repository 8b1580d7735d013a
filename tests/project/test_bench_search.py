"""bench.search's overlap@5: a chunk the baseline ties with its own 5th counts only when
ties are asked to count."""

from __future__ import annotations

from bench.search import overlap


def test_a_chunk_tied_at_the_baselines_cut_counts_only_with_ties_counted() -> None:
    ours = {"komi": ["a", "b", "c", "d", "old"], "dide": ["x"], "none": []}
    # The baseline kept the newer of two chunks tied at its 5th place.
    theirs = {"komi": ["a", "b", "c", "d", "new"], "dide": ["x"], "none": ["y"]}
    tied = {"komi": {"new", "old"}, "dide": set[str](), "none": set[str]()}

    assert overlap(ours, theirs) == (4 / 5 + 1) / 2
    assert overlap(ours, theirs, tied.__getitem__) == 1.0


def test_a_chunk_the_baseline_does_not_tie_still_misses() -> None:
    ours = {"komi": ["a", "b", "c", "d", "far"]}
    theirs = {"komi": ["a", "b", "c", "d", "new"]}

    assert overlap(ours, theirs, lambda query: {"new", "newer"}) == 4 / 5


def test_queries_without_our_hits_or_the_baselines_run_are_left_out() -> None:
    ours = {"ran": ["a"], "unran": ["b"], "empty": []}
    theirs = {"ran": ["z"], "empty": ["c"]}

    assert overlap(ours, theirs, lambda query: set()) == 0.0
    assert overlap({"empty": []}, theirs) == 0.0
