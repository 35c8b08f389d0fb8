"""A replaced DGD rolls from the worker generation that runs, not from its annotations (issue 32, #13495).

``kubectl replace -f`` (or any update built from the user's manifest) drops the operator's
bookkeeping: the ``nvidia.com/current-worker-hash-v2`` annotation (and the finalizer). When the same
update changes the worker spec, the worker DCDs this DGD controls still name the generation that
serves, and the rollout must start from it: one generation at the end, the old one rolled out within
the surge and unavailability bounds, the DGD's status naming the one that serves.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.scenarios import graphs
from tests.scenarios.component.test_rollout import (
    HASH,
    WORKER,
    agg,
    rolled,
    set_image,
    snapshot,
    started,
    timeline,
)
from tests.scenarios.grove.stage import NS, Edit, Stage, on_stage

pytestmark = pytest.mark.anyio

PROVIDER = "nvidia.com/workload-provider"


def replaced_by(manifest: dict[str, Any], *changes: Edit) -> Edit:
    """What ``kubectl replace -f`` writes: the user's ``manifest`` (with ``changes``) in place of the
    stored DGD, keeping its name, namespace and resourceVersion, and the workload provider (immutable:
    admission refuses a replace without it); the worker-hash annotations and the finalizer are gone."""

    def change(document: dict[str, Any]) -> None:
        fresh = copy.deepcopy(manifest)
        for edit in changes:
            edit(fresh)
        fresh["metadata"]["resourceVersion"] = document["metadata"]["resourceVersion"]
        provider = (document["metadata"].get("annotations") or {}).get(PROVIDER)
        if provider is not None:
            fresh["metadata"].setdefault("annotations", {})[PROVIDER] = provider
        document.clear()
        document.update(fresh)

    return change


async def worker_dcds(stage: Stage) -> list[str]:
    return sorted(d.name for d in (await snapshot(stage, "vllm-agg")).dcds if not d.deleting)


async def test_a_replace_without_the_hash_annotation_rolls_the_serving_generation_out() -> None:
    async with on_stage() as stage:
        # given the aggregated graph with four worker replicas (surge 1, unavailable 1), successful
        manifest = agg(replicas=4)
        name, old_hash = await started(stage, copy.deepcopy(manifest))
        assert name == "vllm-agg"

        # when the user replaces it with a manifest whose worker image changed (no operator annotations)
        async with timeline(stage, name) as seen:
            await stage.edit(name, replaced_by(manifest, set_image("v2")))
            await stage.until(name, rolled(old_hash), timeout=1200)
            await stage.sim.run_for(30)

        # then a rollout ran from the generation that served: Pending/InProgress, then Completed
        after = [s for s in seen if s.generation == 2 and s.observed == 2]
        assert any(s.phase in ("Pending", "InProgress") for s in after)
        # and within the bounds: never more than d + surge = 5 replicas asked for, never fewer than 3 ready
        assert all(sum(d.replicas for d in s.dcds if not d.deleting) <= 5 for s in seen)
        assert all(s.ready_pods >= 3 for s in seen)
        # and successful only once one generation was left
        assert all(len(s.hashes()) == 1 for s in after if s.state == "successful")

        # and at the end exactly one worker generation serves, the new one, named by the status
        dgd = await stage.dgd(name)
        new_hash = (dgd.metadata.annotations or {})[HASH]
        assert new_hash != old_hash
        final = await snapshot(stage, name)
        assert [(d.hash, d.replicas, d.ready) for d in final.dcds] == [(new_hash, 4, 4)]
        assert final.ready_pods == 4 and len(final.pods) == 4
        assert dgd.status is not None and dgd.status.components is not None
        assert dgd.status.components[WORKER].component_names == [f"{name}-{WORKER.lower()}-{new_hash}"]
        # and the finalizer the replace dropped is back
        assert "nvidia.com/finalizer" in (dgd.metadata.finalizers or [])


async def test_every_further_replace_leaves_one_generation() -> None:
    async with on_stage() as stage:
        # given the graph with two worker replicas, successful
        manifest = agg(replicas=2)
        name, _ = await started(stage, copy.deepcopy(manifest))

        # when it is replaced twice, each time with a new worker image and no operator annotations
        for tag in ("v2", "v3"):
            before = ((await stage.dgd(name)).metadata.annotations or {})[HASH]
            await stage.edit(name, replaced_by(manifest, set_image(tag)))
            await stage.until(name, rolled(before), timeout=1200)

        # then one worker DCD of the last generation runs, and the status names only it
        await stage.sim.run_for(30)
        dgd = await stage.dgd(name)
        current = (dgd.metadata.annotations or {})[HASH]
        assert await worker_dcds(stage) == [f"{name}-{WORKER.lower()}-{current}"]
        final = await snapshot(stage, name)
        assert len(final.pods) == 2


async def test_a_replace_that_keeps_the_worker_spec_rolls_nothing() -> None:
    async with on_stage() as stage:
        # given the graph with two worker replicas, successful
        manifest = agg(replicas=2)
        name, worker_hash = await started(stage, copy.deepcopy(manifest))

        # when it is replaced with its own manifest and a replicas change (no operator annotations)
        await stage.edit(name, replaced_by(manifest, graphs.set_replicas(WORKER, 3)))
        await stage.until_successful(
            name,
            2,
            lambda status: status.components is not None and status.components[WORKER].ready_replicas == 3,
        )

        # then the same generation was scaled, the hash recorded again, and no rollout started
        dgd = await stage.dgd(name)
        assert (dgd.metadata.annotations or {})[HASH] == worker_hash
        assert await worker_dcds(stage) == [f"{name}-{WORKER.lower()}-{worker_hash}"]
        assert "RollingUpdateStarted" not in [reason for _, reason, _ in await stage.events(name, NS)]
