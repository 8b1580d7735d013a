"""Tool profiles: globs on whole full names, exact fnmatchcase semantics."""

from __future__ import annotations

import pytest

from nativemcp.proxy.tool_search import ToolProfile


def test_a_glob_without_wildcards_names_one_tool_never_a_prefix_or_suffix() -> None:
    profile = ToolProfile(tools=("workspace__read",))
    assert profile.allows("workspace__read")
    for near in ("workspace__read_file", "workspace__rea", "my_workspace__read", "workspace__rea."):
        assert not profile.allows(near), near


def test_wildcards_match_as_fnmatchcase_and_case_counts() -> None:
    profile = ToolProfile(tools=("builtin_workspace__*", "time__get_?urrent_time"))
    assert profile.allows("builtin_workspace__read_file")
    assert profile.allows("time__get_current_time")
    assert not profile.allows("BUILTIN_WORKSPACE__read_file")
    assert not profile.allows("builtin_workspace_read_file")
    assert not profile.allows("time__get_ccurrent_time")
    # A bracket is a set, as fnmatch reads it; a dot is a dot.
    assert ToolProfile(tools=("a__[rw]ead",)).allows("a__wead")
    assert not ToolProfile(tools=("a__r.ad",)).allows("a__road")


def test_exclusions_win_over_inclusions_and_no_inclusion_means_every_tool() -> None:
    profile = ToolProfile(tools=("fs__*",), exclude_tools=("fs__delete_*", "fs__move"))
    assert profile.allows("fs__read")
    assert not profile.allows("fs__delete_file")
    assert not profile.allows("fs__move")
    assert profile.allows("fs__move_file")
    everything = ToolProfile(exclude_tools=("*__delete_*",))
    assert everything.allows("git__status") and not everything.allows("git__delete_branch")
    assert not ToolProfile().filters and everything.filters
    assert not ToolProfile(tools=()).allows("git__status")


@pytest.mark.parametrize(
    ("tools", "exclude"),
    [(("",), ()), ((), ("  ",)), ("fs__*", ())],
)
def test_empty_globs_and_a_bare_string_are_refused(tools: object, exclude: object) -> None:
    with pytest.raises(ValueError, match="glob"):
        ToolProfile(tools=tools, exclude_tools=exclude)  # type: ignore[arg-type]


def test_of_takes_any_iterables_and_the_search_flag() -> None:
    profile = ToolProfile.of(iter(["a__*"]), ["a__b"], search=True)
    assert profile == ToolProfile(tools=("a__*",), exclude_tools=("a__b",), search=True)
    assert ToolProfile.of(None).tools is None


def test_globs_that_match_no_tool_are_named_so_a_prefix_mistake_is_seen() -> None:
    profile = ToolProfile(tools=("fs__read", "fs__write*", "git__*"))
    assert profile.unmatched(["fs__read_file", "fs__write_file"]) == ["fs__read", "git__*"]
    assert profile.unmatched(["fs__read", "fs__write", "git__log"]) == []
    assert ToolProfile(exclude_tools=("x",)).unmatched([]) == []


def test_tool_search_and_code_mode_are_one_or_the_other() -> None:
    assert ToolProfile.of(["a__*"], code_mode=True).code_mode
    with pytest.raises(ValueError, match="pick one"):
        ToolProfile(search=True, code_mode=True)
