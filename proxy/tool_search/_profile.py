"""Which tools one client is offered: globs on full names, and the search mode.

``ToolProfile(tools=["builtin_workspace__*"], exclude_tools=["*__delete_*"])`` offers
the workspace's tools but none that deletes; ``search=True`` offers the two meta-tools
(``search_tools``, ``call_tool``) in place of the definitions, over the same subset;
``code_mode=True`` the three of code mode (``search_tools``, ``describe_tools``,
``run_code``: the model writes a program over the subset).
The globs are `fnmatch.fnmatchcase` patterns matched against the whole full name:
``builtin_workspace__read`` is one tool, never a prefix of
``builtin_workspace__read_file``; ``*`` and ``?`` say where more may follow.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable

import msgspec

__all__ = ["ToolProfile"]


class ToolProfile(msgspec.Struct, frozen=True, kw_only=True):
    """A subset of the catalog, by glob, and whether it is offered through search.

    Args:
        tools: globs on full names; a tool is offered when one matches (None: every
            tool).
        exclude_tools: globs on full names; a tool one matches is not offered, even
            when ``tools`` names it.
        search: offer ``search_tools`` and ``call_tool`` instead of each definition.
        code_mode: offer ``search_tools``, ``describe_tools`` and ``run_code`` instead
            of each definition (not with ``search``).

    Raises:
        ValueError: an empty glob, or one that is not a string; both meta-tool modes.
    """

    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    search: bool = False
    code_mode: bool = False

    def __post_init__(self) -> None:
        if self.search and self.code_mode:
            raise ValueError("tool search and code mode are two ways to offer tools; pick one")
        for option, globs in (("tools", self.tools or ()), ("exclude_tools", self.exclude_tools)):
            if isinstance(globs, str):
                raise ValueError(f"{option} takes a list of globs, not the string {globs!r}")
            for glob in globs:
                if not isinstance(glob, str) or not glob.strip():
                    raise ValueError(f"{option}: a glob is a non-empty string, not {glob!r}")

    @classmethod
    def of(
        cls,
        tools: Iterable[str] | None = None,
        exclude_tools: Iterable[str] = (),
        *,
        search: bool = False,
        code_mode: bool = False,
    ) -> ToolProfile:
        """A profile from any iterables of globs (the command line's lists).

        Raises:
            ValueError: an empty glob.
        """
        return cls(
            tools=None if tools is None else tuple(tools),
            exclude_tools=tuple(exclude_tools),
            search=search,
            code_mode=code_mode,
        )

    @property
    def filters(self) -> bool:
        """Whether the profile leaves any tool out."""
        return self.tools is not None or bool(self.exclude_tools)

    def allows(self, full_name: str) -> bool:
        """Whether the tool named ``full_name`` is offered."""
        if self.tools is not None and not _compiled(self.tools).fullmatch(full_name):
            return False
        return not self.exclude_tools or not _compiled(self.exclude_tools).fullmatch(full_name)

    def unmatched(self, full_names: Iterable[str]) -> list[str]:
        """The ``tools`` globs that match none of ``full_names``: most likely a mistake
        (a prefix written without ``*``, a base name without its server)."""
        names = list(full_names)
        return [
            glob
            for glob in self.tools or ()
            if not any(_compiled((glob,)).fullmatch(name) for name in names)
        ]


# Compiled once per list of globs: a profile is asked about every tool of every listing.
@functools.lru_cache(maxsize=64)
def _compiled(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern for any of ``globs``, as `fnmatch.fnmatchcase` reads each (none of
    them: a pattern that matches nothing)."""
    if not globs:
        return re.compile(r"(?!)")
    # translate() anchors each glob at its end (`\Z`); fullmatch anchors the start.
    return re.compile("|".join(f"(?:{fnmatch.translate(glob)})" for glob in globs))
