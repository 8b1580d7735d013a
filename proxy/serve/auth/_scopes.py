"""Which OAuth scopes each served tool needs: ``serve --scope GLOB=SCOPE[,SCOPE]``.

A rule's glob is matched (``fnmatch``, case-sensitive) against the tool's full catalog
name (``builtin_browser__navigate``, ``github__create_issue``), whatever route serves it.
A tool needs the scopes of every rule that matches it; a tool no rule matches needs only
a valid token. `ScopeMap.missing` is the one check: the HTTP layer answers 403 with it
before a call runs, and the bridge checks again and leaves a tool out of ``tools/list``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["ScopeMap", "ScopeRule"]

_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""RFC 6749 §3.3's scope-token: printable ASCII but space, ``"`` and ``\\`` (so a scope
can be quoted in a ``WWW-Authenticate`` header as it is)."""


@dataclass(frozen=True, slots=True)
class ScopeRule:
    """Tools whose full name matches ``glob`` need every scope of ``scopes``."""

    glob: str
    scopes: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> ScopeRule:
        """``GLOB=SCOPE[,SCOPE]`` (``browser__*=browser``, ``*=mcp:tools,read``).

        Raises:
            ValueError: no ``=``, an empty glob, no scope, or a scope that is not an
                RFC 6749 scope token (spaces, quotes and backslashes are not).
        """
        glob, sep, listed = text.partition("=")
        glob = glob.strip()
        if not sep or not glob:
            raise ValueError(
                f"a scope rule is GLOB=SCOPE[,SCOPE] (e.g. 'builtin_browser__*=browser'), "
                f"not {text!r}"
            )
        scopes = [s.strip() for s in listed.split(",") if s.strip()]
        if not scopes:
            raise ValueError(f"the scope rule {text!r} names no scope after '='")
        for scope in scopes:
            if _SCOPE_TOKEN.fullmatch(scope) is None:
                raise ValueError(
                    f"{scope!r} in the scope rule {text!r} is not an OAuth scope "
                    "(printable ASCII without spaces, quotes or backslashes)"
                )
        return cls(glob, frozenset(scopes))


class ScopeMap:
    """The scope rules of a served pool, in the order given.

    Args:
        rules: `ScopeRule`s, or their ``GLOB=SCOPE[,SCOPE]`` text.

    Raises:
        ValueError: a rule's text does not parse (see `ScopeRule.parse`).
    """

    def __init__(self, rules: Iterable[ScopeRule | str] = ()) -> None:
        self.rules: tuple[ScopeRule, ...] = tuple(
            rule if isinstance(rule, ScopeRule) else ScopeRule.parse(rule) for rule in rules
        )

    def __bool__(self) -> bool:
        return bool(self.rules)

    @property
    def scopes_supported(self) -> list[str]:
        """Every scope a rule names, sorted (the resource metadata's ``scopes_supported``)."""
        return sorted({scope for rule in self.rules for scope in rule.scopes})

    def required(self, tool: str) -> frozenset[str]:
        """The scopes a call of ``tool`` (its full catalog name) needs."""
        needed: set[str] = set()
        for rule in self.rules:
            if fnmatch.fnmatchcase(tool, rule.glob):
                needed |= rule.scopes
        return frozenset(needed)

    def missing(self, tool: str, granted: Sequence[str] | frozenset[str]) -> list[str]:
        """The scopes ``tool`` needs that ``granted`` lacks, sorted (empty: it may call)."""
        return sorted(self.required(tool) - set(granted))

    def refusal(self, tool: str, granted: Sequence[str] | frozenset[str]) -> str | None:
        """Why a caller with ``granted`` may not call ``tool`` (None: it may)."""
        missing = self.missing(tool, granted)
        if not missing:
            return None
        return (
            f"insufficient scope: calling {tool!r} needs the OAuth scope "
            f"{' '.join(missing)!r}; log in again asking for it"
        )
