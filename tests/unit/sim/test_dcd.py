"""The simulated DCD controller: pods labelled by the DCD, status.component, Available, rollouts."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from dgd.cluster.resources import DCD
from dgd.domain.metadata_keys import COMPONENT_TYPE, GRAPH_NAME, SELECTOR
from dgd.messages.dcd import DCDSpec, DynamoComponentDeployment
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.dcd import TEMPLATE_HASH
from dgd.sim.world.settings import WorldSettings
from tests.unit.sim.builders import NS, as_dcd, condition, dcd, dcd_of, phases, pods, rendered

pytestmark = pytest.mark.anyio

FAST = WorldSettings(schedule_delay=1, ready_delay=30, termination_delay=5)


async def ready(sim: SimulatedCluster, document: DynamoComponentDeployment) -> None:
    """Create the DCD ``document`` and let its pods be scheduled and become ready."""
    await sim.cluster.create(DCD, document)
    await sim.run_for(31)


async def change_spec(sim: SimulatedCluster, change: Callable[[DCDSpec], DCDSpec]) -> None:
    """Replace the DCD's spec with ``change`` of it, as the operator would."""
    current = await dcd_of(sim.cluster)
    await sim.cluster.replace(DCD, msgspec.structs.replace(current, spec=change(current.spec)))


async def test_a_dcd_gets_available_true_and_its_component_status_once_its_pods_are_ready() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given the DCDs the operator renders for the upstream aggregated vLLM example
        for obj in rendered("examples/backends/vllm/deploy/agg.yaml", pathway="component"):
            await sim.cluster.create(DCD, as_dcd(obj))
        worker = next(d for d in (await sim.cluster.list(DCD)).items if d.spec.type == "worker")

        # When the first second passes, the controller has observed it but it is not available
        await sim.run_for(1)
        early = await dcd_of(sim.cluster, worker.metadata.name or "")
        assert early.status is not None and early.status.observed_generation == 1
        assert condition(early.status.conditions, "Available") == ("False", "DeploymentNotReady")

        # When its pod is ready
        await sim.run_for(30)

        # Then it is Available, with the component's replicas and runtime namespace
        ready = await dcd_of(sim.cluster, worker.metadata.name or "")
        assert ready.status is not None and ready.status.component is not None
        assert condition(ready.status.conditions, "Available") == ("True", "DeploymentReady")
        assert condition(ready.status.conditions, "DynamoComponentReady") == ("True", "ComponentReady")
        component = ready.status.component
        assert (component.component_kind, component.component_names) == ("Deployment", [worker.metadata.name])
        assert (component.replicas, component.updated_replicas, component.ready_replicas) == (1, 1, 1)
        worker_hash = (worker.metadata.labels or {})["nvidia.com/dynamo-worker-hash"]
        assert component.runtime_namespace == f"default-vllm-agg-{worker_hash}"

        # And its pod carries the labels the Recreate barrier and the pod watch read
        (pod,) = await pods(sim.cluster, f"{SELECTOR}={worker.metadata.name}")
        labels = pod["metadata"]["labels"]
        assert (labels[GRAPH_NAME], labels[COMPONENT_TYPE]) == ("vllm-agg", "worker")


async def test_a_scaled_down_dcd_reports_zero_replicas_while_its_pods_reach_a_terminal_phase() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready DCD of 2
        await ready(sim, dcd(replicas=2))

        # When it is scaled to 0
        await change_spec(sim, lambda spec: msgspec.structs.replace(spec, replicas=0))
        await sim.run_for(1)

        # Then its status says 0 replicas while the pods still terminate (not yet terminal)
        scaled = await dcd_of(sim.cluster)
        assert scaled.status is not None and scaled.status.component is not None
        assert (scaled.status.observed_generation, scaled.status.component.replicas) == (2, 0)
        assert condition(scaled.status.conditions, "Available") == ("True", "DeploymentReady")
        assert phases(await pods(sim.cluster)) == ["Running", "Running"]

        # And after the termination delay they are gone
        await sim.run_for(5)
        assert await pods(sim.cluster) == []


