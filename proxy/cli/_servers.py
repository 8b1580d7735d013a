"""How the command line names a server: one rule, the same on every verb.

SERVER is one of

- a built-in name: ``content-store``, ``planning``, ``workspace``;
- ``module:attribute``: a module importable from the current folder (as ``python -m``
  finds it) or installed;
- ``path/to/file.py:attribute``: the file's path, relative, ``./`` or absolute;
- on a verb given ``--mcp-config FILE``, the name of one of that file's servers.

The attribute names a `Server` or a factory taking a `ServerConfig`. `resolve_servers`
is the one function that reads these, for ``call``, ``tools``, ``serve`` and
``console --server``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from nativemcp.workers import BUILTIN_SERVERS

from ._errors import UsageError

__all__ = ["ServerChoice", "resolve_servers"]


@dataclasses.dataclass(frozen=True)
class ServerChoice:
    """The servers a command line named, sorted by how the pool starts them."""

    builtins: tuple[str, ...] = ()
    """Built-in servers, by name."""
    sources: tuple[str, ...] = ()
    """The user's servers as ``module:attribute``, importable here and in the workers."""
    external: tuple[str, ...] = ()
    """Names to find among the ``--mcp-config`` file's servers."""
    typed: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)
    """Each of `sources` that the user typed otherwise (``mytools.py:server`` for
    ``mytools:server``), as typed: what error messages call it."""

    def names(self, started: Sequence[str]) -> list[str]:
        """The names of the chosen servers among a pool's ``started`` names (the pool
        lists built-ins first, then the user's servers, then the external ones)."""
        own = len(self.builtins) + len(self.sources)
        return [*started[:own], *self.external]


def _forms() -> str:
    return (
        f"a built-in ({', '.join(BUILTIN_SERVERS)}), module:attribute or path/to/file.py:attribute"
    )


def _importable_from(folder: str) -> None:
    """Let this process and the worker processes it spawns import modules from ``folder``
    (a worker starts a fresh interpreter: it reads PYTHONPATH, not our sys.path)."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if folder not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (folder, *paths) if p)


def _from_file(spec: str, target: str, attribute: str) -> str:
    path = Path(target).expanduser()
    if not path.is_file():
        raise UsageError(f"server {spec!r}: no file {target!r} (from {os.getcwd()})")
    module = path.stem
    if not module.isidentifier():
        raise UsageError(
            f"server {spec!r}: {path.name!r} cannot be imported under its name; "
            f"rename it to {module.replace('-', '_').replace('.', '_')}.py"
        )
    # The file is imported by its name: a module that name finds already (one of
    # Python's own, json.py; another file of that name, given before) would be imported
    # instead of it.
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is not None:
        origin = found.origin
        if origin is None or not os.path.exists(origin) or not path.samefile(origin):
            raise UsageError(
                f"server {spec!r}: the module name {module!r} is taken by "
                f"{origin or 'another module'}; rename {path.name!r}"
            )
    _importable_from(str(path.resolve().parent))
    return f"{module}:{attribute}"


def _from_module(spec: str, module: str, attribute: str) -> str:
    _importable_from(os.getcwd())
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UsageError(
            f"server {spec!r}: no module {module!r} in {os.getcwd()} or installed "
            f"(a file is named path/to/file.py:{attribute})"
        )
    return f"{module}:{attribute}"


def resolve_servers(specs: Sequence[str], *, mcp_config: bool = False) -> ServerChoice:
    """Read each SERVER of a command line (see the module docstring).

    A file's folder, or for a module the current folder, joins ``sys.path`` and
    ``PYTHONPATH``, so the worker processes import the server as this process does.

    Args:
        specs: the SERVER arguments, as typed.
        mcp_config: whether an ``--mcp-config`` file was given: then a bare name that
            is not a built-in is one of its servers (checked when the pool starts).

    Raises:
        UsageError: a SERVER of none of the forms, a missing file or module (named).
    """
    builtins: list[str] = []
    sources: list[str] = []
    external: list[str] = []
    typed: dict[str, str] = {}
    for spec in specs:
        if spec in BUILTIN_SERVERS:
            builtins.append(spec)
            continue
        target, sep, attribute = spec.rpartition(":")
        if not sep:
            if spec.endswith(".py"):
                raise UsageError(
                    f"server {spec!r}: add the name of its Server (or factory): {spec}:server"
                )
            if mcp_config:
                external.append(spec)
                continue
            raise UsageError(
                f"no server {spec!r}: give {_forms()}, or a server of --mcp-config FILE"
            )
        if not target or not attribute.isidentifier():
            raise UsageError(f"server {spec!r} is none of {_forms()}")
        if target.endswith(".py") or os.sep in target or "/" in target:
            source = _from_file(spec, target, attribute)
        else:
            source = _from_module(spec, target, attribute)
        sources.append(source)
        if source != spec:
            typed[source] = spec
    return ServerChoice(tuple(builtins), tuple(sources), tuple(external), typed)
