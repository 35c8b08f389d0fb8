"""Two daemon processes share one Lease: only the leader reconciles, a standby takes over a killed
leader within seconds, and a SIGTERM hands the lease over cleanly."""

from __future__ import annotations

import signal
import time

import pytest

from tests.e2e.eventually import eventually
from tests.e2e.harness import ServedCluster, agg
from tests.e2e.operators import FAST_LEASE, Operators

pytestmark = pytest.mark.anyio

MASTER = "leader_election_master_status{name=dgd-operator}"


async def test_only_the_leader_reconciles_and_a_standby_takes_over_within_20s_of_a_sigkill(
    served: ServedCluster, operators: Operators
) -> None:
    # given two daemons with a two-second lease, one of which leads, and a DGD it took to successful
    daemons = {name: await operators.start(name, FAST_LEASE) for name in ("a", "b")}
    leader_name = await eventually(served.holder, timeout=30, what="one daemon holds the lease")
    leader = daemons[leader_name]
    standby = daemons["b" if leader_name == "a" else "a"]
    await served.apply(agg("before"))
    await eventually(lambda: served.converged("before"), timeout=60, what="the first DGD is successful")

    # then exactly one reconciled: the leader's metrics count reconciles and writes, the standby's
    # none, and every event about the DGD came from the leader
    leader_metrics, standby_metrics = await leader.metrics(), await standby.metrics()
    assert leader_metrics[MASTER] == 1 and standby_metrics[MASTER] == 0
    assert await leader.dgd_reconciles() > 0 and await leader.writes() > 0
    assert await standby.dgd_reconciles() == 0 and await standby.writes() == 0
    assert await served.reporters("before") == {leader.instance}

    # when the leader is killed (no release) and a new DGD is applied
    leader.kill(signal.SIGKILL)
    killed_at = time.monotonic()
    await served.apply(agg("after"))

    # then the standby takes the lease and reconciles the new DGD within 20 s, then takes it to successful
    await eventually(
        lambda: served.holder_is(standby.instance), timeout=20, what="the standby holds the lease"
    )
    await eventually(lambda: served.reconciled("after"), timeout=20, what="the new DGD is reconciled")
    took_over_in = time.monotonic() - killed_at
    await eventually(lambda: served.converged("after"), timeout=60, what="the new DGD is successful")
    assert took_over_in < 20
    assert (await standby.metrics())[MASTER] == 1
    assert await standby.dgd_reconciles() > 0
    assert await served.reporters("after") == {standby.instance}
    assert await leader.exit_code(timeout=5) == -signal.SIGKILL


async def test_sigterm_drains_releases_the_lease_and_exits_0(
    served: ServedCluster, operators: Operators
) -> None:
    # given a leading daemon that took a DGD to successful
    operator = await operators.start("leader")
    await served.apply(agg("demo"))
    await eventually(lambda: served.converged("demo"), timeout=60, what="the DGD is successful")
    assert await served.holder() == "leader"

    # when it is sent SIGTERM
    operator.kill(signal.SIGTERM)
    code = await operator.exit_code(timeout=30)

    # then it exited 0 having released the lease: no holder, a one-second duration for the next candidate
    lease = await served.lease()
    assert code == 0, operator.tail()
    assert lease is not None
    assert not lease.get("holderIdentity") and lease["leaseDurationSeconds"] == 1
    assert "leader released lease dynamo-system/dgd-operator" in operator.messages()
