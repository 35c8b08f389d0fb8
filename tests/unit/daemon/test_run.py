"""The daemon's life on a memory cluster: lead, operate, stop cleanly, or stop at once on a lost lease."""

from __future__ import annotations

import logging

import anyio
import msgspec
import pytest

from dgd.actors.tree import DGDS, OPERATOR
from dgd.cluster.errors import ServerError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD
from dgd.daemon.lease import LeaseTiming
from dgd.daemon.probes import Role
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import ManualClock, settle
from tests.unit.actors.operator.harness import manifest
from tests.unit.daemon.harness import (
    NS,
    TIMING,
    Running,
    advance,
    daemon,
    installed,
    lease_spec,
    running,
)

pytestmark = pytest.mark.anyio

LEASES = "leases.coordination.k8s.io"


async def exit_code(run: Running) -> int | None:
    """The exit code of ``run``'s daemon, once it returned (within ten wall-clock seconds)."""
    with anyio.fail_after(10):
        await run.done.wait()
    return run.code


async def lose_lease(client: MemoryCluster, clock: ManualClock, timing: LeaseTiming = TIMING) -> None:
    """Refuse every lease renewal by ``client`` from now on, and move past the renew deadline."""
    client.faults.fail(ServerError("etcd is unhappy"), verb="update", resource=LEASES)
    await advance(clock, timing.renew_deadline + 0.5)


async def test_a_stop_request_drains_the_operator_releases_the_lease_and_exits_0() -> None:
    clock, server = await installed()
    a = daemon(server.client(), clock, "a")
    async with running(a) as [run]:
        # given a leading daemon that reconciled a DGD
        assert a.health.role is Role.LEADER
        await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
        await settle()
        dgd = await server.get(DGD.key(NS, "demo"))
        assert dgd.status is not None and dgd.status.state == "pending"

        # when it is asked to stop
        a.stop()

        # then it exited 0, with no actor left and the lease released for a successor
        assert await exit_code(run) == 0
        assert a.system is not None and a.system.lookup(OPERATOR) is None
        spec = await lease_spec(server)
        assert spec is not None
        assert "holderIdentity" not in spec and spec["leaseDurationSeconds"] == 1
        assert a.health.role is Role.STOPPING


async def test_a_standby_takes_over_within_seconds_of_the_leaders_graceful_stop() -> None:
    clock, server = await installed()
    a, b = daemon(server.client(), clock, "a"), daemon(server.client(), clock, "b")
    async with running(a, b) as [run_a, _]:
        # given a leads and runs the operator, b stands by without one
        await advance(clock, 3.0)
        assert a.health.role is Role.LEADER and b.health.role is Role.STANDBY
        assert b.system is None

        # when a stops gracefully
        a.stop()
        assert await exit_code(run_a) == 0

        # then b leads and runs the operator within two jittered retry periods
        await advance(clock, 2 * 2.2 * TIMING.retry_period)
        assert b.health.role is Role.LEADER
        assert b.system is not None and b.system.lookup(DGDS) is not None
        spec = await lease_spec(server)
        assert spec is not None and spec["holderIdentity"] == "b"


async def test_a_lost_lease_stops_every_write_at_once_and_exits_1() -> None:
    clock, server = await installed()
    client = server.client()
    a = daemon(client, clock, "a")
    async with running(a) as [run]:
        # given a leading daemon that reconciled a DGD
        await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
        await settle()

        # when its lease can no longer be renewed, past the renew deadline
        await lose_lease(client, clock)

        # then it stopped: exit 1, every actor cancelled, no lease released (it was not its to release)
        assert await exit_code(run) == 1
        assert a.system is not None and a.system.lookup(OPERATOR) is None
        spec = await lease_spec(server)
        assert spec is not None and spec["holderIdentity"] == "a"

        # and a change to the DGD gets no write from it any more
        version = server.resource_version
        await server.patch(
            DGD.key(NS, "demo"), {"spec": {"components": [{"name": "Frontend", "replicas": 2}]}}
        )
        await advance(clock, 5.0)
        assert int(server.resource_version) == int(version) + 1


