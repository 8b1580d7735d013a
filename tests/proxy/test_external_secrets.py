"""A secret in an expanded ``${VAR}`` is never printed: real servers that fail.

An HTTP entry on a closed loopback port and stdio entries that exit, crash or cannot be
found, with ``SECRET_TOKEN`` in the URL's query, a header, the command, the args and the
env: the error, its traceback, the log and the CLI's stderr show ``${SECRET_TOKEN}``
and never the value.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

import anyio
import pytest
from _external_server import served_in_a_child
from _process import free_port

from nativemcp.proxy import (
    RestartPolicy,
    ServerError,
    ServerStartError,
    WorkerPool,
    load_mcp_servers,
)

pytestmark = [pytest.mark.anyio, pytest.mark.real_process]

SECRET = "sup3rs3cretVALUE"
ENV = {"SECRET_TOKEN": SECRET}
TESTS = Path(__file__).parents[1]


@pytest.fixture(autouse=True)
def secret_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", SECRET)


async def _poll(condition: Any) -> None:
    """Wait (bounded) for what another task logs: there is no event to wait on."""
    with anyio.fail_after(20):
        while not condition():  # noqa: ASYNC110 - the state is in the log
            await anyio.sleep(0.02)


def _everything(caught: BaseException, caplog: pytest.LogCaptureFixture) -> str:
    """The error's message and traceback (causes included) and every log line."""
    return "".join(traceback.format_exception(caught)) + caplog.text


async def _start_failure(config: dict[str, Any]) -> ServerStartError:
    with anyio.fail_after(30), pytest.raises(ServerStartError) as caught:
        async with WorkerPool(mcp_servers=config):
            pass
    return caught.value


async def test_an_http_server_that_cannot_be_reached_is_named_by_its_url_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp?k=${{SECRET_TOKEN}}"
    headers = {"Authorization": "Bearer ${SECRET_TOKEN}"}
    for kind in ("http", "sse"):
        entry = {"type": kind, "url": url, "headers": headers}
        with caplog.at_level(logging.DEBUG):
            error = await _start_failure({"remote": entry})
        assert f"MCP server 'remote' ({url}) failed to start" in str(error)
        assert SECRET not in _everything(error, caplog), kind


async def test_a_stdio_server_that_exits_is_named_by_its_command_and_args_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The server prints its argument and its environment on the way out, as some do.
    script = "import os, sys; sys.exit(f'bad key {sys.argv[1]} {os.environ[\"KEY\"]}')"
    entry = {
        "command": sys.executable,
        "args": ["-c", script, "--key=${SECRET_TOKEN}"],
        "env": {"KEY": "${SECRET_TOKEN}"},
    }
    with caplog.at_level(logging.DEBUG):
        error = await _start_failure({"local": entry})
    message = str(error)
    assert "--key=${SECRET_TOKEN}) failed to start" in message
    assert "bad key --key=${SECRET_TOKEN} ${SECRET_TOKEN}" in message  # its stderr, scrubbed
    assert SECRET not in _everything(error, caplog)


async def test_a_command_that_is_not_found_is_named_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    entry = {"command": f"{tmp_path}/${{SECRET_TOKEN}}/server"}
    with caplog.at_level(logging.DEBUG):
        error = await _start_failure({"missing": entry})
    assert f"({tmp_path}/${{SECRET_TOKEN}}/server) failed to start" in str(error)
    assert "FileNotFoundError" in str(error)
    assert SECRET not in _everything(error, caplog)


async def test_a_server_that_dies_and_restarts_is_logged_as_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = {
        "ext": {
            "command": sys.executable,
            "args": [str(TESTS / "_external_server.py"), str(tmp_path), "${SECRET_TOKEN}"],
        }
    }
    policy = RestartPolicy(backoff=0.01)
    with caplog.at_level(logging.DEBUG):
        async with WorkerPool(mcp_servers=config, restart=policy) as pool:
            handle: Any = pool._handles["ext"]
            os.kill(handle.pid, signal.SIGKILL)
            with anyio.fail_after(20):
                while handle.restarts == 0:  # noqa: ASYNC110 - the restart is in another task
                    await anyio.sleep(0.02)
    stopped = [r.getMessage() for r in caplog.records if "stopped" in r.getMessage()]
    assert stopped and "${SECRET_TOKEN}" in stopped[0]
    assert SECRET not in caplog.text


