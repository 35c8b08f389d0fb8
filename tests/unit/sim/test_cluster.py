"""The simulated cluster as a whole: one seed, one clock, world and operator in one actor system."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Never

import msgspec
import pytest

from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DCD, PCS
from dgd.runtime import Actor, ChildSpec
from dgd.sim.clock import run
from dgd.sim.cluster import GROVE, SimulatedCluster
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import clique, dcd, pcs, set_status

SETTINGS = WorldSettings(schedule_delay=1, ready_delay=20, termination_delay=5, capacity=3)


async def scenario(seed: int) -> bytes:
    """A few minutes of a set and a DCD competing for capacity, returned as the final cluster state."""
    async with SimulatedCluster(SETTINGS, seed=seed) as sim:
        await sim.cluster.create(PCS, pcs(cliques=[clique("frontend"), clique("worker", replicas=2)]))
        await sim.cluster.create(DCD, dcd(replicas=2))
        await sim.run_for(60)
        await sim.reconfigure(msgspec.structs.replace(SETTINGS, capacity=None))
        await sim.run_for(120)
        return msgspec.json.encode(sim.cluster.snapshot())


def test_the_same_seed_gives_byte_identical_clusters_and_another_seed_other_uids() -> None:
    first, again, other = run(scenario, 7), run(scenario, 7), run(scenario, 8)
    assert first == again
    assert first != other


class Deployer(Actor[Never]):
    """Stands in for the operator: creates a PodCliqueSet through the operator's client."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    async def on_start(self) -> None:
        await self._cluster.create(PCS, pcs())


@pytest.mark.anyio
async def test_operator_actors_run_beside_the_world_in_one_system() -> None:
    def operator(cluster: Cluster) -> Sequence[ChildSpec[Any]]:
        return [ChildSpec("deployer", lambda: Deployer(cluster))]

    async with SimulatedCluster(SETTINGS, operator=operator) as sim:
        await sim.run_for(21)
        paths = [info.path for info in sim.system.tree()]
        assert "/deployer" in paths and "/world/grove" in paths
        assert (await set_status(sim.cluster)).available_replicas == 1


@pytest.mark.anyio
async def test_timestamps_are_cluster_time_from_the_epoch() -> None:
    async with SimulatedCluster(SETTINGS) as sim:
        await sim.run_for(90)
        created = await sim.cluster.create(PCS, pcs())
        assert created.metadata.creation_timestamp == "2026-01-01T00:01:30Z"
        assert round(sim.elapsed(), 3) == 90


@pytest.mark.anyio
async def test_leaving_the_block_leaves_no_task_and_no_open_watch_even_after_a_crash() -> None:
    # Given the tasks before, and a simulation in which Grove crashed once
    before = set(asyncio.all_tasks())
    async with SimulatedCluster(SETTINGS) as sim:
        await sim.cluster.create(PCS, pcs())
        await sim.run_for(10)
        sim.kill(GROVE)
        await sim.run_for(10)
        assert sim.cluster.open_watches == 8  # pods 1, grove 4, dcd 2, checkpoints 1

    # Then nothing of it is left running
    assert sim.cluster.open_watches == 0
    assert set(asyncio.all_tasks()) == before
