"""Ten minutes of a simulated cluster, driven the way the operator will drive it.

Two upstream example graphs share a cluster too small for both at first: the multinode
disaggregated vLLM graph on Grove (a PodCliqueSet with a frontend clique and two scaling groups) and
the aggregated vLLM graph on the Component pathway (two DCDs), plus a DGD-managed checkpoint. Then,
minute by minute: capacity arrives; the decode scaling group is scaled out through its scale
subresource; the frontend's image changes (a rolling update); Grove and the DCD controller are
killed; the Component worker is scaled to zero and back. The world must end every one of these
settled, which :func:`check` asserts. Used by ``tests/scenarios`` and by ``bench/sim.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.cluster.resources import CHECKPOINT, DCD, PCS, PCSG, POD
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.sim.cluster import DCDS, GROVE, SimulatedCluster
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, as_dcd, as_pcs, checkpoint, condition, rendered, scale

SETTINGS = WorldSettings(
    schedule_delay=2, ready_delay=45, termination_delay=10, checkpoint_delay=240, capacity=6
)
MINUTE = 60.0


class Outcome(msgspec.Struct, frozen=True):
    """What the ten minutes left behind, and how much API traffic they took."""

    elapsed: float
    resource_version: int
    pods: int
    snapshot: bytes


async def ten_minutes(seed: int = 0, *, settings: WorldSettings = SETTINGS) -> Outcome:
    """Run the scenario (see the module) on the running loop; virtual time makes it fast."""
    async with SimulatedCluster(settings, seed=seed) as sim:
        cluster = sim.cluster
        graph = as_pcs(rendered("examples/backends/vllm/deploy/disagg-multinode.yaml", pathway="grove")[0])
        dcds = [
            as_dcd(obj) for obj in rendered("examples/backends/vllm/deploy/agg.yaml", pathway="component")
        ]
        worker = next(d for d in dcds if d.spec.type == "worker")

        # Minute 0: both graphs and a checkpoint arrive; 9 pods want room for 6.
        await cluster.create(PCS, graph)
        for component in dcds:
            await cluster.create(DCD, component)
        await cluster.create(CHECKPOINT, checkpoint(auto=True))
        await sim.run_for(3 * MINUTE)

        # Minute 3: the cluster grows.
        await sim.reconfigure(msgspec.structs.replace(settings, capacity=None))
        await sim.run_for(MINUTE)

        # Minute 4: the decode group is scaled out, as the operator's Grove scaler does.
        await scale(cluster, PCSG.key(NS, "vllm-disagg-0-decode"), 2)
        await sim.run_for(MINUTE)

        # Minute 5: the frontend's image changes: a rolling update of its clique.
        current = await cluster.get(PCS.key(NS, "vllm-disagg"))
        await cluster.replace(PCS, _new_frontend_image(current))
        await sim.run_for(MINUTE)

        # Minute 6: Grove and the DCD controller crash; their supervisors restart them.
        sim.kill(GROVE)
        sim.kill(DCDS)
        await sim.run_for(MINUTE)

        # Minute 7: the Component worker is scaled to zero, and at minute 8 back to one.
        await _set_replicas(cluster, worker, 0)
        await sim.run_for(MINUTE)
        await _set_replicas(cluster, worker, 1)
        await sim.run_for(2 * MINUTE)

        return Outcome(
            elapsed=sim.elapsed(),
            resource_version=int(cluster.resource_version),
            pods=len((await cluster.list(POD)).items),
            snapshot=msgspec.json.encode(cluster.snapshot()),
        )


async def check(outcome: Outcome) -> None:
    """Assert the world settled: every workload ready at its final size, the checkpoint ready."""
    objects = msgspec.json.decode(outcome.snapshot)
    by_kind: dict[str, list[Any]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    assert round(outcome.elapsed) == 600
    (pcs,) = by_kind["PodCliqueSet"]
    assert pcs["status"]["availableReplicas"] == 1 and pcs["status"]["updatedReplicas"] == 1
    groups = {g["metadata"]["name"]: g["status"] for g in by_kind["PodCliqueScalingGroup"]}
    assert groups["vllm-disagg-0-decode"]["availableReplicas"] == 2
    assert groups["vllm-disagg-0-prefill"]["availableReplicas"] == 1
    for clique in by_kind["PodClique"]:
        status = clique["status"]
        assert status["readyReplicas"] == status["updatedReplicas"] == clique["spec"]["replicas"], clique[
            "metadata"
        ]
    for component in by_kind["DynamoComponentDeployment"]:
        assert condition(component["status"]["conditions"], "Available") == ("True", "DeploymentReady")
        assert component["status"]["component"]["readyReplicas"] == 1
    (ckpt,) = by_kind["DynamoCheckpoint"]
    assert ckpt["status"]["phase"] == "Ready"
    # 1 frontend + 2 decode replicas x 2 + 1 prefill x 2 on Grove, 2 DCD pods
    assert outcome.pods == 9
    assert all(pod["status"]["phase"] == "Running" for pod in by_kind["Pod"])


def _new_frontend_image(current: PodCliqueSet) -> PodCliqueSet:
    cliques = []
    for clique in current.spec.template.cliques:
        if clique.name == "frontend":
            pod_spec = dict(clique.spec.pod_spec)
            containers = [
                dict(c) | {"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:next"}
                for c in pod_spec["containers"]
            ]
            spec = msgspec.structs.replace(clique.spec, pod_spec=pod_spec | {"containers": containers})
            clique = msgspec.structs.replace(clique, spec=spec)
        cliques.append(clique)
    template = msgspec.structs.replace(current.spec.template, cliques=cliques)
    return msgspec.structs.replace(current, spec=msgspec.structs.replace(current.spec, template=template))


async def _set_replicas(cluster: Any, component: DynamoComponentDeployment, replicas: int) -> None:
    current = await cluster.get(DCD.key(NS, component.metadata.name or ""))
    spec = msgspec.structs.replace(current.spec, replicas=replicas)
    await cluster.replace(DCD, msgspec.structs.replace(current, spec=spec))
