"""The workspace server in-process: every tool's text and typed result, the shell, exports."""

from __future__ import annotations

import base64
import html.parser
import io
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from nativemcp.protocol import EmbeddedResource, NativeMCPResponse, TextContent, unwrap
from nativemcp.workers import Server, ServerConfig
from nativemcp.workers.workspace import (
    DownloadResult,
    ExportResult,
    GrepResult,
    ListDirectoryResult,
    ReadFileResult,
    SearchFilesResult,
    ShellResult,
    create_server,
)

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("import os\n# TODO: main\nprint('hi')\n")
    (folder / "src" / "pkg" / "util.py").write_text("def f():\n    return 1  # todo later\n")
    (folder / "notes.md").write_text("# Notes\n한국어 메모\nTODO call\n")
    (folder / "blob.bin").write_bytes(b"\x00\x01TODO\x02")
    return folder.resolve()  # the shell reports the real path of its working directory


@pytest.fixture
def server(root: Path) -> Server:
    return create_server(ServerConfig(workspace_root=root))


async def ok(server: Server, tool: str, /, **args: Any) -> tuple[str, Any]:
    """The text and typed value of a successful call (fails the test on an error)."""
    response = await server.call_tool(tool, args)
    assert response.result is not None, response.error
    assert not response.result.is_error, response.result.content
    first = response.result.content[0]
    assert isinstance(first, TextContent)
    return first.text, response.structured_result


async def failure(server: Server, tool: str, /, **args: Any) -> tuple[str, dict[str, Any]]:
    """The text and structured content of an ``isError`` result."""
    response = await server.call_tool(tool, args)
    assert response.result is not None and response.result.is_error, response
    first = response.result.content[0]
    assert isinstance(first, TextContent)
    return first.text, response.result.structured_content or {}


# -- files ---------------------------------------------------------------------------------


async def test_read_file_returns_numbered_text_and_the_exact_content(server: Server) -> None:
    text, value = await ok(server, "read_file", path="notes.md")
    assert value == ReadFileResult(
        path="notes.md",
        content="# Notes\n한국어 메모\nTODO call\n",
        start_line=1,
        end_line=3,
        total_lines=3,
        size=len("# Notes\n한국어 메모\nTODO call\n".encode()),
    )
    assert text.splitlines()[0].startswith("notes.md (all 3 lines")
    assert "     2\t한국어 메모" in text


async def test_read_file_line_ranges_and_their_errors(server: Server) -> None:
    text, value = await ok(server, "read_file", path="src/main.py", start_line=2, end_line=9)
    assert (value.content, value.start_line, value.end_line) == (
        "# TODO: main\nprint('hi')\n",
        2,
        3,
    )
    assert "lines 2-3 of 3" in text
    message, content = await failure(server, "read_file", path="src/main.py", start_line=5)
    assert "past the end" in message and content["rule"] == "line_range"
    message, _ = await failure(server, "read_file", path="src/main.py", start_line=3, end_line=2)
    assert "before start_line" in message
    _, content = await failure(server, "read_file", path="blob.bin")
    assert content["rule"] == "not_text"


async def test_write_file_creates_parents_replaces_and_appends(server: Server, root: Path) -> None:
    text, value = await ok(server, "write_file", path="out/deep/a.txt", content="one\n")
    assert (value.created, value.size, value.bytes_written) == (True, 4, 4)
    assert text == "Wrote 4 bytes to out/deep/a.txt (new file); the file is now 4 bytes."
    _, value = await ok(server, "write_file", path="out/deep/a.txt", content="two\n", mode="a")
    assert (value.created, value.size) == (False, 8)
    _, value = await ok(server, "write_file", path="out/deep/a.txt", content="3")
    assert (root / "out" / "deep" / "a.txt").read_text() == "3"
    assert sorted(os.listdir(root / "out" / "deep")) == ["a.txt"]  # no temporary left
    _, content = await failure(server, "write_file", path="src", content="x")
    assert content["rule"] == "not_a_file"


