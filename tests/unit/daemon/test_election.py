"""Leader election through the cluster port: candidates on one memory cluster, on a manual clock."""

from __future__ import annotations

import re

import anyio
import pytest

from dgd.cluster.errors import ServerError
from dgd.cluster.resources import LEASE
from dgd.daemon.election import LeaderElector
from dgd.daemon.lease import LeaseRecord, lease_object
from dgd.runtime import ManualClock, settle
from tests.unit.daemon.harness import (
    LEASE_NAME,
    LEASE_NS,
    TIMING,
    advance,
    elector,
    lease_spec,
    memory_cluster,
)

pytestmark = pytest.mark.anyio

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


async def candidate(elector: LeaderElector, scope: anyio.CancelScope) -> None:
    """Campaign, then hold the lease until it is lost (or the scope is cancelled: a crash)."""
    with scope:
        await elector.campaign()
        await elector.hold()


async def leader_after(clock: ManualClock, electors: list[LeaderElector], limit: float) -> tuple[str, float]:
    """Advance until one of ``electors`` leads; who, and how long it took."""
    start = clock.now()
    while clock.now() - start <= limit:
        for one in electors:
            if one.leading:
                return one.identity, clock.now() - start
        await advance(clock, 0.1)
    raise AssertionError(f"nobody led within {limit}s")


async def test_a_lone_candidate_creates_the_lease_and_renews_it_every_retry_period() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    a = elector(cluster, clock, "a")
    async with anyio.create_task_group() as tg:
        # given a lone candidate
        tg.start_soon(candidate, a, anyio.CancelScope())
        await settle()

        # then it leads at once, with a lease holding its record
        assert a.leading
        created = await lease_spec(cluster)
        assert created is not None
        assert created["holderIdentity"] == "a"
        assert created["leaseDurationSeconds"] == 15
        assert created["leaseTransitions"] == 0
        assert MICRO_TIME.match(created["acquireTime"]) and created["renewTime"] == created["acquireTime"]

        # when a retry period passes
        await advance(clock, TIMING.retry_period)

        # then it renewed: a new renew time, the same acquire time
        renewed = await lease_spec(cluster)
        assert renewed is not None
        assert renewed["renewTime"] > created["renewTime"]
        assert renewed["acquireTime"] == created["acquireTime"]
        tg.cancel_scope.cancel()


async def test_of_two_candidates_exactly_one_leads() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    a, b = elector(cluster.client(), clock, "a", seed=1), elector(cluster.client(), clock, "b", seed=2)
    async with anyio.create_task_group() as tg:
        # given two candidates starting together
        tg.start_soon(candidate, a, anyio.CancelScope())
        tg.start_soon(candidate, b, anyio.CancelScope())

        # when a minute passes
        for _ in range(60):
            await advance(clock, 1.0)
            # then at every moment exactly one of them leads, and the lease names it
            assert [a.leading, b.leading].count(True) == 1
        spec = await lease_spec(cluster)
        assert spec is not None
        assert spec["holderIdentity"] == ("a" if a.leading else "b")
        tg.cancel_scope.cancel()


async def test_when_the_leader_dies_the_standby_takes_over_once_the_lease_expires() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    a, b = elector(cluster.client(), clock, "a", seed=1), elector(cluster.client(), clock, "b", seed=2)
    scopes = {"a": anyio.CancelScope(), "b": anyio.CancelScope()}
    async with anyio.create_task_group() as tg:
        # given a leads and b stands by
        tg.start_soon(candidate, a, scopes["a"])
        await settle()
        tg.start_soon(candidate, b, scopes["b"])
        await advance(clock, 5.0)
        assert a.leading and not b.leading

        # when a's task dies without releasing the lease
        scopes["a"].cancel()
        await settle()

        # then b leads once the lease expires: within the lease duration of a's last renewal, plus
        # at most one jittered retry period for b to see that renewal and one to try after the expiry
        who, took = await leader_after(clock, [b], limit=30.0)
        assert who == "b"
        assert (
            TIMING.duration - 2 * 2.2 * TIMING.retry_period
            <= took
            <= TIMING.duration + 2 * 2.2 * TIMING.retry_period
        )
        spec = await lease_spec(cluster)
        assert spec is not None
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
        tg.cancel_scope.cancel()


async def test_a_released_lease_is_taken_over_within_seconds() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    a, b = elector(cluster.client(), clock, "a", seed=1), elector(cluster.client(), clock, "b", seed=2)
    scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        # given a leads and b stands by
        tg.start_soon(candidate, a, scope)
        await settle()
        tg.start_soon(candidate, b, anyio.CancelScope())
        await advance(clock, 5.0)

        # when a stops holding and releases the lease
        scope.cancel()
        assert await a.release(timeout=5.0)
        released = await lease_spec(cluster)

        # then the lease names nobody for a second, and b takes it at its next try
        assert released is not None
        assert "holderIdentity" not in released and released["leaseDurationSeconds"] == 1
        who, took = await leader_after(clock, [b], limit=10.0)
        assert who == "b"
        assert took <= 2.2 * TIMING.retry_period
        tg.cancel_scope.cancel()


async def test_a_leader_that_cannot_renew_stops_leading_at_the_renew_deadline() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    client = cluster.client()
    changes: list[tuple[float, bool]] = []
    a = elector(client, clock, "a", on_change=lambda leading: changes.append((clock.now(), leading)))
    async with anyio.create_task_group() as tg:
        # given a leads, having renewed at t=4
        tg.start_soon(candidate, a, anyio.CancelScope())
        await advance(clock, 4.0)
        assert a.leading

        # when every lease update fails from then on
        client.faults.fail(
            ServerError("etcd is unhappy"), verb="update", resource="leases.coordination.k8s.io"
        )
        await advance(clock, 12.0)

        # then a stopped leading exactly at the renew deadline after its last renewal
        assert not a.leading
        assert changes == [(0.0, True), (4.0 + TIMING.renew_deadline, False)]
        tg.cancel_scope.cancel()


async def test_a_renewal_that_hangs_is_cut_off_at_the_renew_deadline() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    client = cluster.client()
    a = elector(client, clock, "a")
    async with anyio.create_task_group() as tg:
        # given a leads
        tg.start_soon(candidate, a, anyio.CancelScope())
        await settle()

        # when every lease read hangs (an hour of event-loop time)
        client.faults.delay(3600.0, verb="get", resource="leases.coordination.k8s.io")
        await advance(clock, TIMING.renew_deadline + 0.5)

        # then a stopped leading by the deadline all the same
        assert not a.leading
        tg.cancel_scope.cancel()


async def test_a_leader_whose_lease_was_taken_stops_at_its_next_try() -> None:
    clock = ManualClock()
    cluster = memory_cluster(clock)
    a = elector(cluster.client(), clock, "a")
    async with anyio.create_task_group() as tg:
        # given a leads
        tg.start_soon(candidate, a, anyio.CancelScope())
        await settle()

        # when b's record replaces a's (as after a partition that lost a's renewals)
        stored = await cluster.get(LEASE.key(LEASE_NS, LEASE_NAME))
        stamp = "2026-01-01T00:00:00.000000Z"
        taken = lease_object(
            LEASE_NS, LEASE_NAME, LeaseRecord("b", 15, stamp, stamp, 1), stored["metadata"]["resourceVersion"]
        )
        await cluster.replace(LEASE, taken)
        await advance(clock, TIMING.retry_period)

        # then a stops leading at its next try, without waiting for the deadline
        assert not a.leading
        tg.cancel_scope.cancel()
