"""The export card as an MCP App: the export tools name it, the page is listed and read as
``text/html;profile=mcp-app`` with its sandbox wishes, and the seeds' embedded card stays."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from nativemcp.protocol import APP_MIME_TYPE, EmbeddedResource, tool_ui
from nativemcp.workers import Server, ServerConfig
from nativemcp.workers.workspace import create_server

pytestmark = [pytest.mark.anyio, pytest.mark.anyio_backends("asyncio")]

APP = "ui://nativemcp/export-card.html"


@pytest.fixture
def server(tmp_path: Path) -> Server:
    (tmp_path / "notes.md").write_text("# Notes\n")
    return create_server(ServerConfig(workspace_root=tmp_path, options={"locale": "ko"}))


def test_only_the_export_tools_name_the_export_card_app(server: Server) -> None:
    named = {tool.name: tool_ui(tool.meta) for tool in server.list_tools()}
    assert named["export_file"] == APP
    assert named["export_zip"] == APP
    assert {name for name, uri in named.items() if uri is not None} == {"export_file", "export_zip"}


async def test_the_app_page_is_listed_and_read_as_an_mcp_app(server: Server) -> None:
    listed = [item for item in await server.list_resources() if item.uri == APP]
    assert len(listed) == 1
    assert listed[0].mime_type == APP_MIME_TYPE
    assert listed[0].meta == {"ui": {"csp": {}, "prefersBorder": True}}
    (contents,) = await server.read_resource(APP)
    assert contents.mime_type == APP_MIME_TYPE
    assert contents.meta == {"ui": {"csp": {}, "prefersBorder": True}}
    assert contents.text is not None and contents.text.startswith("<!DOCTYPE html>")
    # The labels are the server's locale, and the page asks its host to initialize.
    assert '"download":"다운로드"' in contents.text
    assert '"ui/initialize"' in contents.text


async def test_the_export_still_answers_text_and_the_embedded_card(server: Server) -> None:
    response = await server.call_tool("export_file", {"path": "notes.md"})
    assert response.result is not None and not response.result.is_error
    _text, card = response.result.content
    assert isinstance(card, EmbeddedResource)
    assert card.resource.uri.startswith("ui://nativemcp/export/file/")
    assert card.resource.mime_type == "text/html"
    assert response.result.structured_content is not None
    assert response.result.structured_content["exportPath"].startswith("exports/files/notes_")


async def test_no_value_can_close_the_pages_config_script(tmp_path: Path) -> None:
    hostile = "x</script><script>alert(1)</script>"
    server = create_server(
        ServerConfig(workspace_root=tmp_path, options={"download_tool": hostile})
    )
    (contents,) = await server.read_resource(APP)
    assert contents.text is not None
    assert "alert(1)</script>" not in contents.text
    config = contents.text.split('id="config">', 1)[1].split("</script>", 1)[0]
    assert msgspec.json.decode(config)["downloadTool"] == hostile