async def test_list_directory_lists_types_and_sizes_directories_first(
    server: Server, root: Path
) -> None:
    (root / "link").symlink_to("notes.md")
    text, value = await ok(server, "list_directory")
    assert isinstance(value, ListDirectoryResult)
    assert [(e.name, e.type) for e in value.entries] == [
        ("src", "directory"),
        ("blob.bin", "file"),
        ("link", "symlink"),
        ("notes.md", "file"),
    ]
    assert value.entries[1].size == 7
    assert text.splitlines() == [
        ".: 4 entries",
        "  src/  (directory)",
        "  blob.bin  (file, 7 bytes)",
        "  link  (symlink)",
        f"  notes.md  (file, {value.entries[3].size} bytes)",
    ]
    _, content = await failure(server, "list_directory", path="notes.md")
    assert content["rule"] == "not_a_directory"


async def test_search_files_matches_names_at_any_depth_or_relative_paths(server: Server) -> None:
    text, value = await ok(server, "search_files", pattern="*.py")
    assert value == SearchFilesResult(
        pattern="*.py", path=".", matches=["src/main.py", "src/pkg/util.py"], truncated=False
    )
    assert text.splitlines() == [
        "2 paths under . match '*.py':",
        "  src/main.py",
        "  src/pkg/util.py",
    ]
    _, value = await ok(server, "search_files", pattern="pkg/*.py", path="src")
    assert value.matches == ["src/pkg/util.py"]
    _, value = await ok(server, "search_files", pattern="*", path="src", max_depth=1)
    assert value.matches == ["src/main.py", "src/pkg/"]
    text, value = await ok(server, "search_files", pattern="*.rs")
    assert value.matches == [] and text == "No paths under . match '*.rs'."


async def test_grep_reports_files_and_line_numbers(server: Server) -> None:
    text, value = await ok(server, "grep", pattern="TODO")
    assert isinstance(value, GrepResult)
    assert [(m.path, m.line, m.text) for m in value.matches] == [
        ("notes.md", 3, "TODO call"),
        ("src/main.py", 2, "# TODO: main"),
    ]
    assert value.files_matched == ["notes.md", "src/main.py"]
    assert value.files_skipped == 1  # the binary file
    assert text.splitlines() == [
        "2 matches for 'TODO' in 2 files under . (3 searched, 1 skipped):",
        "notes.md",
        "  3: TODO call",
        "src/main.py",
        "  2: # TODO: main",
    ]
    _, value = await ok(server, "grep", pattern="todo", ignore_case=True, path="src")
    assert [m.path for m in value.matches] == ["src/main.py", "src/pkg/util.py"]
    text, value = await ok(server, "grep", pattern="메모", path="notes.md", line_numbers=False)
    assert value.matches[0].line == 2 and text.splitlines()[-1] == "  한국어 메모"
    text, value = await ok(server, "grep", pattern="o", max_results=2)
    assert len(value.matches) == 2 and value.truncated and "limit reached" in text


async def test_grep_names_a_bad_regular_expression(server: Server) -> None:
    text, content = await failure(server, "grep", pattern="(unclosed")
    assert text == (
        "Invalid regular expression '(unclosed': missing ), unterminated subpattern at position 0"
    )
    assert content["rule"] == "regex"


async def test_replace_lines_replaces_and_deletes_ranges_bottom_up(
    server: Server, root: Path
) -> None:
    (root / "f.txt").write_text("1\n2\n3\n4\n5\n")
    text, value = await ok(
        server,
        "replace_lines_in_file",
        path="f.txt",
        replacements=[
            {"start_line": 4, "end_line": 5, "new_content": ""},
            {"start_line": 1, "new_content": "one\nuno"},
        ],
    )
    assert (root / "f.txt").read_text() == "one\nuno\n2\n3\n"
    assert (value.lines_removed, value.lines_added, value.total_lines) == (3, 2, 4)
    assert text == (
        "Applied 2 replacement(s) to f.txt: 3 line(s) removed, 2 added; the file now has 4 lines."
    )
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    await ok(
        server,
        "replace_lines_in_file",
        path="crlf.txt",
        replacements=[{"start_line": 2, "new_content": "B"}],
    )
    assert (root / "crlf.txt").read_bytes() == b"a\r\nB\r\n"