async def test_a_call_whose_http_server_dies_shows_no_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with served_in_a_child(tmp_path) as (url, child), caplog.at_level(logging.DEBUG):
        entry = {"url": url + "?k=${SECRET_TOKEN}", "headers": {"X-Key": "${SECRET_TOKEN}"}}
        async with WorkerPool(mcp_servers={"remote": entry}, timeout=10) as pool:
            with anyio.fail_after(20):
                assert (await pool.server("remote").echo(text="up")) == "up"

                async def kill_when_hanging() -> None:
                    await _poll(lambda: any("hang" in r.getMessage() for r in caplog.records))
                    child.kill()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(kill_when_hanging)
                    with pytest.raises(ServerError) as caught:
                        await pool.call_tool("remote__hang", {"key": "k"}, timeout=None)
    assert "${SECRET_TOKEN}" in caplog.text  # the records that would show it were kept
    assert SECRET not in _everything(caught.value, caplog)


async def test_the_cli_names_a_failing_server_as_written(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp?k=${{SECRET_TOKEN}}"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {"url": url}}}))
    cli = [sys.executable, "-m", "nativemcp.proxy.cli"]
    for command in (["tools"], ["search", "q"]):
        done = await anyio.run_process(
            [*cli, *command, "--data-dir", str(tmp_path / "d"), "--mcp-config", str(config)],
            env={**os.environ, **ENV},
            check=False,
        )
        stderr = done.stderr.decode()
        assert done.returncode != 0
        assert f"({url})" in stderr, stderr
        assert SECRET not in stderr + done.stdout.decode()


def test_redact_writes_back_every_spelling_of_a_value_and_leaves_short_ones() -> None:
    environ = {"SECRET_TOKEN": "a b/c?d", "PORT": "80"}
    (spec,) = load_mcp_servers(
        {"r": {"url": "http://127.0.0.1:${PORT}/mcp?k=${SECRET_TOKEN}"}}, environ=environ
    )
    assert spec.url == "http://127.0.0.1:80/mcp?k=a b/c?d"
    assert spec.describe() == "http://127.0.0.1:${PORT}/mcp?k=${SECRET_TOKEN}"
    for spelling in ("a b/c?d", "a%20b/c%3Fd", "a%20b%2Fc%3Fd", "a+b%2Fc%3Fd"):
        assert spec.redact(f"GET /mcp?k={spelling} 80") == "GET /mcp?k=${SECRET_TOKEN} 80"


def test_the_entry_as_written_keeps_every_field_a_variable_expands_in() -> None:
    entry = {
        "command": "${SECRET_TOKEN}/bin",
        "args": ["--k", "${SECRET_TOKEN}"],
        "env": {"K": "${SECRET_TOKEN}"},
        "cwd": "/tmp/${SECRET_TOKEN}",
    }
    (spec,) = load_mcp_servers({"s": entry}, environ=ENV)
    assert spec.args == ["--k", SECRET] and spec.env == {"K": SECRET}
    assert spec.as_written is not None
    written = spec.as_written
    assert (written.command, written.args, written.env, written.cwd) == (
        "${SECRET_TOKEN}/bin",
        ["--k", "${SECRET_TOKEN}"],
        {"K": "${SECRET_TOKEN}"},
        "/tmp/${SECRET_TOKEN}",
    )
    assert spec.describe() == "${SECRET_TOKEN}/bin --k ${SECRET_TOKEN}"
    assert SECRET not in repr(spec) and SECRET not in f"{[spec]}"
    (plain,) = load_mcp_servers({"s": {"command": "x", "args": ["${A:-dflt}"]}}, environ={})
    assert (plain.as_written, plain.expanded, plain.describe()) == (None, (), "x dflt")


async def test_a_secret_in_the_exception_of_an_sdk_debug_record_is_written_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import httpx2

    from nativemcp.proxy.external._log_redaction import secrets_kept_out_of_logs

    (spec,) = load_mcp_servers({"s": {"url": "https://mcp.example/mcp?api_key=${SECRET_TOKEN}"}})
    assert spec.url is not None and SECRET in spec.url
    request = httpx2.Request("GET", spec.url)
    logger = logging.getLogger("mcp.client.streamable_http")
    with caplog.at_level(logging.DEBUG), secrets_kept_out_of_logs(spec):
        try:
            # What the SDK's GET stream meets and logs with exc_info=True.
            httpx2.Response(502, request=request).raise_for_status()
        except httpx2.HTTPStatusError:
            logger.debug("GET stream error", exc_info=True)
    (record,) = [r for r in caplog.records if r.getMessage() == "GET stream error"]
    assert "api_key=${SECRET_TOKEN}" in caplog.text and "HTTPStatusError" in caplog.text
    assert SECRET not in caplog.text and SECRET not in logging.Formatter().format(record)
    assert record.exc_info is None  # the exception, which names the value, is not handed on