async def test_a_lost_lease_ends_with_one_error_line_and_no_line_per_cancelled_actor(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, server = await installed()
    client = server.client()
    a = daemon(client, clock, "a")
    with caplog.at_level(logging.INFO, logger="dgd"):
        async with running(a) as [run]:
            # given a leading daemon that reconciled a DGD
            await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
            await settle()
            caplog.clear()

            # when its lease can no longer be renewed, past the renew deadline
            await lose_lease(client, clock)
            assert await exit_code(run) == 1

    # then the failed renewals are warnings, and the loss is one error line, the last one
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    assert lines[-1] == (
        logging.ERROR,
        "a lost lease dynamo-system/dgd-operator (not renewed for 10s): stopping every actor and exiting",
    )
    assert [level for level, _ in lines[:-1]] == [logging.WARNING] * (len(lines) - 1)
    assert all("cannot be taken: InternalError (500): etcd is unhappy" in line for _, line in lines[:-1])


async def test_a_reconcile_that_outlives_the_shutdown_timeout_is_cancelled_and_the_lease_released() -> None:
    clock, server = await installed()
    client = server.client()
    a = daemon(client, clock, "a", shutdown_timeout=5.0)
    async with running(a) as [run]:
        # given a reconcile stuck in a status write that takes an hour
        client.faults.delay(3600.0, verb="patch", resource=str(DGD), subresource="status")
        await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
        await settle()

        # when the daemon is asked to stop and the shutdown timeout passes
        a.stop()
        await advance(clock, 5.5)

        # then it cancelled the reconcile, released the lease and exited 0
        assert await exit_code(run) == 0
        spec = await lease_spec(server)
        assert spec is not None and "holderIdentity" not in spec


async def test_a_standby_asked_to_stop_exits_0_and_leaves_the_lease_alone() -> None:
    clock, server = await installed()
    a, b = daemon(server.client(), clock, "a"), daemon(server.client(), clock, "b")
    async with running(a, b) as [_, run_b]:
        # given b stands by
        assert b.health.role is Role.STANDBY

        # when b is asked to stop
        b.stop()

        # then it exits 0 and a still holds the lease
        assert await exit_code(run_b) == 0
        spec = await lease_spec(server)
        assert spec is not None and spec["holderIdentity"] == "a"
        assert a.health.role is Role.LEADER


async def test_without_leader_election_the_operator_runs_at_once_and_no_lease_is_written() -> None:
    clock, server = await installed()
    a = daemon(server.client(), clock, "a", leader_elect=False)
    async with running(a) as [run]:
        # given a daemon without leader election
        # then it runs the operator at once, and never writes a lease
        assert a.health.role is Role.LEADER
        assert a.system is not None and a.system.lookup(DGDS) is not None

        # when it is asked to stop, it exits 0
        a.stop()
        assert await exit_code(run) == 0
        assert await lease_spec(server) is None


async def test_a_lease_lost_while_draining_cuts_the_drain_short_and_exits_1() -> None:
    clock, server = await installed()
    client = server.client()
    # (a renew deadline shorter than the 10s a DGD actor is given to stop)
    timing = LeaseTiming(duration=6.0, renew_deadline=4.0, retry_period=1.0)
    a = daemon(client, clock, "a", timing=timing)
    async with running(a) as [run]:
        # given a daemon draining a reconcile stuck in an hour-long status write
        client.faults.delay(3600.0, verb="patch", resource=str(DGD), subresource="status")
        await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
        await settle()
        a.stop()
        await settle()

        # when its lease can no longer be renewed
        await lose_lease(client, clock, timing)

        # then it cancelled the drain at the renew deadline, and exits 1
        assert await exit_code(run) == 1
        assert a.system is not None and a.system.lookup(OPERATOR) is None