async def test_recreate_strategy_removes_every_old_pod_before_creating_new_ones() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready DCD of 2 with the Recreate strategy
        await ready(sim, dcd(replicas=2, annotations={"nvidia.com/deployment-strategy": "Recreate"}))

        # When its template changes
        await change_spec(sim, lambda _: dcd(replicas=2, image="v2").spec)
        await sim.run_for(4)

        # Then while the old pods terminate, no new pod exists
        during = await pods(sim.cluster)
        assert len(during) == 2 and all(pod["metadata"].get("deletionTimestamp") for pod in during)
        old_hash = during[0]["metadata"]["labels"][TEMPLATE_HASH]

        # And once they are gone, the new ones start and become ready
        await sim.run_for(40)
        final = await dcd_of(sim.cluster)
        assert final.status is not None and final.status.component is not None
        assert (final.status.component.updated_replicas, final.status.component.ready_replicas) == (2, 2)
        after = await pods(sim.cluster)
        assert len(after) == 2 and all(pod["metadata"]["labels"][TEMPLATE_HASH] != old_hash for pod in after)


async def test_rolling_update_keeps_the_dcd_available_while_it_replaces_pods() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready DCD of 4 (maxSurge 1, maxUnavailable 1 at the default 25%)
        await ready(sim, dcd(replicas=4))

        # When its template changes, and every 5 seconds of the rollout
        await change_spec(sim, lambda _: dcd(replicas=4, image="v2").spec)
        ready_counts = []
        for _ in range(30):
            await sim.run_for(5)
            status = (await dcd_of(sim.cluster)).status
            assert status is not None and status.component is not None
            ready_counts.append(status.component.ready_replicas)

        # Then at least 3 pods stayed ready throughout, and the rollout finished
        assert min(count or 0 for count in ready_counts) >= 3
        final = (await dcd_of(sim.cluster)).status
        assert final is not None and final.component is not None
        assert (final.component.updated_replicas, final.component.replicas) == (4, 4)


async def test_deleting_a_dcd_releases_its_finalizer_and_its_pods_go() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready DCD, held by the DCD controller's finalizer
        await ready(sim, dcd())
        assert "nvidia.com/finalizer" in ((await dcd_of(sim.cluster)).metadata.finalizers or [])

        # When it is deleted
        await sim.cluster.delete(DCD.key(NS, "graph-worker"))
        await sim.run_for(10)

        # Then it and its pods are gone
        assert (await sim.cluster.list(DCD)).items == []
        assert await pods(sim.cluster) == []


async def test_the_kv_transfer_topology_source_on_a_dcd_reaches_its_pods() -> None:
    # given a worker DCD carrying the topology source on its metadata, as the operator renders it
    # (dgd-domain §8.3), and a stale one in its pod template
    document = dcd(annotations={"nvidia.com/topology-label-key": "topology.kubernetes.io/zone"})
    template = dict(document.spec.pod_template or {})
    template["metadata"] = {"annotations": {"nvidia.com/topology-label-key": "stale", "keep": "me"}}
    document = msgspec.structs.replace(
        document, spec=msgspec.structs.replace(document.spec, pod_template=template)
    )

    # when the simulated DCD controller runs its pods
    async with SimulatedCluster(FAST) as sim:
        await ready(sim, document)
        (pod,) = await pods(sim.cluster)

    # then the pod has the DCD's source (upstream GetDCDKubeAnnotations), and its other annotations
    annotations = pod["metadata"]["annotations"]
    assert annotations["nvidia.com/topology-label-key"] == "topology.kubernetes.io/zone"
    assert annotations["keep"] == "me"


async def test_a_mount_that_names_no_volume_gets_the_claim_of_its_name_in_the_pod() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given the worker DCD of the upstream gaie recipe, whose v1alpha1 volumeMounts name the claim
        # model-cache and whose pod template declares no volume for it
        objects = rendered("recipes/qwen3-0.6b/vllm/agg/gaie/deploy.yaml", pathway="component")
        worker = next(
            as_dcd(o)
            for o in objects
            if o["kind"] == "DynamoComponentDeployment" and o["spec"]["type"] == "worker"
        )
        assert "volumes" not in (worker.spec.pod_template or {})["spec"]

        # When the controller makes its pods
        await sim.cluster.create(DCD, worker)
        await sim.run_for(1)

        # Then each pod mounts the claim (a real API server refuses a mount without its volume)
        made = await pods(sim.cluster, f"{SELECTOR}={worker.metadata.name}")
        assert made
        for pod in made:
            assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache"}} in pod[
                "spec"
            ]["volumes"]
