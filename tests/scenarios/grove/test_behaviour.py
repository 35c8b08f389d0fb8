"""The Grove pathway on the simulated cluster: scaling, capacity, topology, deletion, conflicts,
refusals, and a silent steady state."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Conflict, NotFound
from dgd.cluster.resources import CLUSTER_TOPOLOGY_BINDING, DGD, PCLQ, PCS, POD, ROLE, SERVICE
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.meta import Condition
from dgd.sim import ClusterTopology, WorldSettings
from tests.scenarios.graphs import ROLLING_UPDATE_NOT_SUPPORTED, set_image, set_replicas
from tests.scenarios.grove.stage import NS, on_stage, upstream

pytestmark = pytest.mark.anyio

AGG = "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml"


def ready_of(dgd: object) -> Condition:
    conditions = dgd.status.conditions  # type: ignore[attr-defined]
    return next(c for c in conditions if c.type == "Ready")


async def test_a_replicas_edit_goes_through_the_scale_subresource_never_through_the_pcs_spec() -> None:
    async with on_stage() as stage:
        # given the aggregated vLLM graph, successful with one worker
        name = await stage.apply(upstream(AGG))
        await stage.until_state(name, "successful")
        pcs_before = await stage.user.get(PCS.key(NS, name))

        # when the user scales the worker to three
        await stage.edit(name, set_replicas("VllmDecodeWorker", 3))
        await stage.until_successful(name, 2)

        # then the PodClique runs three pods, and the PodCliqueSet was not written at all
        clique = await stage.user.get(PCLQ.key(NS, f"{name}-0-vllmdecodeworker"))
        assert clique.spec.replicas == 3
        pcs_after = await stage.user.get(PCS.key(NS, name))
        assert pcs_after.metadata.resource_version == pcs_before.metadata.resource_version
        assert [c.spec.replicas for c in pcs_after.spec.template.cliques] == [1, 1]
        status = (await stage.dgd(name)).status
        assert status is not None and status.components is not None
        assert status.components["VllmDecodeWorker"].ready_replicas == 3


async def test_a_capacity_shortage_is_insufficient_capacity_until_room_arrives() -> None:
    async with on_stage(WorldSettings(capacity=1)) as stage:
        # given a cluster with room for one pod, and a graph of two
        name = await stage.apply(upstream(AGG))

        # when the scheduler has placed what fits
        await stage.until(
            name, lambda d: d.status is not None and ready_of(d).reason == "insufficient_capacity"
        )

        # then the DGD says capacity is short, naming each component and what Grove reports of it
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.state == "pending"
        assert ready_of(dgd).message == (
            "Resources not ready: vllm-agg: Frontend: scheduling condition InsufficientScheduledPods: "
            "Insufficient scheduled pods. expected at least: 1, found: 0; "
            "VllmDecodeWorker: schedule-gated replicas: 1"
        )

        # when the cluster grows, then it becomes successful
        await stage.sim.reconfigure(WorldSettings(capacity=None))
        await stage.until_state(name, "successful")


def topology_is_false(dgd: DynamoGraphDeployment) -> bool:
    """The DGD's second condition, TopologyLevelsAvailable, is False."""
    conditions = (dgd.status.conditions if dgd.status is not None else None) or []
    return len(conditions) == 2 and conditions[1].status == "False"


def binding(topology: str, *levels: str) -> dict[str, object]:
    """The Grove ClusterTopologyBinding admission checks a topology constraint against (supplement
    §4.4 item 12.4). The world's ``topologies`` stand for what Grove's scheduler backend knows, which
    may lack what the binding says: that is what TopologyLevelsAvailable reports."""
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": topology},
        "spec": {"levels": [{"domain": level, "key": f"example.com/{level}"} for level in levels]},
    }


def packed(topology: str, domain: str) -> dict[str, object]:
    document = upstream(AGG)
    document["spec"]["topologyConstraint"] = {"clusterTopologyName": topology, "packDomain": domain}
    return document


async def test_an_unavailable_topology_level_gives_exactly_one_warning_after_the_status_write() -> None:
    settings = WorldSettings(topologies=(ClusterTopology("gpu-fabric", levels=("zone", "host")),))
    async with on_stage(settings) as stage:
        # given a graph packed by rack, on a cluster whose topology has no rack level
        await stage.user.create(CLUSTER_TOPOLOGY_BINDING, binding("gpu-fabric", "zone", "rack", "host"))
        name = await stage.apply(packed("gpu-fabric", "rack"))

        # when Grove has reported on its PodCliqueSet and many reconciles followed
        await stage.until(name, topology_is_false)
        for _ in range(10):
            stage.nudge(name)
            await stage.sim.run_for(1)

        # then TopologyLevelsAvailable is False with Grove's message
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        topology = dgd.status.conditions[1]
        assert (topology.type, topology.status, topology.reason, topology.message) == (
            "TopologyLevelsAvailable",
            "False",
            "TopologyLevelsUnavailable",
            "Unavailable topology domains: [rack]",
        )
        # and exactly one Warning was recorded, after that status was written
        warnings = [e for e in await stage.events(name) if e[0] == "Warning"]
        assert warnings == [
            (
                "Warning",
                "TopologyLevelsUnavailable",
                "Topology constraints no longer enforced: Unavailable topology domains: [rack]",
            )
        ]


async def test_a_missing_cluster_topology_is_reported_as_definition_not_found() -> None:
    async with on_stage() as stage:
        # given a graph naming a binding Grove's scheduler backend has no topology for
        await stage.user.create(CLUSTER_TOPOLOGY_BINDING, binding("nowhere", "rack"))
        name = await stage.apply(packed("nowhere", "rack"))

        # then the condition and its one warning say the definition is missing
        await stage.until(name, topology_is_false)
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        assert dgd.status.conditions[1].reason == "TopologyDefinitionNotFound"
        assert [e[1] for e in await stage.events(name) if e[0] == "Warning"] == ["TopologyDefinitionNotFound"]


