"""The simulated Grove: PodCliqueSet -> PodCliques, scaling groups and pods, with Grove's status."""

from __future__ import annotations

import msgspec
import pytest

from dgd.cluster.resources import PCLQ, PCS, PCSG, POD
from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.messages import grove
from dgd.sim.cluster import GROVE, SimulatedCluster
from dgd.sim.world.settings import ClusterTopology, WorldSettings
from tests.unit.sim.builders import (
    NS,
    as_pcs,
    clique,
    clique_status,
    condition,
    group_status,
    pcs,
    pods,
    rendered,
    scale,
    set_status,
)

pytestmark = pytest.mark.anyio

FAST = WorldSettings(schedule_delay=1, ready_delay=30, termination_delay=5)


async def test_a_podcliqueset_becomes_ready_after_schedule_and_ready_delays() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given the PodCliqueSet the operator renders for the upstream disaggregated vLLM example
        graph = as_pcs(rendered("examples/backends/vllm/deploy/disagg.yaml", pathway="grove")[0])
        await sim.cluster.create(PCS, graph)

        # When 30 seconds pass: pods are bound at 1 s, not ready before 31 s
        await sim.run_for(30)
        early = await clique_status(sim.cluster, "vllm-disagg-0-vllmdecodeworker")

        # Then the clique is scheduled but not ready, and the set not available
        assert (early.replicas, early.scheduled_replicas, early.ready_replicas) == (1, 1, 0)
        assert (await set_status(sim.cluster, "vllm-disagg")).available_replicas == 0

        # When one more second passes, every clique and the set are ready
        await sim.run_for(1)
        for name in ("frontend", "vllmdecodeworker", "vllmprefillworker"):
            status = await clique_status(sim.cluster, f"vllm-disagg-0-{name}")
            assert (status.replicas, status.ready_replicas, status.updated_replicas) == (1, 1, 1)
            assert status.observed_generation == 1
            assert condition(status.conditions, "PodCliqueScheduled") == ("True", "SufficientScheduledPods")
            assert condition(status.conditions, "MinAvailableBreached") == ("False", "SufficientReadyPods")
        final = await set_status(sim.cluster, "vllm-disagg")
        assert (final.available_replicas, final.updated_replicas, final.observed_generation) == (1, 1, 1)
        assert final.current_generation_hash


async def test_children_are_named_per_clique_and_group_owned_by_the_set_and_carry_the_dgd_label() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a set with a standalone clique and a scaling group of a leader and a worker
        groups = [grove.PodCliqueScalingGroupConfig(name="decode", clique_names=["decode-ldr", "decode-wkr"])]
        created = await sim.cluster.create(
            PCS, pcs(cliques=[clique("frontend"), clique("decode-ldr"), clique("decode-wkr")], groups=groups)
        )

        # When Grove has reacted
        await sim.run_for(1)

        # Then a PodClique for the standalone clique and a scaling group are owned by the set
        frontend = await sim.cluster.get(PCLQ.key(NS, "graph-0-frontend"))
        group = await sim.cluster.get(PCSG.key(NS, "graph-0-decode"))
        for child in (frontend, group):
            (owner,) = child.metadata.owner_references or []
            assert (owner.kind, owner.name, owner.uid, owner.controller) == (
                "PodCliqueSet",
                "graph",
                created.metadata.uid,
                True,
            )
            assert (child.metadata.labels or {})[GRAPH_NAME] == "graph"
        # And the group's member cliques are owned by the group
        members = sorted(c.metadata.name or "" for c in (await sim.cluster.list(PCLQ)).items)
        assert members == ["graph-0-decode-0-decode-ldr", "graph-0-decode-0-decode-wkr", "graph-0-frontend"]
        member = await sim.cluster.get(PCLQ.key(NS, "graph-0-decode-0-decode-ldr"))
        assert [(o.kind, o.name) for o in member.metadata.owner_references or []] == [
            ("PodCliqueScalingGroup", "graph-0-decode")
        ]


