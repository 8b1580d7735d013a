"""The notes a new user needs in the first hour say what is true of the tools they name:
which extra installs what, and what environment an MCP client's stdio launch passes on."""

from __future__ import annotations

import tomllib

import pytest
from _pages import README, ROOT, page_text
from mcp.client.stdio import get_default_environment

SERVE = "docs/guides/serve.md"


def test_the_sdks_stdio_launch_drops_the_data_folder_variables_so_the_docs_pass_data_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NATIVEMCP_DATA_DIR", "/srv/notes")
    monkeypatch.setenv("XDG_DATA_HOME", "/srv/xdg")
    monkeypatch.setenv("NATIVEMCP_DATABASE_URL", "postgresql://db/agents")
    passed = get_default_environment()
    assert "HOME" in passed and "PATH" in passed
    for name in ("NATIVEMCP_DATA_DIR", "XDG_DATA_HOME", "NATIVEMCP_DATABASE_URL"):
        assert name not in passed, name
    # So the pages say it, beside the client config whose stdio entry passes --data-dir.
    assert "Give `serve` over stdio its data folder with `--data-dir`" in page_text(SERVE)
    assert "reduced environment" in README.read_text("utf-8")


def test_the_extras_the_docs_name_install_what_they_say() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    names = {
        extra: {spec.split(">")[0].split("[")[0] for spec in specs}
        for extra, specs in project["optional-dependencies"].items()
    }
    main = {spec.split(">")[0].split("[")[0] for spec in project["dependencies"]}
    # "the `test` extra installs it": the time server of the external-servers guide, and mypy.
    assert {"mcp-server-time", "mypy"} <= names["test"]
    assert not {"mcp-server-time", "mypy"} & main
    assert "the `test` extra installs it" in page_text("docs/guides/external-servers.md")
    assert "`mypy` itself comes with the `test` extra" in README.read_text("utf-8")
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names["docs"]


def test_the_home_page_lists_every_guide_and_every_extra() -> None:
    home = page_text("docs/index.md")
    guides = sorted(path.name for path in (ROOT / "docs" / "guides").glob("*.md"))
    assert len(guides) >= 19
    missing = [name for name in guides if f"](guides/{name})" not in home]
    assert not missing, f"docs/index.md links no guide {missing}"
    assert "](cli.md)" in home
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras = list(project["optional-dependencies"])
    assert len(extras) >= 7
    unnamed = [extra for extra in extras if f"| `{extra}` |" not in home]
    assert not unnamed, f"docs/index.md's table of extras lacks {unnamed}"
