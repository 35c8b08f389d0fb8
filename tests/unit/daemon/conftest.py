"""The daemon's tests run on anyio's asyncio backend (some on its virtual loop: ``virtual_time``)."""

from __future__ import annotations

import pytest

from tests.unit.daemon.virtual_time import threads_stop_the_clock as threads_stop_the_clock


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
