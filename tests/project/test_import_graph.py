"""The import graph of the three packages: no circles, nothing private across packages.

Every ``import`` statement of every module is read from the source (lazy imports inside
functions and ``TYPE_CHECKING`` blocks included: a circle through a lazy import is still
two modules that need each other). A module's private modules (a ``_name`` part) are
for its own top-level package; another package imports its public names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "workers", "proxy")


def _modules() -> dict[str, Path]:
    """Every module of the three packages by its installed name (``nativemcp.proxy._pool``)."""
    found: dict[str, Path] = {}
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = ["nativemcp", folder, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """The modules of the three packages that module ``name`` imports, with the line."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from package import module` names a module; `from module import name` not.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target in MODULES and target != name:
                yield target, node.lineno


GRAPH = {name: sorted(set(_imports(name, path))) for name, path in MODULES.items()}


def _top(name: str) -> str:
    return ".".join(name.split(".")[:2])


def test_the_walk_sees_the_packages_and_their_imports() -> None:
    # A walk that found nothing would pass the checks below without checking anything.
    assert {"nativemcp.proxy._pool", "nativemcp.protocol.wire", "nativemcp.workers.channel"} <= (
        MODULES.keys()
    )
    host = {target for target, _ in GRAPH["nativemcp.workers._host"]}
    assert {"nativemcp.protocol.wire", "nativemcp.workers.channel"} <= host
    # Lazy imports count: the CLI opens the serve room only inside a function.
    assert "nativemcp.proxy.serve._transports" in {
        t for t, _ in GRAPH["nativemcp.proxy.cli._serve"]
    }


def test_no_package_imports_a_private_module_of_another() -> None:
    crossings = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, targets in GRAPH.items()
        for target, line in targets
        if _top(target) != _top(name) and any(part.startswith("_") for part in target.split("."))
    ]
    assert not crossings, "\n".join(crossings)


def test_protocol_imports_neither_workers_nor_proxy_and_workers_not_proxy() -> None:
    allowed = {
        "nativemcp.protocol": {"nativemcp.protocol"},
        "nativemcp.workers": {"nativemcp.protocol", "nativemcp.workers"},
        "nativemcp.proxy": {"nativemcp.protocol", "nativemcp.workers", "nativemcp.proxy"},
    }
    wrong = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target, _ in targets
        if _top(target) not in allowed[_top(name)]
    ]
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    circles: list[list[str]] = []
    state: dict[str, str] = {}  # "open" while on the path, "done" once fully walked
    path: list[str] = []

    def walk(name: str) -> None:
        state[name] = "open"
        path.append(name)
        for target, _ in GRAPH[name]:
            if state.get(target) == "open":
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target)
        path.pop()
        state[name] = "done"

    for name in GRAPH:
        if name not in state:
            walk(name)
    assert not circles, "\n".join(" -> ".join(circle) for circle in circles)


ROOMS = (
    "nativemcp.proxy.codemode",
    "nativemcp.proxy.external",
    "nativemcp.proxy.external.oauth",
    "nativemcp.proxy.http_edge",
    "nativemcp.proxy.serve.auth",
    "nativemcp.proxy.serve.fast",
    "nativemcp.proxy.serve.tasks",
)
"""Rooms whose public names (their ``__init__``) are the only way in from outside."""


@pytest.mark.parametrize("room", ROOMS)
def test_only_a_room_imports_its_private_modules(room: str) -> None:
    reaching_in = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, targets in GRAPH.items()
        for target, line in targets
        if target.startswith(f"{room}._") and name != room and not name.startswith(f"{room}.")
    ]
    assert GRAPH[room], "the room's __init__ re-exports nothing: the walk did not see it"
    assert not reaching_in, "\n".join(reaching_in)


def test_a_room_that_imports_another_reaches_it_by_its_public_names() -> None:
    # The walk really sees a crossing through a room's public names (serve's bridge
    # takes the scope map from serve/auth), so the check above is not vacuous.
    bridge = {target for target, _ in GRAPH["nativemcp.proxy.serve._bridge"]}
    assert {"nativemcp.proxy.serve.auth", "nativemcp.proxy.serve.tasks"} <= bridge
    assert not any(t.startswith("nativemcp.proxy.serve.auth._") for t in bridge)


def test_the_codemode_room_reaches_no_pool_core() -> None:
    # The room gets the pool's call path as a callable: it imports protocol's public
    # names, the telemetry room and the tool search room's public names, never the pool
    # core (that would be a circle); the pool core imports it.
    room = "nativemcp.proxy.codemode"
    public = {"nativemcp.protocol", "nativemcp.proxy.telemetry", "nativemcp.proxy.tool_search"}
    reaching_out = [
        f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith(room)
        for target, line in targets
        if not (target.startswith(room) or target in public)
    ]
    assert room in {t for t, _ in GRAPH["nativemcp.proxy._agent_loop"]}
    assert not reaching_out, "\n".join(reaching_out)
