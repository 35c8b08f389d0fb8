"""Chaos runs on the virtual-time loop: simulated minutes take milliseconds."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.sim.clock import backend_options


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    return ("asyncio", backend_options(virtual=True))
