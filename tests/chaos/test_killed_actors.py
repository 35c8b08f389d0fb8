"""Chaos: many DGDs converge while their actors are killed at random, and nothing happens twice.

Fifty DGDs (aggregated, disaggregated and multinode vLLM graphs) are applied at once to the
simulated cluster. Every few seconds of cluster time a random DGD actor or one of its children is
killed; its supervisor restarts it, and the reconcile it was in fails and is retried. Watches on the
API record what a user would see. Once every DGD is successful the kills stop, and the invariants
are checked: no child object was ever created twice, no event was recorded twice, and no DGD's
``observedGeneration`` ever went backwards.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import anyio
import pytest

from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    CONFIG_MAP,
    DGD,
    EVENT,
    PCS,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.sim import WorldSettings
from tests.chaos.helpers import all_successful, kill_at_random
from tests.scenarios.grove.stage import NS, on_stage, upstream

pytestmark = pytest.mark.anyio

SHAPES = (
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml",
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml",
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml",
)
CHILD_KINDS: tuple[Resource[Any], ...] = (PCS, SERVICE, SERVICE_ACCOUNT, ROLE, ROLE_BINDING, CONFIG_MAP)


class Record:
    """What the watches saw: creations per object, events, observedGeneration per DGD."""

    def __init__(self) -> None:
        self.created: Counter[str] = Counter()
        self.events: Counter[tuple[str, str, str, str]] = Counter()
        self.generations: dict[str, list[int]] = {}

    async def watch_children(self, cluster: Cluster, resource: Resource[Any]) -> None:
        async with cluster.watch(resource, namespace=NS) as watch:
            async for event in watch:
                if event.type == "ADDED":
                    obj = event.object
                    name = obj["metadata"]["name"] if isinstance(obj, dict) else obj.metadata.name
                    self.created[f"{resource.kind} {name}"] += 1

    async def watch_events(self, cluster: Cluster) -> None:
        async with cluster.watch(EVENT, namespace=NS) as watch:
            async for event in watch:
                if event.type == "ADDED" and event.object is not None:
                    recorded = event.object
                    regarding = recorded.regarding.uid if recorded.regarding else ""
                    self.events[
                        (regarding or "", recorded.type or "", recorded.reason or "", recorded.note or "")
                    ] += 1

    async def watch_dgds(self, cluster: Cluster) -> None:
        async with cluster.watch(DGD, namespace=NS) as watch:
            async for event in watch:
                dgd = event.object
                if dgd is not None and dgd.status is not None and dgd.status.observed_generation is not None:
                    self.generations.setdefault(dgd.metadata.name or "", []).append(
                        dgd.status.observed_generation
                    )


async def test_fifty_dgds_converge_while_actors_are_killed_and_nothing_happens_twice() -> None:
    rng = random.Random(2026)
    record = Record()
    kills: list[tuple[float, str]] = []
    # Slow pods (two minutes to ready) leave time for many kills.
    async with on_stage(WorldSettings(ready_delay=120.0), seed=11) as stage:
        observer = stage.sim.cluster.client()
        async with anyio.create_task_group() as watches:
            # given watches recording what users would see
            for resource in CHILD_KINDS:
                watches.start_soon(record.watch_children, observer, resource)
            watches.start_soon(record.watch_events, observer)
            watches.start_soon(record.watch_dgds, observer)

            # when fifty DGDs are applied while actors are killed every few seconds
            names = []
            for index in range(50):
                document = upstream(SHAPES[index % len(SHAPES)])
                document["metadata"]["name"] = f"graph-{index:02d}"
                names.append(await stage.apply(document))
            async with anyio.create_task_group() as chaos:
                chaos.start_soon(kill_at_random, stage, rng, 1.5, kills)
                elapsed = await stage.sim.until(all_successful(observer, 50), timeout=3600)
                chaos.cancel_scope.cancel()

            # and the cluster is left alone for a while after the last kill
            await stage.sim.run_for(120)
            still = (await observer.list(DGD, namespace=NS)).items
            watches.cancel_scope.cancel()

    # then every DGD is successful, though many actors were killed on the way
    assert len(kills) >= 50, f"only {len(kills)} kills in {elapsed:.0f}s"
    assert (
        sorted(d.metadata.name or "" for d in still if d.status and d.status.state == "successful") == names
    )
    # and no child was created twice
    assert record.created and max(record.created.values()) == 1, record.created.most_common(3)
    # and no event was recorded twice
    assert record.events and max(record.events.values()) == 1, record.events.most_common(3)
    # and no observedGeneration ever decreased
    for name, seen in record.generations.items():
        assert seen == sorted(seen), (name, seen)
