"""The operator's actor tree over the kube adapter: informers, writes, status and events over real HTTP.

The world (simulated Grove, pods) runs on the memory server directly; the operator reaches the same
server only through the kube adapter and the HTTP facade, as the daemon reaches a real API server.
"""

from __future__ import annotations

import random
from pathlib import Path

import anyio
import pytest
import yaml
from kubernetes_asyncio.client import ApiClient, Configuration

from dgd.actors.tree import operator_children
from dgd.cluster.errors import NotFound
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import DGD, EVENT, PCS
from dgd.domain.gates import effective_config, resolve_gates, served_apis
from dgd.messages.config import OperatorConfig
from dgd.runtime import ActorSystem, LoopClock
from dgd.sim import SimulatedCluster, WorldSettings
from dgd.sim.apiserver.server import Facade, serve
from dgd.sim.key_pool import KeyPool

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agg.yaml"
FAST = WorldSettings(schedule_delay=0.05, ready_delay=0.2, termination_delay=0.1)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_operator_over_the_kube_adapter_takes_a_dgd_to_successful_and_deletes_it() -> None:
    # given the simulated world, served over HTTP, and the operator connected through the kube adapter
    async with SimulatedCluster(FAST, seed=3) as sim, serve(Facade(sim.cluster)) as url:
        api = ApiClient(Configuration(host=url))
        async with KubeCluster(api, rng=random.Random(5)) as kube:
            config = OperatorConfig()
            gates = resolve_gates(config, served_apis(await kube.group_versions()))
            children = operator_children(
                kube, config=effective_config(config, gates), wall=sim.now, keys=KeyPool(random.Random(0))
            )
            async with ActorSystem(children, clock=LoopClock(), random=random.Random(1)):
                # when the example DGD is created through the adapter
                document = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
                document["metadata"]["namespace"] = "default"
                await kube.create(DGD.as_raw(), document)
                key = DGD.key("default", "demo-agg")
                with anyio.fail_after(30):
                    while (state := (await kube.get(key)).status) is None or state.state != "successful":
                        await anyio.sleep(0.05)
                pcs = await kube.get(PCS.key("default", "demo-agg"))
                events = await kube.list(EVENT, namespace="default")

                # and then deleted
                await kube.delete(key)
                with anyio.fail_after(30):
                    while True:
                        try:
                            await kube.get(key)
                        except NotFound:
                            break
                        await anyio.sleep(0.05)

    # then it was rendered, reported on, and its finalizer let go
    assert pcs.metadata.owner_references is not None
    assert pcs.metadata.owner_references[0].name == "demo-agg"
    assert "CreatePodCliqueSet" in {event.reason for event in events.items}
