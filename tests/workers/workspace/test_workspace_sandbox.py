"""The workspace sandbox: hostile paths, symlinks, special files, races, limits, sessions.

Every test that attacks the sandbox keeps a sentinel folder *outside* the root and
checks afterwards that nothing in it was read (its secret never shows up in a result)
or written (its snapshot is unchanged).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nativemcp.protocol import NativeMCPResponse, ToolError
from nativemcp.workers import Server, ServerConfig, load_server
from nativemcp.workers.workspace import WorkspaceOptions, create_server
from nativemcp.workers.workspace._sandbox import Rule, Sandbox

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


SECRET = "TOP-SECRET-SENTINEL"
RULES = set(get_args(Rule)) - {"too_large", "not_text", "exists", "io_error"}


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | str, int]]:
    """Every entry under ``folder`` (not following links): mode, content or link, mtime."""
    out: dict[str, tuple[int, bytes | str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                body: bytes | str = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                body = path.read_bytes()
            else:
                body = ""
            out[str(path.relative_to(folder))] = (info.st_mode, body, info.st_mtime_ns)
    return out


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``(root, outside)``: a root with hostile symlinks, and the sentinel folder."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "dir" / "secret.txt").write_text(SECRET + "\n")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("fine\n")
    (root / "sub" / "inner.txt").write_text("inner\n")
    (root / "link_out").symlink_to(outside / "secret.txt")
    (root / "rel_link_out").symlink_to("../outside/secret.txt")
    (root / "linkdir_out").symlink_to(outside)
    (root / "sub" / "deep_linkdir_out").symlink_to("../../outside/dir")
    (root / "link_in").symlink_to("ok.txt")
    (root / "linkdir_in").symlink_to("sub")
    (root / "loop").symlink_to("loop")
    os.mkfifo(root / "fifo")
    return root, outside


@pytest.fixture
def server(layout: tuple[Path, Path]) -> Server:
    return create_server(ServerConfig(workspace_root=layout[0]))


HOSTILE = [
    "",
    "/etc/passwd",
    "/",
    "ok.txt\x00.png",
    "\x00",
    "..",
    "../outside/secret.txt",
    "./../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "sub/../../../etc/passwd",
    "..\\outside\\secret.txt",
    "sub\\..\\..\\outside\\secret.txt",
    "C:\\Windows\\win.ini",
    "c:secret.txt",
    "C:/outside/secret.txt",
    "\\\\server\\share\\secret.txt",
    "//server/share/secret.txt",
    "link_out",
    "rel_link_out",
    "linkdir_out",
    "linkdir_out/secret.txt",
    "linkdir_out/new.txt",
    "linkdir_out/dir/secret.txt",
    "sub/deep_linkdir_out/secret.txt",
    "sub/deep_linkdir_out/new.txt",
    "linkdir_in/../linkdir_out/secret.txt",
    "loop",
]


def calls_for(path: str) -> list[tuple[str, dict[str, Any]]]:
    """Every tool that takes a path, aimed at ``path``."""
    return [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("write_file", {"path": path, "content": "pwned", "mode": "a"}),
        ("list_directory", {"path": path}),
        ("search_files", {"pattern": "*", "path": path}),
        ("grep", {"pattern": ".", "path": path}),
        (
            "replace_lines_in_file",
            {"path": path, "replacements": [{"start_line": 1, "new_content": "x"}]},
        ),
        ("export_file", {"path": path}),
        ("export_zip", {"files": ["ok.txt", path], "package_name": "p"}),
        ("download_file", {"path": path}),
    ]


def rules_of(response: NativeMCPResponse[Any]) -> set[str]:
    assert response.result is not None
    content = response.result.structured_content or {}
    if "problems" in content:
        return {problem["rule"] for problem in content["problems"]}
    return {content.get("rule", "")}


async def test_every_tool_refuses_every_hostile_path_and_touches_nothing_outside(
    server: Server, layout: tuple[Path, Path]
) -> None:
    root, outside = layout
    outside_before, root_before = snapshot(outside), snapshot(root)
    for path in HOSTILE:
        for tool, args in calls_for(path):
            with anyio.fail_after(5):
                response = await server.call_tool(tool, args)
            assert response.result is not None, (tool, path, response.error)
            assert response.result.is_error, (tool, path, response.result.content)
            text = response.result.content[0].text  # type: ignore[union-attr]
            assert repr(path) in text, (tool, path, text)
            assert "rule" in text
            assert rules_of(response) <= RULES, (tool, path, response.result.structured_content)
            assert SECRET not in text
            assert SECRET not in str(response.result.structured_content)
    assert snapshot(outside) == outside_before
    assert snapshot(root) == root_before


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("", "empty_path"),
        ("a\x00b", "nul_byte"),
        ("/etc/passwd", "absolute_path"),
        ("C:\\Windows", "drive_letter"),
        ("d:x", "drive_letter"),
        ("../outside/secret.txt", "parent_escape"),
        ("..\\outside", "parent_escape"),
        ("link_out", "symlink_escape"),
        ("linkdir_out/secret.txt", "symlink_escape"),
        ("sub/deep_linkdir_out/secret.txt", "symlink_escape"),
        ("loop", "symlink_escape"),
        ("fifo", "special_file"),
        ("missing.txt", "not_found"),
        ("sub", "not_a_file"),
    ],
)
async def test_a_refusal_names_the_path_and_the_rule(server: Server, path: str, rule: str) -> None:
    with anyio.fail_after(5):
        response = await server.call_tool("read_file", {"path": path})
    assert response.result is not None and response.result.is_error
    assert response.result.structured_content is not None
    assert response.result.structured_content["rule"] == rule
    assert response.result.structured_content["path"] == path
    text = response.result.content[0].text  # type: ignore[union-attr]
    assert f"Refused {path!r}" in text and f"(rule: {rule})" in text


async def test_symlinks_that_stay_inside_the_root_are_followed(server: Server) -> None:
    for path, expected in [("link_in", "fine\n"), ("linkdir_in/inner.txt", "inner\n")]:
        response = await server.call_tool("read_file", {"path": path})
        assert response.result is not None and not response.result.is_error
        assert response.structured_result.content == expected  # type: ignore[union-attr]


async def test_dot_dot_that_stays_inside_the_root_is_allowed(server: Server) -> None:
    response = await server.call_tool("read_file", {"path": "sub/../ok.txt"})
    assert response.result is not None and not response.result.is_error
    assert response.structured_result.path == "ok.txt"  # type: ignore[union-attr]


async def test_fifos_are_refused_without_blocking_and_skipped_by_walks(
    server: Server, layout: tuple[Path, Path]
) -> None:
    with anyio.fail_after(5):
        for tool, args in [
            ("read_file", {"path": "fifo"}),
            ("write_file", {"path": "fifo", "content": "x"}),
            ("write_file", {"path": "fifo", "content": "x", "mode": "a"}),
            ("export_file", {"path": "fifo"}),
        ]:
            response = await server.call_tool(tool, args)
            assert response.result is not None and response.result.is_error
            assert rules_of(response) == {"special_file"}
        response = await server.call_tool("grep", {"pattern": "fine"})
        assert response.result is not None and not response.result.is_error
        assert [m.path for m in response.structured_result.matches] == ["ok.txt"]  # type: ignore[union-attr]
    assert stat.S_ISFIFO(os.lstat(layout[0] / "fifo").st_mode)


async def test_device_files_are_refused(server: Server, layout: tuple[Path, Path]) -> None:
    try:
        os.mknod(layout[0] / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    for tool, args in [
        ("read_file", {"path": "null"}),
        ("write_file", {"path": "null", "content": "x"}),
    ]:
        response = await server.call_tool(tool, args)
        assert response.result is not None and response.result.is_error
        assert rules_of(response) == {"special_file"}


def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    sandbox = Sandbox(root, max_read_bytes=1000, max_write_bytes=1000)
    (root / "d").mkdir()
    (root / "d" / "secret.txt").write_text("inside\n")
    reading = sandbox.resolve("d/secret.txt")
    writing = sandbox.resolve("d/new.txt")
    # The race: between the check and the open, d becomes a symlink to the outside.
    (root / "d" / "secret.txt").unlink()
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)
    before = snapshot(outside)
    for attempt in (
        lambda: sandbox.read_bytes(reading),
        lambda: sandbox.write_bytes(writing, b"pwned"),
        lambda: sandbox.write_bytes(writing, b"pwned", mode="a"),
    ):
        with pytest.raises(ToolError) as caught:
            attempt()
        assert caught.value.structured_content is not None
        assert caught.value.structured_content["rule"] == "symlink_escape"
    assert snapshot(outside) == before


def test_a_final_symlink_swapped_in_after_the_check_is_not_followed(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    sandbox = Sandbox(root, max_read_bytes=1000, max_write_bytes=1000)
    target = sandbox.resolve("ok.txt")
    (root / "ok.txt").unlink()
    (root / "ok.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(ToolError, match="symlink_escape"):
        sandbox.read_bytes(target)
    before = snapshot(outside)
    for mode in ("w", "a", "x"):
        with pytest.raises(ToolError, match=r"symlink_escape|exists"):
            sandbox.write_bytes(target, b"pwned", mode=mode)
    assert snapshot(outside) == before
    assert (root / "ok.txt").is_symlink()


async def test_size_limits_apply_to_reads_writes_and_appends(tmp_path: Path) -> None:
    assert WorkspaceOptions().max_read_bytes == 10 * 1024 * 1024
    assert WorkspaceOptions().max_write_bytes == 10 * 1024 * 1024
    server = create_server(
        ServerConfig(workspace_root=tmp_path, options={"max_read_bytes": 10, "max_write_bytes": 12})
    )
    (tmp_path / "big.txt").write_text("x" * 11)
    (tmp_path / "small.txt").write_text("y" * 10)
    for tool, args in [
        ("read_file", {"path": "big.txt"}),
        ("write_file", {"path": "new.txt", "content": "z" * 13}),
        ("write_file", {"path": "small.txt", "content": "abc", "mode": "a"}),
    ]:
        response = await server.call_tool(tool, args)
        assert response.result is not None and response.result.is_error, tool
        assert rules_of(response) == {"too_large"}
    assert not (tmp_path / "new.txt").exists()
    assert (tmp_path / "small.txt").read_text() == "y" * 10
    response = await server.call_tool("read_file", {"path": "small.txt"})
    assert response.result is not None and not response.result.is_error


def test_unknown_or_invalid_options_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_read_byte"):
        create_server(ServerConfig(workspace_root=tmp_path, options={"max_read_byte": 5}))
    with pytest.raises(ValueError, match="locale"):
        create_server(ServerConfig(workspace_root=tmp_path, options={"locale": "fr"}))
    with pytest.raises(ValueError, match="workspace_root or a data_dir"):
        create_server(ServerConfig())


async def test_without_a_root_each_session_gets_its_own_folder_under_data_dir(
    tmp_path: Path,
) -> None:
    server = load_server(
        "nativemcp.workers.workspace:create_server", ServerConfig(data_dir=tmp_path)
    )
    await server.call_tool("write_file", {"path": "a.txt", "content": "default"})
    assert (tmp_path / "workspace" / "default" / "a.txt").read_text() == "default"

    await server.switch_context("s1", None)
    response = await server.call_tool("read_file", {"path": "a.txt"})
    assert response.result is not None and rules_of(response) == {"not_found"}
    await server.call_tool("write_file", {"path": "a.txt", "content": "s1"})
    assert (tmp_path / "workspace" / "s1" / "a.txt").read_text() == "s1"

    # A hostile session id still names one folder inside data_dir/workspace.
    await server.switch_context("../../escape", None)
    await server.call_tool("write_file", {"path": "a.txt", "content": "x"})
    assert os.listdir(tmp_path) == ["workspace"]
    created = set(os.listdir(tmp_path / "workspace")) - {"default", "s1"}
    assert len(created) == 1
    assert os.listdir(tmp_path / "workspace" / created.pop()) == ["a.txt"]

    await server.switch_context(None, None)
    response = await server.call_tool("read_file", {"path": "a.txt"})
    assert response.structured_result.content == "default"  # type: ignore[union-attr]


async def test_a_planted_exports_symlink_cannot_redirect_an_export(
    server: Server, layout: tuple[Path, Path]
) -> None:
    root, outside = layout
    (root / "exports").symlink_to(outside)
    before = snapshot(outside)
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("export_file", {"path": "ok.txt"}),
        ("export_zip", {"files": ["ok.txt"], "package_name": "p"}),
    ]
    for tool, args in attempts:
        response = await server.call_tool(tool, args)
        assert response.result is not None and response.result.is_error
        assert rules_of(response) == {"symlink_escape"}
    assert snapshot(outside) == before


SEGMENTS = st.sampled_from(
    ["..", ".", "", "sub", "ok.txt", "link_out", "linkdir_out", "linkdir_in", "loop", "x\x00", "C:"]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(SEGMENTS, max_size=6), separator=st.sampled_from(["/", "\\"]))
def test_any_path_is_refused_by_a_rule_or_lands_inside_the_root(
    layout: tuple[Path, Path], parts: list[str], separator: str
) -> None:
    root = layout[0]
    sandbox = Sandbox(root, max_read_bytes=1000, max_write_bytes=1000)
    path = separator.join(parts)
    try:
        target = sandbox.resolve(path)
    except ToolError as exc:
        assert exc.structured_content is not None
        assert exc.structured_content["rule"] in RULES
        return
    landed = Path(os.path.realpath(root.joinpath(*target.parts)))
    assert landed == sandbox.root or landed.is_relative_to(sandbox.root)
    try:
        data = sandbox.read_bytes(target)
    except ToolError as exc:
        assert exc.structured_content is not None
        assert exc.structured_content["rule"] in RULES
    else:
        assert SECRET.encode() not in data
