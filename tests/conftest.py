"""Shared pytest configuration: anyio tests run on asyncio (the worker pool's backend)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
