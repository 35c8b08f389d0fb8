"""The daemon tests' harness: a memory cluster like a fresh one, electors, daemons on a manual clock."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CLUSTER_ROLE, LEASE, SECRET
from dgd.daemon.election import LeaderElector
from dgd.daemon.lease import LeaseTiming
from dgd.daemon.run import Daemon, DaemonSettings
from dgd.domain.gates import Gates, effective_config
from dgd.messages.config import OperatorConfig
from dgd.runtime import ManualClock, settle
from tests.unit.actors.operator.harness import fake_keys

#: 2026-01-01T00:00:00Z
EPOCH = 1_767_225_600.0
NS = "team-a"
LEASE_NS = "dynamo-system"
LEASE_NAME = "dgd-operator"
TIMING = LeaseTiming(duration=15.0, renew_deadline=10.0, retry_period=2.0)


def memory_cluster(clock: ManualClock, seed: int = 7) -> MemoryCluster:
    """A memory API server whose timestamps follow ``clock`` (from ``EPOCH``)."""
    return MemoryCluster(
        clock=lambda: EPOCH + clock.now(), rng=random.Random(seed), namespaces=(NS, LEASE_NS)
    )


async def install(cluster: MemoryCluster, config: OperatorConfig | None = None) -> None:
    """What our chart and a real cluster provide beside the namespaces ``memory_cluster`` starts with:
    the planner ClusterRole and the MPI Secret."""
    config = config or OperatorConfig()
    await cluster.create(
        CLUSTER_ROLE,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": config.rbac.planner_cluster_role_name},
        },
    )
    await cluster.create(
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": config.mpi.ssh_secret_name, "namespace": config.mpi.ssh_secret_namespace},
            "data": {"private.key": "ZmFrZQ==", "private.key.pub": "ZmFrZQ=="},
        },
    )


async def installed() -> tuple[ManualClock, MemoryCluster]:
    """A memory API server on a manual clock, with what ``install`` provides."""
    clock = ManualClock()
    server = memory_cluster(clock)
    await install(server)
    return clock, server


def elector(
    cluster: MemoryCluster,
    clock: ManualClock,
    identity: str,
    seed: int = 1,
    on_change: Callable[[bool], None] | None = None,
) -> LeaderElector:
    return LeaderElector(
        cluster,
        namespace=LEASE_NS,
        name=LEASE_NAME,
        identity=identity,
        timing=TIMING,
        clock=clock,
        wall=lambda: EPOCH + clock.now(),
        random=random.Random(seed),
        on_change=on_change,
    )


async def lease_spec(cluster: MemoryCluster) -> dict[str, Any] | None:
    """The stored Lease's spec (``None``: there is no Lease)."""
    try:
        lease = await cluster.get(LEASE.key(LEASE_NS, LEASE_NAME))
    except NotFound:
        return None
    spec: dict[str, Any] = lease["spec"]
    return spec


async def advance(clock: ManualClock, seconds: float, step: float = 0.1) -> None:
    """Move ``clock`` by ``seconds`` in small steps, letting every task react after each."""
    for _ in range(round(seconds / step)):
        await clock.advance(step)
    await settle()


class Running:
    """A daemon running in a task: its exit code once ``run`` returned."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.code: int | None = None
        self.done = anyio.Event()

    async def run(self) -> None:
        self.code = await self.daemon.run()
        self.done.set()


def daemon(
    cluster: Cluster,
    clock: ManualClock,
    identity: str = "a",
    *,
    leader_elect: bool = True,
    shutdown_timeout: float = 30.0,
    config: OperatorConfig | None = None,
    timing: LeaseTiming = TIMING,
    metrics_secure: bool = False,
    review_cluster: Cluster | None = None,
) -> Daemon:
    """A daemon on ``cluster`` with Grove on, its servers on free local ports, time on ``clock``; its
    metrics over plain HTTP unless ``metrics_secure`` (their reviews through ``review_cluster``)."""
    settings = DaemonSettings(
        instance=identity,
        metrics_address="127.0.0.1:0",
        metrics_secure=metrics_secure,
        probe_address="127.0.0.1:0",
        leader_elect=leader_elect,
        lease_name=LEASE_NAME,
        lease_namespace=LEASE_NS,
        timing=timing,
        shutdown_timeout=shutdown_timeout,
    )
    return Daemon(
        cluster,
        config=effective_config(config or OperatorConfig(), Gates(grove=True)),
        settings=settings,
        clock=clock,
        wall=lambda: EPOCH + clock.now(),
        random=random.Random(3),
        keys=fake_keys,
        resync=600.0,
        review_cluster=review_cluster,
    )


@asynccontextmanager
async def running(*daemons: Daemon) -> AsyncIterator[list[Running]]:
    """Run ``daemons`` until the block ends (then whatever still runs is cancelled)."""
    runs = [Running(one) for one in daemons]
    async with anyio.create_task_group() as tg:
        for run in runs:
            tg.start_soon(run.run)
            await run.daemon.serving.wait()
        await settle()
        await settle()
        yield runs
        tg.cancel_scope.cancel()