async def test_capacity_shortage_keeps_scheduled_replicas_low_and_the_rest_schedule_gated() -> None:
    async with SimulatedCluster(msgspec.structs.replace(FAST, capacity=2)) as sim:
        # Given room for 2 pods and a clique of 4
        await sim.cluster.create(PCS, pcs(cliques=[clique("worker", replicas=4)]))

        # When a minute passes
        await sim.run_for(60)

        # Then only 2 pods are scheduled and ready; 2 stay schedule-gated
        status = await clique_status(sim.cluster, "graph-0-worker")
        assert (status.replicas, status.scheduled_replicas, status.schedule_gated_replicas) == (4, 2, 2)
        assert status.ready_replicas == 2
        assert condition(status.conditions, "PodCliqueScheduled") == ("False", "InsufficientScheduledPods")
        # Grove's quirk: not "breached" while pods are merely unscheduled
        assert condition(status.conditions, "MinAvailableBreached") == ("False", "InsufficientScheduledPods")

        # When capacity arrives
        await sim.reconfigure(msgspec.structs.replace(FAST, capacity=None))
        await sim.run_for(31)

        # Then every pod is scheduled and ready
        status = await clique_status(sim.cluster, "graph-0-worker")
        assert (status.scheduled_replicas, status.schedule_gated_replicas, status.ready_replicas) == (4, 0, 4)


async def test_a_scaling_group_short_of_capacity_reports_the_alpha8_polarity_quirk() -> None:
    async with SimulatedCluster(msgspec.structs.replace(FAST, capacity=1)) as sim:
        # Given room for 1 pod and a scaling group whose one replica needs 2
        groups = [grove.PodCliqueScalingGroupConfig(name="decode", clique_names=["decode-ldr", "decode-wkr"])]
        await sim.cluster.create(
            PCS, pcs(cliques=[clique("decode-ldr"), clique("decode-wkr")], groups=groups)
        )

        # When a minute passes
        await sim.run_for(60)

        # Then the group has no scheduled replica and reports MinAvailableBreached=False (dgd-domain §9.6)
        status = await group_status(sim.cluster, "graph-0-decode")
        assert (status.replicas, status.scheduled_replicas, status.available_replicas) == (1, 0, 0)
        assert condition(status.conditions, "MinAvailableBreached") == (
            "False",
            "InsufficientScheduledPodCliqueScalingGroupReplicas",
        )


async def test_scaling_a_podclique_through_its_scale_subresource_flows_through_to_ready_replicas() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready clique of 1
        await sim.cluster.create(PCS, pcs(cliques=[clique("worker")]))
        await sim.run_for(31)

        # When the operator scales it to 3
        await scale(sim.cluster, PCLQ.key(NS, "graph-0-worker"), 3)
        await sim.run_for(1)

        # Then Grove sees the new generation at once and creates the pods; they are ready 31 s later
        status = await clique_status(sim.cluster, "graph-0-worker")
        assert (status.observed_generation, status.replicas, status.ready_replicas) == (2, 3, 1)
        await sim.run_for(31)
        assert (await clique_status(sim.cluster, "graph-0-worker")).ready_replicas == 3

        # When it is scaled down to 1, the surplus pods terminate and go
        await scale(sim.cluster, PCLQ.key(NS, "graph-0-worker"), 1)
        await sim.run_for(1)
        assert (await clique_status(sim.cluster, "graph-0-worker")).replicas == 1
        await sim.run_for(10)
        assert len(await pods(sim.cluster)) == 1


async def test_scaling_a_scaling_group_adds_member_cliques_and_available_replicas() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready scaling group of one replica
        groups = [grove.PodCliqueScalingGroupConfig(name="decode", clique_names=["decode-ldr", "decode-wkr"])]
        await sim.cluster.create(
            PCS, pcs(cliques=[clique("decode-ldr"), clique("decode-wkr")], groups=groups)
        )
        await sim.run_for(31)

        # When the operator scales it to 2 and the new pods start
        await scale(sim.cluster, PCSG.key(NS, "graph-0-decode"), 2)
        await sim.run_for(32)

        # Then the second replica's member cliques exist and the group has 2 available replicas
        names = sorted(c.metadata.name or "" for c in (await sim.cluster.list(PCLQ)).items)
        assert "graph-0-decode-1-decode-ldr" in names and "graph-0-decode-1-decode-wkr" in names
        status = await group_status(sim.cluster, "graph-0-decode")
        assert (status.replicas, status.available_replicas, status.updated_replicas) == (2, 2, 2)
        assert status.observed_generation == 2


