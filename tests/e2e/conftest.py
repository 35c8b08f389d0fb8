"""End-to-end fixtures: a simulated cluster served over HTTP in this process, and daemon processes.

Every test gets its own cluster (``served``) on a free port and starts its own ``dgd-operator run``
processes with ``operators.start``; whatever still runs is killed when the test ends, pass or fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.e2e.harness import ServedCluster, serve_cluster
from tests.e2e.operators import Operators
from tests.e2e.recorder import Recorder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def served(tmp_path: Path, anyio_backend: object) -> AsyncIterator[ServedCluster]:
    async with serve_cluster(tmp_path) as cluster:
        yield cluster


@pytest.fixture
async def operators(served: ServedCluster, tmp_path: Path) -> AsyncIterator[Operators]:
    started = Operators(served, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
async def recorder(served: ServedCluster) -> AsyncIterator[Recorder]:
    """Records the operator's creations and deletions from before the test's first write."""
    recording = Recorder(served.observer)
    async with anyio.create_task_group() as tg:
        await tg.start(recording.run)
        yield recording
        tg.cancel_scope.cancel()