async def test_a_status_write_conflict_emits_no_event_and_the_next_reconcile_converges() -> None:
    settings = WorldSettings(topologies=(ClusterTopology("gpu-fabric", levels=("zone",)),))
    async with on_stage(settings) as stage:
        # given a graph packed by rack, and status writes that will conflict twice
        rule = stage.sim.cluster.faults.fail(
            Conflict("the object has been modified"),
            verb="patch",
            resource=DGD,
            subresource="status",
            times=2,
        )
        await stage.user.create(CLUSTER_TOPOLOGY_BINDING, binding("gpu-fabric", "zone", "rack"))
        name = await stage.apply(packed("gpu-fabric", "rack"))

        # when the operator gets past the conflicts
        await stage.until_state(name, "successful")

        # then both conflicts happened, and the topology Warning was recorded once, with the status
        assert rule.fired == 2
        assert [e[1] for e in await stage.events(name) if e[0] == "Warning"] == ["TopologyLevelsUnavailable"]
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.conditions is not None
        assert dgd.status.conditions[1].reason == "TopologyLevelsUnavailable"


async def test_once_successful_a_hundred_nudges_make_no_api_write() -> None:
    async with on_stage() as stage:
        # given a successful graph, and a minute for everything to settle
        name = await stage.apply(upstream(AGG))
        await stage.until_state(name, "successful")
        await stage.sim.run_for(60)
        writes = stage.writes

        # when its actor is nudged a hundred times
        for _ in range(100):
            stage.nudge(name)
            await stage.sim.run_for(1)

        # then the operator made no write at all
        assert stage.writes == writes


async def test_deleting_a_dgd_runs_its_finalizer_and_garbage_collection_removes_every_child() -> None:
    async with on_stage() as stage:
        # given a successful graph with its pods
        name = await stage.apply(upstream(AGG))
        await stage.until_state(name, "successful")
        assert (await stage.user.list(POD, namespace=NS)).items

        # when the user deletes it
        await stage.user.delete(DGD.key(NS, name))
        await stage.sim.run_for(30)

        # then the finalizer was removed, and everything it controlled followed it
        with pytest.raises(NotFound):
            await stage.dgd(name)
        for resource in (PCS, PCLQ, SERVICE, ROLE):
            assert (await stage.user.list(resource, namespace=NS)).items == []
        assert [
            p
            for p in (await stage.user.list(POD, namespace=NS)).items
            if not p["metadata"].get("deletionTimestamp")
        ] == []


async def test_an_unsupported_provider_value_fails_terminally() -> None:
    # On a cluster with the webhooks, defaulting overwrites the annotation on create and validation
    # refuses any later change; without them (upstream's operator installed without webhooks, say)
    # a DGD can arrive with any value, and the operator must fail it in words.
    async with on_stage(admission=False) as stage:
        # given a DGD whose provider annotation names no provider
        document = upstream(AGG)
        document["metadata"]["annotations"] = {"nvidia.com/workload-provider": "lws"}
        name = await stage.apply(document)

        # when time passes
        await stage.until_state(name, "failed")
        writes = stage.writes
        await stage.sim.run_for(600)

        # then it failed once, with the provider named, and nothing was retried or created
        dgd = await stage.dgd(name)
        assert (ready_of(dgd).reason, ready_of(dgd).message) == (
            "unsupported_workload_provider",
            'unsupported workload provider "lws" in annotation nvidia.com/workload-provider: it must be '
            '"grove" or "component"; the provider cannot change after creation, so recreate the DGD to '
            "choose another",
        )
        assert stage.writes == writes
        assert (await stage.user.list(PCS, namespace=NS)).items == []


async def test_a_worker_spec_change_is_rolled_by_grove_with_one_warning_and_a_namespace_cutover() -> None:
    async with on_stage() as stage:
        # given the aggregated graph, successful, its worker in the namespace of its worker hash
        name = await stage.apply(upstream(AGG))
        await stage.until_state(name, "successful")
        before = await stage.dgd(name)
        old_hash = (before.metadata.annotations or {})["nvidia.com/current-worker-hash-v2"]

        # when the worker's image changes
        await stage.edit(name, set_image("VllmDecodeWorker", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.1"))
        await stage.until_successful(
            name,
            2,
            lambda status: (
                status.components is not None
                and not (status.components["VllmDecodeWorker"].runtime_namespace or "").endswith(old_hash)
            ),
        )

        # then a new worker hash was recorded, Grove rolled the worker, and one Warning says rollouts
        # of the worker are Grove's
        after = await stage.dgd(name)
        new_hash = (after.metadata.annotations or {})["nvidia.com/current-worker-hash-v2"]
        assert new_hash != old_hash
        assert after.status is not None and after.status.components is not None
        assert after.status.components["VllmDecodeWorker"].runtime_namespace == f"{NS}-{name}-{new_hash}"
        assert after.status.components["Frontend"].runtime_namespace == f"{NS}-{name}"
        warnings = [e for e in await stage.events(name) if e[0] == "Warning"]
        assert warnings == [ROLLING_UPDATE_NOT_SUPPORTED]
        pcs = await stage.user.get(PCS.key(NS, name))
        worker_clique = next(c for c in pcs.spec.template.cliques if c.name == "vllmdecodeworker")
        assert (worker_clique.labels or {})["nvidia.com/dynamo-worker-hash"] == new_hash
