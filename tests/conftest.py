"""Shared pytest configuration: anyio tests run on both of anyio's backends, asyncio and
trio (``anyio_backend`` is module-scoped, so a module's module-scoped pools are made once
per backend; a module that runs on asyncio only says so with
``pytest.mark.anyio_backends("asyncio")``), and the ``database_url`` fixture runs a
storage test on both storage backends.

``database_url`` is None (SQLite, the embedded default) or a PostgreSQL URL whose
``search_path`` is a schema made for that one test and dropped after it, so tests never
see each other's stores. The PostgreSQL server comes from ``$NATIVEMCP_TEST_DATABASE_URL``
(``.ci/run`` starts one and sets it). Without it the PostgreSQL variants are skipped,
visibly in pytest's summary; in CI (``CI=true``) they fail instead, so a broken setup
cannot pass as green.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from _browser_pages import PageServer, serving

if TYPE_CHECKING:
    from _oauth_server import Issuer
    from _telemetry import Recorded

TEST_DATABASE_ENV = "NATIVEMCP_TEST_DATABASE_URL"
"""The PostgreSQL server the test suite may create schemas in."""


ANYIO_BACKENDS = ("asyncio", "trio")
"""The proxy runs on both of anyio's backends: every anyio test runs on each."""


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One place picks the backends. anyio's plugin requests `anyio_backend` for every
    # anyio test; a parametrize mark added before pytest reads the marks takes
    # precedence over the plugin's fixture (module scope, so a module's module-scoped
    # pools are made once per backend).
    if "anyio_backend" not in metafunc.fixturenames:
        return
    overrides = [
        fixture.baseid
        for fixture in metafunc._arg2fixturedefs.get("anyio_backend", ())
        if not fixture.func.__module__.startswith("anyio.")
    ]
    if overrides:
        # It would be parametrized over, silently: one way to choose, the marker.
        raise pytest.UsageError(
            f"{overrides[-1] or 'a conftest'} defines an anyio_backend fixture: mark the "
            'module with pytest.mark.anyio_backends("asyncio") instead'
        )
    if not any(
        "anyio_backend" in mark.args[0] for mark in metafunc.definition.iter_markers("parametrize")
    ):
        marker = metafunc.definition.get_closest_marker("anyio_backends")
        backends = marker.args if marker is not None else ANYIO_BACKENDS
        metafunc.definition.add_marker(
            pytest.mark.parametrize("anyio_backend", backends, scope="module")
        )


@pytest.fixture(autouse=True)
def _no_ambient_database(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own NATIVEMCP_DATABASE_URL must not redirect the SQLite tests.
    monkeypatch.delenv("NATIVEMCP_DATABASE_URL", raising=False)


def _server_url() -> str:
    url = os.environ.get(TEST_DATABASE_ENV)
    if url:
        return url
    message = f"${TEST_DATABASE_ENV} is not set: no PostgreSQL server to test against"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message + " (CI must run both backends; see .ci/run)")
    pytest.skip(message)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose ``search_path`` is a fresh, empty schema (dropped after)."""
    import psycopg

    base = _server_url()
    schema = f"test_{secrets.token_hex(6)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in base else "?"
    try:
        yield f"{base}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """None (SQLite under the data folder) or a PostgreSQL URL (see `postgres_url`)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def oauth_issuer() -> AsyncIterator[tuple[Issuer, str]]:
    """A real OAuth-protected MCP server and its authorization server on loopback
    (``_oauth_server``): the issuer, and the MCP URL."""
    from _oauth_server import Issuer, protected_server  # the SDK's server: only here

    issuer = Issuer()
    async with protected_server(issuer) as url:
        yield issuer, url


@pytest.fixture(scope="module")
def site() -> Iterator[PageServer]:
    """The browser tests' pages over HTTP on loopback, for the module (each browser test
    module runs on asyncio only: one Chromium per module is the budget)."""
    with serving() as server:
        yield server


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    """OpenTelemetry set up as an app does, for one test: what it recorded (see
    `_telemetry`; imported here only by the tests that ask for it)."""
    from _telemetry import recording

    with recording() as recorded:
        yield recorded
