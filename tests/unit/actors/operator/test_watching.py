"""Informers and the router: what reaches a DGD actor, and when."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
import pytest

from dgd.actors.machinery.workers import Workers
from dgd.actors.tree import DGDS, INFORMERS
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD, NAMESPACE, SERVICE
from dgd.messages.config import NamespaceConfig, OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import CountingMetrics
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio

ACTOR = f"{DGDS}/{NS}/demo"


async def test_a_dgd_created_before_the_operator_started_is_reconciled_once_the_caches_are_filled() -> None:
    # given a DGD stored before the operator runs
    async def before(cluster: MemoryCluster) -> None:
        await cluster.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))

    # when the operator starts
    async with running_operator(before=before) as op:
        # then its actor exists and reconciled it
        assert op.system.lookup(ACTOR) is not None
        dgd = await op.dgd()
        assert dgd.status is not None and dgd.status.state == "pending"


async def test_status_and_metadata_edits_of_a_dgd_do_not_wake_its_actor() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics) as op:
        # given a settled DGD
        await op.apply(manifest())
        reconciles = metrics.processed[ACTOR]

        # when someone adds a label (no new generation)
        dgd = await op.dgd()
        await op.cluster.patch(DGD.key(NS, "demo"), {"metadata": {"labels": {"team": "a"}}})
        await op.settle()

        # then the actor was not woken
        assert metrics.processed[ACTOR] == reconciles
        assert dgd.metadata.generation == (await op.dgd()).metadata.generation


async def test_a_pod_clique_change_missed_while_its_informer_was_down_still_reaches_the_dgd() -> None:
    async with running_operator() as op:
        # given an applied DGD whose PodClique informer crashed
        await op.apply(manifest())
        await op.grove_accepts()
        assert op.system.kill(f"{INFORMERS}/podcliques")

        # when Grove creates and readies every PodClique while nobody watches
        await op.grove_realizes()
        assert (await op.dgd()).status.state == "pending"  # type: ignore[union-attr]

        # then, once the informer is back and re-listed, the DGD sees them
        await op.advance(5.0)
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]


async def test_the_periodic_resync_reconciles_every_dgd() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics, resync=300.0) as op:
        # given two settled DGDs
        await op.apply(manifest())
        await op.apply(manifest(name="other"))
        before = (metrics.processed[ACTOR], metrics.processed[f"{DGDS}/{NS}/other"])

        # when one resync period passes with no watch event
        await op.advance(300.0)

        # then each DGD was reconciled once more
        assert (metrics.processed[ACTOR], metrics.processed[f"{DGDS}/{NS}/other"]) == (
            before[0] + 1,
            before[1] + 1,
        )


async def test_nudges_that_arrive_during_a_reconcile_coalesce_into_one_more() -> None:
    metrics = CountingMetrics()
    async with running_operator(metrics=metrics) as op:
        # given a settled DGD
        await op.apply(manifest())
        before = metrics.processed[ACTOR]

        # when fifty nudges arrive at once
        op.nudge(times=50)
        await op.settle()

        # then they were one reconcile
        assert metrics.processed[ACTOR] == before + 1
        assert metrics.coalesced[ACTOR] == 49


async def test_an_operator_restricted_to_two_namespaces_reconciles_there_and_nowhere_else() -> None:
    # given an operator restricted to team-a and team-b, and a DGD in each of three namespaces
    config = OperatorConfig(namespace=NamespaceConfig(restricted=NS))
    async with running_operator(config=config, namespaces=(NS, "team-b")) as op:
        team_c = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-c"}}
        await op.cluster.create(NAMESPACE, team_c)
        for namespace in (NS, "team-b", "team-c"):
            await op.apply(manifest(namespace=namespace))

        # then the two watched ones have their actors and a status, the third is left alone
        for namespace in (NS, "team-b"):
            assert op.system.lookup(f"{DGDS}/{namespace}/demo") is not None
            dgd = await op.cluster.get(DGD.key(namespace, "demo"))
            assert dgd.status is not None and dgd.status.state == "pending", namespace
        assert op.system.lookup(f"{DGDS}/team-c/demo") is None
        ignored = await op.cluster.get(DGD.key("team-c", "demo"))
        assert ignored.status is None and not ignored.metadata.finalizers
        # and the cache holds only what the watched namespaces have
        assert {d.metadata.namespace for d in op.cache.list(DGD)} == {NS, "team-b"}
        assert {s["metadata"]["namespace"] for s in op.cache.list(SERVICE)} == {NS, "team-b"}


class Concurrency:
    """A reconcile observer that keeps the most DGD reconciles seen at once, and the order they ended."""

    def __init__(self) -> None:
        self.active = 0
        self.most = 0
        self.started: list[str] = []
        self.finished: list[str] = []

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        self.active += 1
        self.most = max(self.most, self.active)
        self.started.append(name)

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        self.active -= 1
        self.finished.append(name)


async def stored(names: list[str]) -> Callable[[MemoryCluster], Awaitable[None]]:
    async def before(cluster: MemoryCluster) -> None:
        for name in names:
            await cluster.create(DGD, msgspec.convert(manifest(name=name), DynamoGraphDeployment))

    return before


@pytest.mark.parametrize(("workers", "most"), [(None, 8), (1, 1), (3, 3)])
async def test_workers_bound_the_reconciles_at_once_and_serve_them_in_turn(
    workers: int | None, most: int
) -> None:
    # given eight DGDs stored before the operator starts
    names = [f"graph-{index}" for index in range(8)]
    seen = Concurrency()

    # when the operator starts with that many workers (None: no bound)
    bound = Workers(workers) if workers else None
    async with running_operator(before=await stored(names), reconciles=seen, workers=bound) as op:
        # then every DGD was reconciled, never more of them at once than there are workers
        for name in names:
            assert (await op.cluster.get(DGD.key(NS, name))).status is not None, name
        assert seen.most == most
        if workers == 1:
            # one at a time: each reconcile ends before the next begins
            assert seen.started[: len(names)] == seen.finished[: len(names)]
        assert bound is None or (bound.busy, bound.waiting) == (0, 0)
