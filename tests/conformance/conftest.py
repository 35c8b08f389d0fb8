"""The adapter under test: every conformance test runs once per entry of ``ADAPTERS``.

An adapter entry is an async context manager that yields a ``Harness``: the port (``cluster``)
plus the few knobs the suite needs that the port does not have — the fault rules of the API server
behind it, a way to compact its watch history, and the sizes it was configured with.

``memory`` is the memory adapter itself. ``kube`` is the kube adapter talking HTTP to the facade
(``dgd.sim.apiserver.server``) over a ``MemoryCluster`` configured the same way: faults and
compaction reach the memory server behind the facade, and the kube adapter's watch buffer is the
memory server's, so a slow reader is dropped at the same point. ``real`` is the kube adapter on the
run's real kube-apiserver (``tests/conftest.py``): there is no fault rule, compaction or configured
size to reach, so a test that needs one skips there (``requires``), naming the ``docs/decisions.md``
entry that says why; before each test the namespaces the suite writes are emptied.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Faults
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CLUSTER_ROLE, DEFAULT_RESOURCES, NAMESPACE, ObjectKey
from dgd.messages.base import JSONObject
from dgd.sim.apiserver.server import Facade, serve
from tests.conftest import kubectl
from tests.real.controlplane import ControlPlane

#: 2026-01-01T00:00:00Z; the test clock advances one second per reading.
EPOCH = 1_767_225_600.0


@dataclass(frozen=True)
class Harness:
    """One adapter under test and the server-side knobs the suite uses (``None``: not reachable)."""

    cluster: Cluster
    faults: Faults
    compact: Callable[[], None] | None
    history_size: int
    watch_buffer: int
    bookmark_interval: float
    target: str = "memory"
    #: The adapter an idle watch waits for a bookmark on (``None``: ``cluster``): on the real server, a
    #: second one asking for ``timeoutSeconds``, since kube-apiserver sends a watch's bookmark about a
    #: minute in, or 2 s before its timeout, whichever is sooner.
    bookmark_cluster: Cluster | None = None

    def requires(self, knob: str) -> None:
        """Skip on the real server, which has no ``knob`` to reach (see ``REAL_SERVER_DEPARTURE``)."""
        if self.target == "real":
            pytest.skip(f"the real API server has no {knob} to inject: {REAL_SERVER_DEPARTURE}")


#: The docs/decisions.md entry for what the conformance suite cannot do on the real server.
REAL_SERVER_DEPARTURE = 'docs/decisions.md, "Conformance on the real API server"'


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
        namespaces=("team-a", "team-b"),
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


#: What the suite writes on the real server, emptied before each test: the namespaced kinds in its
#: two namespaces, and the one cluster-scoped object it creates.
_SUITE_NAMESPACES = ("team-a", "team-b")
_SUITE_CLUSTER_ROLES = ("reader",)


#: The ``timeoutSeconds`` of the real server's bookmark watches: the bookmark comes about 8 s in, not 60.
BOOKMARK_WATCH_TIMEOUT = 10.0


@asynccontextmanager
async def real_adapter(plane: ControlPlane) -> AsyncIterator[Harness]:
    async with (
        await KubeCluster.from_config(plane.kubeconfig, qps=None) as cluster,
        await KubeCluster.from_config(
            plane.kubeconfig, qps=None, watch_timeout=BOOKMARK_WATCH_TIMEOUT
        ) as bookmark_cluster,
    ):
        await _emptied(cluster)
        # Pods bound to a node no kubelet runs would wait for one forever: delete them at once.
        for namespace in _SUITE_NAMESPACES:
            kubectl(plane, "delete", "pods", "--all", "-n", namespace, "--force", "--grace-period=0")
        yield Harness(
            cluster=cluster,
            faults=Faults(random.Random(1)),
            compact=None,
            history_size=0,
            watch_buffer=0,
            bookmark_interval=0.0,
            target="real",
            bookmark_cluster=bookmark_cluster,
        )


async def _emptied(cluster: KubeCluster) -> None:
    """The suite's namespaces present and empty of every kind it writes (finalizers released first)."""
    for namespace in _SUITE_NAMESPACES:
        with contextlib.suppress(AlreadyExists):
            await cluster.create(
                NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
    for resource in (r.as_raw() for r in DEFAULT_RESOURCES if r.namespaced):
        for namespace in _SUITE_NAMESPACES:
            with contextlib.suppress(NotFound):
                for item in (await cluster.list(resource, namespace=namespace)).items:
                    await _gone(cluster, resource.key(namespace, item["metadata"]["name"]), item)
    for name in _SUITE_CLUSTER_ROLES:
        with contextlib.suppress(NotFound):
            await _gone(
                cluster, CLUSTER_ROLE.key(None, name), await cluster.get(CLUSTER_ROLE.key(None, name))
            )


async def _gone(cluster: KubeCluster, key: ObjectKey[JSONObject], item: JSONObject) -> None:
    with contextlib.suppress(NotFound):
        if item["metadata"].get("finalizers"):
            await cluster.patch(key, {"metadata": {"finalizers": None}})
        await cluster.delete(key, propagation="Background")


#: Every adapter the suite runs against, by id.
ADAPTERS: list[Callable[[], AbstractAsyncContextManager[Harness]]] = [memory_adapter, kube_adapter]
ADAPTER_IDS = ["memory", "kube", "real"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=ADAPTER_IDS)
async def harness(request: pytest.FixtureRequest, anyio_backend: object) -> AsyncIterator[Harness]:
    target: str = request.param
    opening = (
        real_adapter(request.getfixturevalue("control_plane"))
        if target == "real"
        else dict(zip(ADAPTER_IDS, ADAPTERS, strict=False))[target]()
    )
    async with opening as opened:
        yield opened


@pytest.fixture
def cluster(harness: Harness) -> Cluster:
    return harness.cluster
