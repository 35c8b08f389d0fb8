"""Runtime tests run on anyio's asyncio backend; the ones marked with BOTH_LOOPS also on uvloop."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
