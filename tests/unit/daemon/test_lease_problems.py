"""A lease the daemon cannot take is reported, not hidden: an ERROR naming the cause and the flag to
change, and a failing ``/readyz`` until it leads or sees another leader."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import pytest

from dgd.cluster.errors import Forbidden, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import LEASE
from dgd.daemon.election import LeaderElector
from dgd.daemon.probes import Health, Role, report
from dgd.runtime import ManualClock, settle
from tests.unit.daemon.harness import EPOCH, LEASE_NAME, LEASE_NS, TIMING, advance, memory_cluster

pytestmark = pytest.mark.anyio
R = TypeVar("R")


class LeaseRefused(ClusterProxy):
    """A cluster whose Lease writes are refused as a real API server refuses them, until ``allow``."""

    def __init__(self, inner: Cluster, refusal: Exception) -> None:
        super().__init__(inner)
        self.refusal: Exception | None = refusal

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        if self.refusal is not None and call.resource == LEASE and call.writes:
            raise self.refusal
        return await send()


def candidate(cluster: Cluster, clock: ManualClock, health: Health) -> LeaderElector:
    return LeaderElector(
        cluster, namespace=LEASE_NS, name=LEASE_NAME, identity="a", timing=TIMING, clock=clock,
        wall=lambda: EPOCH + clock.now(), random=random.Random(1), on_problem=health.lease_problem,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("refusal", "advice"),
    [
        (
            NotFound('namespaces "dynamo-system" not found', kind="Namespace", name=LEASE_NS),
            "create namespace",
        ),
        (Forbidden("leases is forbidden"), "grant the operator's credentials the Lease verbs"),
    ],
)
async def test_a_lease_that_cannot_be_taken_fails_readiness_with_the_cause_until_it_can(
    refusal: Exception, advice: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    cluster = LeaseRefused(memory_cluster(clock), refusal)
    health = Health(clock)
    health.role = Role.STANDBY
    elector = candidate(cluster, clock, health)
    async with anyio.create_task_group() as tg:
        # given a candidate whose every lease write is refused
        with caplog.at_level(logging.ERROR, logger="dgd.election"):
            tg.start_soon(elector.campaign)
            await settle()
            await advance(clock, 4 * TIMING.retry_period)

        # then every try logged an ERROR with the cause and what to change, and readiness fails with it
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) >= 3
        assert all(f"lease {LEASE_NS}/{LEASE_NAME} cannot be taken" in e for e in errors)
        assert all(advice in e and "--lease-namespace" in e for e in errors)
        ok, body = report(health.readiness(), "readyz", verbose=False)
        assert not ok
        assert "[-]lease failed: lease dynamo-system/dgd-operator cannot be taken" in body

        # when the cause is fixed
        cluster.refusal = None
        await advance(clock, 2 * TIMING.retry_period)

        # then it leads and nothing stands in readiness' way any more
        assert elector.leading
        assert elector.problem is None
        health.role = Role.LEADER
        assert [c for c in health.readiness() if c.name == "lease"] == []
        tg.cancel_scope.cancel()
