"""What trace records do to a running simulated cluster: faults hit the operator's client only."""

from __future__ import annotations

import anyio
import pytest

from dgd.cluster.errors import Gone, ServerError
from dgd.cluster.resources import CONFIG_MAP
from dgd.messages.trace import ApiFault, Capacity, Kill, StaleReads, WatchDrop, WatchExpire
from dgd.sim import PODS, SimulatedCluster, WorldSettings
from dgd.sim.steps import apply_step

pytestmark = pytest.mark.anyio

CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}


async def test_a_kill_pattern_kills_every_running_actor_it_matches() -> None:
    async with SimulatedCluster(WorldSettings()) as sim:
        applied = await apply_step(Kill(path="/world/*"), sim, sim.cluster.client())
        assert applied.effect == "killed 4: /world/checkpoints, /world/dcd, /world/grove, /world/pods"
        await sim.run_for(10)
        assert sim.system.lookup(PODS) is not None and sim.system.lookup(PODS).restarts == 1  # type: ignore[union-attr]
        nothing = await apply_step(Kill(path="/operator/**"), sim, sim.cluster.client())
        assert nothing.effect == "no running actor matched /operator/**"


async def test_an_api_fault_fails_the_operators_requests_until_its_end() -> None:
    async with SimulatedCluster(WorldSettings()) as sim:
        user = sim.cluster.client()
        # given a fault on creating config maps, for the operator's client only
        fault = ApiFault(verb="create", resource="configmaps", error="ServerError", until=30.0)
        applied = await apply_step(fault, sim, user)
        assert applied.effect == "1 of create requests on configmaps fail with ServerError until t=30s"

        # then the operator's creates fail, the user's do not
        with pytest.raises(ServerError):
            await sim.cluster.create(CONFIG_MAP, CONFIG)
        await user.create(CONFIG_MAP, CONFIG)

        # and once it ends, the operator's go through again
        assert applied.end is not None and applied.ends_at == 30.0
        applied.end()
        await sim.cluster.create(CONFIG_MAP, {**CONFIG, "metadata": {"name": "d", "namespace": "default"}})


async def test_a_watch_drop_ends_the_operators_open_watches_and_an_expiry_makes_them_gone() -> None:
    async with SimulatedCluster(WorldSettings()) as sim:
        user = sim.cluster.client()
        outcomes: list[str] = []

        async def watch() -> None:
            try:
                async with sim.cluster.watch(CONFIG_MAP) as stream:
                    async for _ in stream:
                        pass
                outcomes.append("ended")
            except Gone:
                outcomes.append("gone")

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            group.start_soon(watch)
            await sim.run_for(1)
            # a watch of another client is not the operator's: it is left alone
            async with user.watch(CONFIG_MAP):
                dropped = await apply_step(WatchDrop(resource="configmaps"), sim, user)
                await sim.run_for(1)
                group.start_soon(watch)
                await sim.run_for(1)
                expired = await apply_step(WatchExpire(), sim, user)
                await sim.run_for(1)

        assert (dropped.effect, expired.effect) == (
            "2 watches of configmaps dropped",
            "1 watches of * expired",
        )
        assert outcomes == ["ended", "ended", "gone"]


async def test_stale_reads_and_capacity_last_as_the_record_says() -> None:
    async with SimulatedCluster(WorldSettings()) as sim:
        stale = await apply_step(
            StaleReads(at=5.0, resource="configmaps", behind=2, duration=20.0), sim, sim.cluster
        )
        assert (stale.effect, stale.ends_at) == ("reads of configmaps 2 writes behind for 20s", 25.0)
        grown = await apply_step(Capacity(pods=3), sim, sim.cluster.client())
        assert grown.effect == "capacity 3 pods" and sim.settings.capacity == 3
