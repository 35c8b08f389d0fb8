"""The adapter under test: every conformance test runs once per entry of ``ADAPTERS``.

An adapter entry is an async context manager that yields a ``Harness``: the port (``cluster``)
plus the few knobs the suite needs that the port does not have — the fault rules of the API server
behind it, a way to compact its watch history, and the sizes it was configured with.

``memory`` is the memory adapter itself. ``kube`` is the kube adapter talking HTTP to the facade
(``dgd.sim.apiserver.server``) over a ``MemoryCluster`` configured the same way: faults and
compaction reach the memory server behind the facade, and the kube adapter's watch buffer is the
memory server's, so a slow reader is dropped at the same point.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Faults
from dgd.cluster.protocol import Cluster
from dgd.sim.apiserver.server import Facade, serve

#: 2026-01-01T00:00:00Z; the test clock advances one second per reading.
EPOCH = 1_767_225_600.0


@dataclass(frozen=True)
class Harness:
    """One adapter under test and the server-side knobs the suite uses."""

    cluster: Cluster
    faults: Faults
    compact: Callable[[], None]
    history_size: int
    watch_buffer: int
    bookmark_interval: float


def ticking_clock(start: float = EPOCH) -> Callable[[], float]:
    """A clock that reads ``start``, ``start + 1``, ... (deterministic timestamps)."""
    ticks = itertools.count()
    return lambda: start + next(ticks)


#: How the memory server behind every adapter is configured.
HISTORY_SIZE, WATCH_BUFFER, BOOKMARK_INTERVAL = 64, 32, 0.02


def memory_server() -> MemoryCluster:
    return MemoryCluster(
        clock=ticking_clock(),
        rng=random.Random(20260101),
        history_size=HISTORY_SIZE,
        watch_buffer=WATCH_BUFFER,
        bookmark_interval=BOOKMARK_INTERVAL,
    )


def harness_on(cluster: Cluster, server: MemoryCluster) -> Harness:
    """``cluster`` under test, with the knobs of the memory ``server`` behind it."""
    return Harness(
        cluster=cluster,
        faults=server.faults,
        compact=server.compact,
        history_size=HISTORY_SIZE,
        watch_buffer=WATCH_BUFFER,
        bookmark_interval=BOOKMARK_INTERVAL,
    )


@asynccontextmanager
async def memory_adapter() -> AsyncIterator[Harness]:
    cluster = memory_server()
    yield harness_on(cluster, cluster)


@asynccontextmanager
async def kube_adapter() -> AsyncIterator[Harness]:
    server = memory_server()
    async with serve(Facade(server)) as url:
        api = ApiClient(Configuration(host=url))
        async with KubeCluster(api, qps=None, watch_buffer=WATCH_BUFFER, rng=random.Random(7)) as cluster:
            yield harness_on(cluster, server)


#: Every adapter the suite runs against, by id.
ADAPTERS: list[Callable[[], AbstractAsyncContextManager[Harness]]] = [memory_adapter, kube_adapter]
ADAPTER_IDS = ["memory", "kube"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ADAPTERS, ids=ADAPTER_IDS)
async def harness(request: pytest.FixtureRequest, anyio_backend: object) -> AsyncIterator[Harness]:
    factory: Callable[[], AbstractAsyncContextManager[Harness]] = request.param
    async with factory() as opened:
        yield opened


@pytest.fixture
def cluster(harness: Harness) -> Cluster:
    return harness.cluster