async def test_lines_end_at_newlines_only_as_editors_and_grep_count_them(
    server: Server, root: Path
) -> None:
    # A form feed (a page break in C and Python sources), U+0085 and U+2028 end no line:
    # line 2 is `second` in read_file, grep and replace_lines as in any editor.
    original = "page\x0cone\u2028same\x85line\nsecond\nthird\rfourth\r\n"
    (root / "paged.py").write_bytes(original.encode())
    text, value = await ok(server, "read_file", path="paged.py", start_line=2, end_line=2)
    assert (value.content, value.total_lines) == ("second\n", 4)
    assert text.splitlines()[-1] == "     2\tsecond"
    _, found = await ok(server, "grep", pattern="second|fourth", path="paged.py")
    assert [(m.line, m.text) for m in found.matches] == [(2, "second"), (4, "fourth")]
    await ok(
        server,
        "replace_lines_in_file",
        path="paged.py",
        replacements=[{"start_line": 2, "new_content": "SECOND\x0cpage"}],
    )
    assert (root / "paged.py").read_bytes().decode() == original.replace(
        "second\n", "SECOND\x0cpage\n"
    )


@pytest.mark.parametrize(
    ("replacements", "reason"),
    [
        ([{"start_line": 2, "end_line": 9, "new_content": ""}], "past the end"),
        ([{"start_line": 2, "end_line": 1, "new_content": ""}], "before start_line"),
        (
            [
                {"start_line": 1, "end_line": 2, "new_content": ""},
                {"start_line": 2, "new_content": ""},
            ],
            "overlaps",
        ),
        ([], "no replacements"),
    ],
)
async def test_replace_lines_refuses_bad_ranges_and_leaves_the_file(
    server: Server, root: Path, replacements: list[dict[str, Any]], reason: str
) -> None:
    (root / "f.txt").write_text("1\n2\n3\n")
    text, content = await failure(
        server, "replace_lines_in_file", path="f.txt", replacements=replacements
    )
    assert reason in text and content["rule"] == "line_range"
    assert (root / "f.txt").read_text() == "1\n2\n3\n"


# -- shell ---------------------------------------------------------------------------------


async def test_execute_shell_runs_in_the_root_and_reports_exit_code_and_streams(
    server: Server, root: Path
) -> None:
    with anyio.fail_after(10):
        text, value = await ok(
            server, "execute_shell", command="pwd; echo oops >&2; exit 3", timeout=10
        )
    assert value == ShellResult(
        command="pwd; echo oops >&2; exit 3",
        exit_code=3,
        stdout=f"{root}\n",
        stderr="oops\n",
        timed_out=False,
        truncated=False,
        stdout_bytes=len(f"{root}\n"),
        stderr_bytes=5,
    )
    # Every fact of the value is in the text, the streams' sizes in bytes included.
    stdout = f"{root}\n"
    assert text == (
        f"$ pwd; echo oops >&2; exit 3\nExit code 3.\nstdout ({len(stdout)} bytes):\n"
        f"{stdout}\nstderr (5 bytes):\noops\n"
    )


async def test_execute_shell_says_which_stream_was_empty(server: Server) -> None:
    with anyio.fail_after(10):
        text, _ = await ok(server, "execute_shell", command="true", timeout=10)
    assert text == "$ true\nExit code 0.\nstdout: empty (0 bytes)\nstderr: empty (0 bytes)"


