"""The PostgreSQL helpers that need no server: URLs shown without passwords, and the
reversible escape that lets text with NUL characters into PostgreSQL's text type."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from nativemcp.proxy import WorkerPool
from nativemcp.workers._database import (
    escape_text,
    is_postgres_url,
    redact_url,
    unescape_text,
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://app:s3cret@db.internal:5432/agents",
            "postgresql://app@db.internal:5432/agents",
        ),
        ("postgres://app:s3cret@db/agents?sslmode=require", "postgres://app@db/agents"),
        ("postgresql://[::1]:5433/agents", "postgresql://[::1]:5433/agents"),
        ("postgresql:///agents", "postgresql:///agents"),
        ("postgresql://app:p%40ss@db/a?options=-csearch_path%3Dx", "postgresql://app@db/a"),
    ],
)
def test_a_shown_url_keeps_user_host_port_and_database_but_never_the_password(
    url: str, shown: str
) -> None:
    assert redact_url(url) == shown
    assert is_postgres_url(url)


def test_only_postgresql_urls_are_accepted() -> None:
    assert not is_postgres_url("sqlite:///x.db")
    assert not is_postgres_url("/var/lib/data")
    with pytest.raises(ValueError, match="postgresql://") as caught:
        WorkerPool(database_url="mysql://root:hunter2@db/app")
    assert "hunter2" not in str(caught.value)


@given(st.text(alphabet=st.sampled_from(["a", "\x00", "\uffff", "0", "é", "\\"]), max_size=40))
def test_escaping_removes_every_nul_and_round_trips(text: str) -> None:
    escaped = escape_text(text)
    assert "\x00" not in escaped
    assert unescape_text(escaped) == text


@given(st.text())
def test_escaping_round_trips_any_text(text: str) -> None:
    assert unescape_text(escape_text(text)) == text
