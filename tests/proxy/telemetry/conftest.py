"""The telemetry tests' fixture: OpenTelemetry set up for one test (`_telemetry`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _telemetry import Recorded, recording


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    """What the app's provider exported during the test."""
    with recording() as recorded:
        yield recorded