async def wait_gone(pid: int) -> None:
    """Return once process ``pid`` has exited (a pidfd turns readable then)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


async def test_execute_shell_kills_the_whole_process_group_at_the_timeout(
    server: Server, root: Path
) -> None:
    with anyio.fail_after(10):
        text, value = await ok(
            server,
            "execute_shell",
            command="sleep 60 & echo $! > bg.pid; echo started; wait",
            timeout=0.5,
        )
    assert value.timed_out and value.exit_code is None
    assert value.stdout == "started\n"
    assert "Killed at the timeout (the whole process group)." in text
    background = int((root / "bg.pid").read_text())
    with anyio.fail_after(5):
        await wait_gone(background)


async def test_cancelling_execute_shell_kills_its_process_group(server: Server, root: Path) -> None:
    with anyio.move_on_after(2) as scope:  # the caller gives up long before the tool's timeout
        await server.call_tool(
            "execute_shell", {"command": "sleep 60 & echo $! > bg.pid; wait", "timeout": 60}
        )
    assert scope.cancelled_caught
    background = int((root / "bg.pid").read_text())
    with anyio.fail_after(5):
        await wait_gone(background)


async def test_execute_shell_caps_output_with_a_note(root: Path) -> None:
    server = create_server(ServerConfig(workspace_root=root, options={"max_output_bytes": 100}))
    with anyio.fail_after(10):
        text, value = await ok(
            server, "execute_shell", command="head -c 100000 /dev/zero | tr '\\0' x"
        )
    assert value.truncated and value.stdout_bytes == 100000
    assert value.stdout.startswith("x" * 100)
    assert "[output truncated: showing the first 100 of 100000 bytes]" in value.stdout
    assert "stdout (100000 bytes):\nxxx" in text and "[output truncated" in text


async def test_execute_shell_can_be_disabled_and_bounds_the_timeout(root: Path) -> None:
    server = create_server(ServerConfig(workspace_root=root, options={"shell_enabled": False}))
    _, content = await failure(server, "execute_shell", command="echo hi")
    assert content["rule"] == "shell_disabled"
    server = create_server(ServerConfig(workspace_root=root, options={"max_shell_timeout": 5}))
    _, content = await failure(server, "execute_shell", command="echo hi", timeout=6)
    assert content["rule"] == "timeout_limit"


# -- exports -------------------------------------------------------------------------------

URI = re.compile(r"^ui://nativemcp/export/(file|zip)/[0-9a-f]{32}$")


def export_parts(response: NativeMCPResponse[Any]) -> tuple[str, EmbeddedResource, ExportResult]:
    assert response.result is not None and not response.result.is_error, response
    text, resource = response.result.content
    assert isinstance(text, TextContent) and isinstance(resource, EmbeddedResource)
    assert isinstance(response.structured_result, ExportResult)
    return text.text, resource, response.structured_result


class _Card(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.button: dict[str, str | None] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "button":
            self.button = dict(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


async def test_export_file_copies_and_answers_text_then_an_html_card(
    server: Server, root: Path
) -> None:
    response = await server.call_tool(
        "export_file", {"path": "notes.md", "display_name": "Meeting notes"}
    )
    text, resource, value = export_parts(response)
    assert re.fullmatch(r"exports/files/notes_\d{8}_\d{6}\.md", value.export_path)
    assert (root / value.export_path).read_bytes() == (root / "notes.md").read_bytes()
    size = (root / "notes.md").stat().st_size
    assert text == (
        f"Exported the file 'Meeting notes' ({size} bytes) from notes.md to "
        f"{value.export_path}. The card below has a download button."
    )
    assert URI.match(resource.resource.uri) and resource.resource.uri == value.uri
    assert resource.resource.mime_type == "text/html"
    assert (value.kind, value.count, value.size, value.name) == ("file", 1, size, "Meeting notes")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", value.created_at)
    assert response.result is not None and response.result.structured_content is not None
    assert response.result.structured_content["exportPath"] == value.export_path
    assert response.result.structured_content["files"] == [{"path": "notes.md", "size": size}]
    # The typed value survives the JSON wire.
    wire = msgspec.json.encode(response)
    assert unwrap(wire, ExportResult) == value


async def test_export_card_escapes_every_user_string_and_posts_a_tool_action(
    server: Server, root: Path
) -> None:
    hostile_file = "<b>&\"'.txt"
    (root / hostile_file).write_text("x")
    name = "<img src=x onerror=alert(1)>\"'&"
    description = "</p><script>alert(2)</script>"
    response = await server.call_tool(
        "export_file", {"path": hostile_file, "display_name": name, "description": description}
    )
    _, resource, value = export_parts(response)
    card_html = resource.resource.text
    assert card_html is not None
    for raw in (name, description, hostile_file, "<img", "alert(2)</script>"):
        assert raw not in card_html
    card = _Card()
    card.feed(card_html)
    assert card.tags.count("script") == 1 and "img" not in card.tags and "b" not in card.tags
    shown = "".join(card.text)
    assert name in shown and description in shown and hostile_file in shown
    assert card.button["data-tool"] == "download_file"
    assert card.button["data-path"] == value.export_path
    assert 'type: "tool"' in card_html
    assert "payload: {toolName: button.dataset.tool, params: {path: button.dataset.path}}" in (
        card_html
    )


async def test_the_card_button_action_downloads_the_export(server: Server, root: Path) -> None:
    response = await server.call_tool("export_zip", {"files": ["notes.md"], "package_name": "n"})
    _, resource, value = export_parts(response)
    card = _Card()
    card.feed(resource.resource.text or "")
    tool, path = card.button["data-tool"], card.button["data-path"]
    assert tool is not None and path is not None
    # What the host does with the UI action {type: "tool", payload: {toolName, params}}.
    download = await server.call_tool(tool, {"path": path})
    assert download.result is not None and not download.result.is_error
    text, blob = download.result.content
    assert isinstance(text, TextContent) and isinstance(blob, EmbeddedResource)
    assert blob.resource.blob is not None
    assert base64.b64decode(blob.resource.blob) == (root / value.export_path).read_bytes()
    assert blob.resource.mime_type == "application/zip"
    assert download.structured_result == DownloadResult(
        path=value.export_path,
        uri=f"workspace:///{value.export_path}",
        mime_type="application/zip",
        size=value.size,
    )
    assert text.text == (
        f"Sent {value.export_path} ({value.size} bytes, application/zip) for download."
    )


async def test_export_zip_packs_every_file_and_says_so(server: Server, root: Path) -> None:
    response = await server.call_tool(
        "export_zip",
        {"files": ["notes.md", "src/main.py", "./notes.md"], "package_name": "my docs"},
    )
    text, resource, value = export_parts(response)
    assert re.fullmatch(r"exports/packages/my_docs_\d{8}_\d{6}\.zip", value.export_path)
    with zipfile.ZipFile(io.BytesIO((root / value.export_path).read_bytes())) as archive:
        assert archive.namelist() == ["notes.md", "src/main.py"]
        assert archive.read("src/main.py") == (root / "src" / "main.py").read_bytes()
    assert value.kind == "zip" and value.count == 2 and value.name == "my docs"
    assert URI.match(resource.resource.uri) and " " not in resource.resource.uri
    assert text.startswith("Created the ZIP package 'my docs' (")
    assert f"at {value.export_path} with 2 file(s): notes.md, src/main.py." in text


async def test_export_zip_lists_every_missing_file_and_exports_nothing(
    server: Server, root: Path
) -> None:
    text, content = await failure(
        server,
        "export_zip",
        files=["notes.md", "gone.txt", "src/also_gone.py"],
        package_name="p",
    )
    assert "'gone.txt'" in text and "'src/also_gone.py'" in text
    assert text.startswith("Nothing was exported: 2 file(s) could not be used")
    assert content["rule"] == "missing_files"
    assert content["missing"] == ["gone.txt", "src/also_gone.py"]
    text, content = await failure(server, "export_file", path="gone.txt")
    assert content["missing"] == ["gone.txt"]
    assert not (root / "exports").exists()


async def test_export_names_never_collide_or_leave_the_exports_folder(
    server: Server, root: Path
) -> None:
    first = export_parts(await server.call_tool("export_file", {"path": "notes.md"}))[2]
    second = export_parts(await server.call_tool("export_file", {"path": "notes.md"}))[2]
    assert first.export_path != second.export_path and first.uri != second.uri
    response = await server.call_tool(
        "export_zip", {"files": ["notes.md"], "package_name": "../../evil name.zip"}
    )
    value = export_parts(response)[2]
    assert re.fullmatch(r"exports/packages/evil_name_\d{8}_\d{6}\.zip", value.export_path)


async def test_export_texts_and_cards_speak_korean_with_the_ko_locale(root: Path) -> None:
    server = create_server(ServerConfig(workspace_root=root, options={"locale": "ko"}))
    response = await server.call_tool("export_zip", {"files": ["notes.md"], "package_name": "문서"})
    text, resource, value = export_parts(response)
    assert text.startswith("ZIP 패키지 '문서'(")
    assert "파일 1개: notes.md" in text
    assert re.fullmatch(r"exports/packages/문서_\d{8}_\d{6}\.zip", value.export_path)
    assert resource.resource.text is not None and "다운로드" in resource.resource.text
    text, _ = await failure(server, "export_file", path="없음.txt")
    assert text.startswith("export하지 않았습니다")


async def test_tools_are_listed_with_output_schemas_from_their_types(server: Server) -> None:
    tools = {tool.name: tool for tool in server.list_tools()}
    assert list(tools) == [
        "read_file",
        "write_file",
        "list_directory",
        "search_files",
        "grep",
        "replace_lines_in_file",
        "execute_shell",
        "export_file",
        "export_zip",
        "download_file",
    ]
    export_schema = tools["export_zip"].output_schema
    assert export_schema is not None and "exportPath" in export_schema["properties"]
    grep_schema = tools["grep"].output_schema
    assert grep_schema is not None and "filesMatched" in grep_schema["properties"]
    assert tools["read_file"].annotations is not None
    assert tools["read_file"].annotations.read_only_hint is True
