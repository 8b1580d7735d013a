"""The grep pattern's weight, read by our own parser of `re` syntax (no ``re._parser``)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativemcp.protocol import ToolError
from nativemcp.workers.workspace._grep_pattern import (
    MAX_PATTERN_WEIGHT,
    compile_pattern,
    pattern_weight,
)

BIG = 10**12


@pytest.mark.parametrize(
    ("pattern", "weight"),
    [
        ("abc", 3),
        ("a{3}", 4),  # the repeat node, and its body three times
        ("a*b+c?", 1 + 1 + 2 + 2),  # * and ? count their body once, as a minimum of 1 would
        ("a{,2}b{1,}c{2}", 2 + 2 + 3),
        ("a{2}?b{2}+", 3 + 3),  # lazy and possessive repeats
        ("(x{1000}){1000}", 1 + 1000 * (1 + 1001)),
        ("(?:x{1000}){1000}", 1 + 1000 * (1 + 1001)),
        # Escapes are one node whatever their length, so the repeat takes the whole escape.
        (r"\x41{3}", 4),
        (r"\u00e9{3}", 4),
        (r"\101{3}", 4),  # three octal digits: one character
        (r"\0{3}", 4),
        (r"\N{LATIN SMALL LETTER A}{2}", 3),
        (r"(a)\1{5}", 2 + 6),  # a group reference
        ("(a)" * 10 + r"\10", 10 * 2 + 1),  # group 10, not \1 then "0"
        (r"a\{1}", 4),  # an escaped brace is a literal, not a repeat
        ("x{e<=1}", 7),  # a "{" that is no counted repeat is a literal
        ("[]{]{2}", 3),  # a leading "]" belongs to the set
        (r"[^\]a(]{4}", 5),
        (r"[\d(|)]+", 2),  # what looks like a group or branch inside a set is not
        ("(?P<w>l)(?P=w)o", 2 + 1 + 1),
        ("(?=a)(?!b)(?<=c)(?<!d)(?>e)", 5 * 2),
        ("(?i:ab){4}", 1 + 4 * 3),
        ("(?#a(b|c)a{7}", 0 + 8),  # a comment ends at its first ")"
        ("(a)(?(1)bc|d)", 2 + (1 + 2 + 1)),  # a conditional's branches have no branch node
        ("foo|bar", 1 + 3 + 3),
        ("(a|b|[cd]|\\d){30000}", 1 + 30000 * 2),  # re folds one-character branches
        ("(a|[^b]){3}", 1 + 3 * (1 + 1 + 1 + 1)),  # a negated set is not folded
        ("(a|.){3}", 1 + 3 * (1 + 1 + 1 + 1)),  # nor is "."
        (r"(a|\b){3}", 1 + 3 * (1 + 1 + 1 + 1)),  # nor an anchor
        # Verbose mode: spaces and comments are no nodes, and a comment may hold anything.
        ("(?x) a {3} # (c|[\n b", 4 + 1),
        ("(?x:a b)c d", 1 + 2 + 3),  # verbose inside the group only
        ("(?x)a(?-x: b)", 1 + 3),
        ("(?x)[ ]\\ ", 2),  # a space in a set or escaped stays a character
    ],
)
def test_a_pattern_weighs_its_nodes_with_repeats_multiplied(pattern: str, weight: int) -> None:
    re.compile(pattern)  # the weight is only read of patterns re accepts
    assert pattern_weight(pattern, BIG) == weight


def test_the_weight_saturates_just_above_the_cap() -> None:
    assert pattern_weight("((x{1000}){1000}){1000}", 100) == 101
    assert pattern_weight("x{99}", 100) == 100


# -- generated patterns ------------------------------------------------------------------
# Each strategy draws a pattern together with the weight the rules give it, so any
# tokenizing slip (an escape or a set read one character short, a comment or a verbose
# space taken for a node, a quantifier applied to the wrong atom) shows as a mismatch.

Drawn = tuple[str, int]

ATOMS = st.sampled_from(
    [
        "a",
        "Z",
        ".",
        r"\d",
        r"\x41",
        r"\u00e9",
        r"\101",
        r"\0",
        r"\N{DIGIT ONE}",
        r"\{",
        r"\\",
        r"\)",
        "[a-z]",
        "[]x]",
        r"[^\]a]",
        "[(|)]",
    ]
).map(lambda text: (text, 1))

QUANTIFIERS = st.tuples(
    st.sampled_from([("*", 0), ("+", 1), ("?", 0), ("{3}", 3), ("{2,}", 2), ("{,4}", 0)]),
    st.sampled_from(["", "?", "+"]),
)


def _repeat(drawn: Drawn, quantifier: tuple[tuple[str, int], str]) -> Drawn:
    (text, least), suffix = quantifier
    return drawn[0] + text + suffix, 1 + drawn[1] * max(least, 1)


def _group(opener: str, branches: list[list[Drawn]]) -> Drawn:
    texts = ["".join(text for text, _ in branch) for branch in branches]
    weights = [sum(weight for _, weight in branch) for branch in branches]
    inner = weights[0] if len(weights) == 1 else 1 + sum(weights)
    return opener + "|".join(texts) + ")", 1 + inner


def _items(verbose: bool) -> st.SearchStrategy[Drawn]:
    def extend(children: st.SearchStrategy[Drawn]) -> st.SearchStrategy[Drawn]:
        # Branches of two or more nodes: re does not fold them into one set.
        branch = st.lists(children, min_size=2, max_size=3).filter(
            lambda items: sum(1 for _, weight in items if weight) >= 2
        )
        openers = st.sampled_from(["(", "(?:", "(?=", "(?!", "(?>", "(?i:"])
        groups = st.builds(_group, openers, st.lists(branch, min_size=1, max_size=3))
        return groups | st.builds(_repeat, groups, QUANTIFIERS)

    plain = ATOMS | st.builds(_repeat, ATOMS, QUANTIFIERS)
    comment = st.just(("(?#(a|[b)", 0))
    spaces = st.sampled_from([(" ", 0), ("\n\t", 0), (" # a ( [ |\n", 0)]) if verbose else None
    base = plain | comment | spaces if spaces is not None else plain | comment
    return st.recursive(base, extend, max_leaves=8)


def _pattern(flags: str, items: list[Drawn]) -> Drawn:
    return flags + "".join(text for text, _ in items), sum(weight for _, weight in items)


PATTERNS = st.builds(_pattern, st.just(""), st.lists(_items(False), min_size=1, max_size=5)) | (
    st.builds(_pattern, st.just("(?x)"), st.lists(_items(True), min_size=1, max_size=5))
)


# No time limits: on a loaded two-core runner, drawing a nested pattern can take a while.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS)
def test_a_generated_pattern_weighs_what_its_parts_do(drawn: Drawn) -> None:
    pattern, weight = drawn
    re.compile(pattern)
    assert pattern_weight(pattern, BIG) == weight


# -- compiling ---------------------------------------------------------------------------


def test_a_pattern_over_the_weight_is_refused_before_it_is_compiled() -> None:
    with pytest.raises(ToolError) as caught:
        compile_pattern("(?:x{1000}){1000}", ignore_case=False)
    content = caught.value.structured_content
    assert isinstance(content, dict) and content["rule"] == "pattern_too_complex"
    assert f"more than {MAX_PATTERN_WEIGHT} steps" in caught.value.message


def test_folded_alternatives_keep_a_pattern_under_the_weight() -> None:
    # 1 + 40,000 * 2 with the branches folded into one set; 200,001 if each counted.
    assert compile_pattern("(a|b|c){40000}", ignore_case=True).match("abc" * 14000)
