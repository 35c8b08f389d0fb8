"""The daemon on a real control plane: upstream's examples converge on both pathways, a standby takes
over, a daemon killed mid-reconcile leaves no duplicate child, and steady state writes nothing.

Every test runs ``dgd-operator run`` processes and ``dgd-operator sim world`` (the simulated Grove,
DCD and checkpoint controllers, pods and their node) against the run's real kube-apiserver, etcd and
kube-controller-manager, in a namespace of its own, with the cluster-wide RBAC of ``deploy/`` applied
(it holds the planner ClusterRole the operator binds).
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import (
    UPSTREAM_EXAMPLES,
    Creations,
    RealCluster,
    manifest,
    operated,
    run_flags,
    world,
    written_config,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]


def _names(component: bool) -> list[tuple[str, dict[str, object]]]:
    suffix = "c" if component else "g"
    return [
        (f"{path.stem.replace('_', '-')}-{suffix}", manifest(path, component=component))
        for path in UPSTREAM_EXAMPLES
    ]


@pytest.mark.parametrize("component", [False, True], ids=["grove", "component"])
async def test_the_upstream_examples_reach_successful_one_at_a_time_then_all_together(
    real: RealCluster, daemons: Operators, tmp_path: Path, component: bool
) -> None:
    # given the daemon and the simulated world running against the real control plane
    async with operated(real, daemons, tmp_path):
        graphs = _names(component)

        # when each upstream example is applied alone, then deleted
        for name, document in graphs:
            await real.apply({**document, "metadata": {**document["metadata"], "name": name}})

            # then it reaches successful, and is gone again after its deletion (finalizer released)
            await real.settle(name, timeout=90)
            await real.kube.delete(real.dgd_key(name))
            await eventually(lambda n=name: real.gone(n), timeout=60, what=f"{name} is deleted")

        # when all of them are applied together, in one namespace
        for name, document in graphs:
            await real.apply({**document, "metadata": {**document["metadata"], "name": name}})

        # then every one reaches successful
        names = [name for name, _ in graphs]
        await real.settle(*names, timeout=180)


async def test_a_standby_takes_over_when_the_leader_is_killed(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    # given two daemons, one of which leads, and a graph it took to successful
    config = written_config(tmp_path)
    async with world(real, tmp_path):
        first = await daemons.start("first", flags=run_flags(config))
        await eventually(lambda: real.holder_is("first"), timeout=30, what="first leads")
        await daemons.start("second", flags=run_flags(config))
        await real.apply(manifest(UPSTREAM_EXAMPLES[0], name="before"))
        await real.settle("before", timeout=90)

        # when the leader is SIGKILLed
        first.kill(signal.SIGKILL)
        assert await first.exit_code(timeout=10) == -signal.SIGKILL

        # then the standby takes the lease and reconciles a graph applied after
        await eventually(lambda: real.holder_is("second"), timeout=30, what="second leads")
        await real.apply(manifest(UPSTREAM_EXAMPLES[0], name="after"))
        await real.settle("after", timeout=90)


async def test_a_daemon_killed_mid_reconcile_restarts_without_duplicate_children_and_then_writes_nothing(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    config = written_config(tmp_path)
    creations = Creations(real.kube, real.namespace)
    async with world(real, tmp_path), anyio.create_task_group() as tg:
        await tg.start(creations.run)
        # given a daemon working on four graphs, two per pathway
        first = await daemons.start("first", flags=run_flags(config))
        names = []
        for index in range(2):
            for component in (False, True):
                name = f"disagg-{index}-{'c' if component else 'g'}"
                names.append(name)
                await real.apply(manifest(UPSTREAM_EXAMPLES[1], name=name, component=component))

        # when it is SIGKILLed once it has created some children, and a new daemon is started
        await eventually(lambda: creations.created >= 8, timeout=60, what="some children are created")
        first.kill(signal.SIGKILL)
        assert await first.exit_code(timeout=10) == -signal.SIGKILL
        second = await daemons.start("second", flags=run_flags(config))

        # then every graph converges, no child was created twice or deleted
        await real.settle(*names, timeout=120)
        assert creations.recreated() == {}
        assert creations.deleted == []

        # and in steady state the daemon writes nothing
        await anyio.sleep(3)
        before = await second.writes()
        await anyio.sleep(10)
        assert await second.writes() == before
        tg.cancel_scope.cancel()
