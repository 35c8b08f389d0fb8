"""Informers and the router: what reaches a DGD actor, and when."""

from __future__ import annotations

import msgspec
import pytest

from dgd.actors.runtime import CountingMetrics
from dgd.actors.tree import DGDS, INFORMERS
from dgd.cluster.memory import MemoryCluster
from dgd.cluster.resources import DGD
from dgd.messages.dgd import DynamoGraphDeployment
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