async def test_a_template_change_rolls_pods_one_at_a_time_through_updated_replicas() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready clique of 2 pods
        created = await sim.cluster.create(PCS, pcs(cliques=[clique("worker", replicas=2)]))
        await sim.run_for(31)
        first_hash = (await set_status(sim.cluster)).current_generation_hash

        # When the operator changes the image
        changed = msgspec.structs.replace(
            created.spec,
            template=msgspec.structs.replace(
                created.spec.template, cliques=[clique("worker", 2, image="v2")]
            ),
        )
        current = await sim.cluster.get(PCS.key(NS, "graph"))
        await sim.cluster.replace(PCS, msgspec.structs.replace(current, spec=changed))
        await sim.run_for(1)

        # Then one pod is being replaced: 1 of 2 updated, the update in progress at the new set hash
        status = await clique_status(sim.cluster, "graph-0-worker")
        new_hash = (await set_status(sim.cluster)).current_generation_hash
        assert new_hash != first_hash
        assert (status.replicas, status.updated_replicas) == (2, 1)
        assert status.update_progress is not None and status.update_progress.update_ended_at is None
        assert status.current_pod_clique_set_generation_hash == first_hash

        # When enough time passes for both replacements
        await sim.run_for(120)

        # Then both pods are updated and ready, and the update has ended at the new hash
        status = await clique_status(sim.cluster, "graph-0-worker")
        assert (status.replicas, status.updated_replicas, status.ready_replicas) == (2, 2, 2)
        assert status.update_progress is not None and status.update_progress.update_ended_at is not None
        assert status.current_pod_clique_set_generation_hash == new_hash
        assert (await set_status(sim.cluster)).updated_replicas == 1


@pytest.mark.parametrize(
    ("topology_name", "levels", "expected"),
    [
        ("zones", ("zone", "rack"), ("False", "AllClusterTopologyLevelsAvailable")),
        ("zones", ("zone",), ("True", "ClusterTopologyLevelsUnavailable")),
        ("elsewhere", ("zone", "rack"), ("True", "ClusterTopologyNotFound")),
    ],
)
async def test_topology_condition_reports_missing_definitions_and_levels(
    topology_name: str, levels: tuple[str, ...], expected: tuple[str, str]
) -> None:
    settings = msgspec.structs.replace(FAST, topologies=(ClusterTopology("zones", levels),))
    async with SimulatedCluster(settings) as sim:
        # Given a set that packs into racks of a named topology
        constraint = grove.TopologyConstraint(
            topology_name=topology_name, pack=grove.TopologyPack(required="rack")
        )
        await sim.cluster.create(PCS, pcs(topology=constraint))

        # When Grove has reacted
        await sim.run_for(1)

        # Then the set reports the topology as the cluster defines it
        assert condition((await set_status(sim.cluster)).conditions, "TopologyLevelsUnavailable") == expected


async def test_a_set_without_topology_constraints_has_no_topology_condition() -> None:
    async with SimulatedCluster(FAST) as sim:
        await sim.cluster.create(PCS, pcs())
        await sim.run_for(1)
        assert condition((await set_status(sim.cluster)).conditions, "TopologyLevelsUnavailable") is None


async def test_a_killed_grove_controller_rebuilds_from_the_cluster_and_finishes_the_job() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a set just created, and Grove killed before its pods are ready
        await sim.cluster.create(PCS, pcs(cliques=[clique("worker", replicas=2)]))
        await sim.run_for(5)
        assert sim.kill(GROVE)

        # When Grove comes back and time passes
        await sim.run_for(60)

        # Then the clique is ready, with no pod created twice
        status = await clique_status(sim.cluster, "graph-0-worker")
        assert (status.replicas, status.ready_replicas) == (2, 2)
        assert len(await pods(sim.cluster)) == 2
        restarts = {info.path: info.restarts for info in sim.system.tree()}
        assert restarts[GROVE] == 1


async def test_deleting_the_set_releases_grove_finalizer_and_its_children_and_pods_go() -> None:
    async with SimulatedCluster(FAST) as sim:
        # Given a ready set, which Grove holds with its finalizer
        await sim.cluster.create(PCS, pcs(cliques=[clique("worker", replicas=2)]))
        await sim.run_for(31)
        held = await sim.cluster.get(PCS.key(NS, "graph"))
        assert "grove.io/podcliqueset.grove.io" in (held.metadata.finalizers or [])

        # When it is deleted and the pods' termination has run
        await sim.cluster.delete(PCS.key(NS, "graph"))
        await sim.run_for(10)

        # Then nothing of it is left
        assert (await sim.cluster.list(PCS)).items == []
        assert (await sim.cluster.list(PCLQ)).items == []
        assert (await sim.cluster.list(POD)).items == []
