"""The options that choose which tools a served client is offered, and how.

``--tools GLOB`` and ``--exclude-tools GLOB`` (each repeatable) are globs on full names
(``builtin_workspace__*``), matched whole as `fnmatch.fnmatchcase` matches;
``--tool-search`` offers the two meta-tools ``search_tools`` and ``call_tool`` in place
of every definition, ``--code-mode`` the three of code mode (``search_tools``,
``describe_tools``, ``run_code``). Together they make a `ToolProfile`. That search fuses
BM25 with wordllama's embedding model wherever wordllama is installed (as the default
install has it); ``--search-bm25`` keeps it to BM25 alone and ``--search-embed``
insists on the fused ranking (a pool option: `search_embed`); ``--search-learn`` keeps
the words each tool was found by (`search_learn`).
"""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

from ..codemode import DEFAULT_LIMITS, CodeLimits
from ..tool_search import EMBED_EXTRA, ToolProfile, check_embedding
from ._errors import UsageError

__all__ = ["add_profile_options", "code_limits", "search_embed", "search_learn", "tool_profile"]


def add_profile_options(parser: Any) -> None:
    """Add ``--tools``, ``--exclude-tools`` and ``--tool-search`` to ``parser``."""
    parser.add_argument(
        "--tools",
        action="append",
        metavar="GLOB",
        help="offer only the tools whose full name matches GLOB (repeatable; "
        "'builtin_workspace__*'; the whole name must match)",
    )
    parser.add_argument(
        "--exclude-tools",
        action="append",
        default=[],
        metavar="GLOB",
        help="do not offer the tools whose full name matches GLOB (repeatable)",
    )
    parser.add_argument(
        "--tool-search",
        action="store_true",
        help="offer two tools, search_tools and call_tool, in place of every definition "
        "(the model searches the catalog and calls by full name)",
    )
    parser.add_argument(
        "--code-mode",
        action="store_true",
        help="offer three tools, search_tools, describe_tools and run_code, in place of "
        "every definition (the model writes a Python program over the tools; pip install "
        "'nativemcp[code]')",
    )
    parser.add_argument(
        "--code-limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="with --code-mode: a program's limit (repeatable): duration=SECONDS, "
        "memory=BYTES, recursion=DEPTH, output=BYTES, calls=COUNT",
    )
    parser.add_argument(
        "--search-embed",
        action="store_true",
        help="with --tool-search: rank by meaning too, fusing BM25 with a small local "
        "embedding model (the default where wordllama is installed; this refuses to "
        f"start without it: pip install 'nativemcp[{EMBED_EXTRA}]')",
    )
    parser.add_argument(
        "--search-bm25",
        action="store_true",
        help="with --tool-search or --code-mode: rank by BM25 alone, without the embedding model",
    )
    parser.add_argument(
        "--search-learn",
        action="store_true",
        help="with --tool-search: keep each search's words as words of the tool the same "
        "session calls next, so the next search worded so finds it (kept in the data "
        "folder, or in PostgreSQL with --database-url; the words are users')",
    )


def search_embed(args: argparse.Namespace) -> bool | None:
    """The pool's ``search_embed``: False for ``--search-bm25``, True for
    ``--search-embed`` (where it can be honoured), None (fused where installed) for
    neither.

    Raises:
        UsageError: either without a search to rank, both, or ``--search-embed``
            without wordllama installed.
    """
    if args.search_bm25:
        if args.search_embed:
            raise UsageError("serve: --search-bm25 and --search-embed contradict; give one")
        if not (args.tool_search or args.code_mode):
            raise UsageError(
                "serve: --search-bm25 ranks the search of --tool-search or --code-mode; add one"
            )
        return False
    if not args.search_embed:
        return None
    if not args.tool_search:
        raise UsageError("serve: --search-embed ranks --tool-search's matches; add --tool-search")
    try:
        check_embedding()
    except ImportError as exc:
        raise UsageError(f"serve: --search-embed: {exc}") from None
    return True


def search_learn(args: argparse.Namespace) -> bool:
    """The pool's ``search_learn``: ``--search-learn``, which needs ``--tool-search``
    (a session's ``search_tools`` and the ``call_tool`` after it).

    Raises:
        UsageError: ``--search-learn`` without ``--tool-search``.
    """
    if args.search_learn and not args.tool_search:
        raise UsageError(
            "serve: --search-learn learns from --tool-search's searches; add --tool-search"
        )
    return bool(args.search_learn)


def code_limits(args: argparse.Namespace) -> CodeLimits | None:
    """The `CodeLimits` ``--code-limit`` asks for (None: none given).

    Raises:
        UsageError: not NAME=VALUE, an unknown name, a value that is not a positive
            number, or given without ``--code-mode``.
    """
    if not args.code_limit:
        return None
    if not args.code_mode:
        raise UsageError("serve: --code-limit limits --code-mode's programs; add --code-mode")
    fields = CodeLimits.__struct_fields__
    given: dict[str, float] = {}
    for item in args.code_limit:
        name, _, value = item.partition("=")
        if name not in fields:
            raise UsageError(f"serve: --code-limit {item!r}: the names are {', '.join(fields)}")
        try:
            given[name] = float(value) if name == "duration" else int(value)
        except ValueError:
            raise UsageError(f"serve: --code-limit {item!r}: {value!r} is not a number") from None
    try:
        return msgspec.structs.replace(DEFAULT_LIMITS, **given)
    except ValueError as exc:
        raise UsageError(f"serve: --code-limit: {exc}") from None


def tool_profile(args: argparse.Namespace) -> ToolProfile:
    """The `ToolProfile` the options ask for.

    Raises:
        UsageError: an empty glob.
    """
    try:
        return ToolProfile.of(
            args.tools,
            args.exclude_tools,
            search=args.tool_search,
            code_mode=args.code_mode,
        )
    except ValueError as exc:
        raise UsageError(f"serve: {exc}") from exc
