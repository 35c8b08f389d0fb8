"""The DGD actor and the Grove program on a bare memory cluster, with the test playing Grove."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Conflict
from dgd.cluster.resources import DGD, PCLQ
from dgd.messages.dgd import ComponentReplicaStatus, DGDStatus
from dgd.messages.meta import Condition
from tests.conditions import condition, ready_condition
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio

T0 = "2026-01-01T00:00:00Z"

CREATED = [
    ("Normal", "CreateServiceAccount", "Created ServiceAccount team-a/planner-serviceaccount"),
    ("Normal", "CreateRoleBinding", "Created RoleBinding team-a/planner-serviceaccount-binding"),
    ("Normal", "CreateServiceAccount", "Created ServiceAccount team-a/demo-k8s-service-discovery"),
    ("Normal", "CreateRole", "Created Role team-a/demo-k8s-service-discovery-role"),
    ("Normal", "CreateRoleBinding", "Created RoleBinding team-a/demo-k8s-service-discovery-binding"),
    ("Normal", "CreatePodCliqueSet", "Created PodCliqueSet team-a/demo"),
    ("Normal", "CreateService", "Created Service team-a/demo-frontend"),
    ("Normal", "CreateService", "Created Service team-a/demo-worker"),
]


def ready(message: str = "All resources are ready", at: str = T0) -> Condition:
    return ready_condition("True", "all_resources_are_ready", message, at=at)


def clique_status(
    component: str, replicas: int = 0, namespace: str | None = None, *, running: bool = False
) -> ComponentReplicaStatus:
    """The status of a component's PodClique: ``replicas`` asked and updated, all ready and scheduled
    once ``running``."""
    return ComponentReplicaStatus(
        component_kind="PodClique",
        replicas=replicas,
        updated_replicas=replicas,
        component_names=[f"demo-0-{component.lower()}"],
        runtime_namespace=namespace,
        ready_replicas=replicas if running else None,
        scheduled_replicas=replicas if running else None,
    )


async def test_a_new_dgd_is_pending_until_grove_reports_every_child_ready() -> None:
    async with running_operator() as op:
        # given a DGD with a frontend and a two-replica worker
        # when it is applied and Grove has not created anything yet
        await op.apply(manifest())

        # then the children exist, the DGD waits for them, and each mutation has its event, in order
        dgd = await op.dgd()
        assert dgd.metadata.annotations == {
            "nvidia.com/current-worker-hash-v2": dgd.metadata.annotations[
                "nvidia.com/current-worker-hash-v2"
            ],
            "nvidia.com/workload-provider": "grove",
        }
        assert dgd.metadata.finalizers == ["nvidia.com/finalizer"]
        assert dgd.status == DGDStatus(
            state="pending",
            observed_generation=1,
            conditions=[
                ready_condition(
                    "False",
                    "some_resources_are_not_ready",
                    "Resources not ready: demo: Frontend: resource not found; Worker: resource not found",
                    at=T0,
                )
            ],
            components={
                "Frontend": clique_status("Frontend", namespace="team-a-demo"),
                "Worker": clique_status("Worker"),
            },
        )
        assert await op.events() == CREATED
        assert op.writes["patch DynamoGraphDeployment/status"] == 1


async def test_a_dgd_is_successful_once_grove_accepted_and_ran_every_child() -> None:
    async with running_operator() as op:
        # given an applied DGD whose PodCliqueSet Grove accepted as revision rev-1
        await op.apply(manifest())
        await op.grove_accepts(revision="rev-1")

        # when Grove reports every PodClique ready at that revision
        await op.grove_realizes()

        # then the DGD is successful, and its workers moved to the hash-suffixed runtime namespace
        dgd = await op.dgd()
        hashed = dgd.metadata.annotations["nvidia.com/current-worker-hash-v2"]  # type: ignore[index]
        assert dgd.status == DGDStatus(
            state="successful",
            observed_generation=1,
            conditions=[ready()],
            components={
                "Frontend": clique_status("Frontend", 1, "team-a-demo", running=True),
                "Worker": clique_status("Worker", 2, f"team-a-demo-{hashed}", running=True),
            },
        )
        # and no event was added by the status transitions (none is catalogued for Ready)
        assert await op.events() == CREATED
        assert op.writes["patch DynamoGraphDeployment/status"] == 2


async def test_a_successful_dgd_makes_no_api_write_for_a_hundred_nudges() -> None:
    async with running_operator() as op:
        # given a successful DGD
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]
        writes_before = sum(op.writes.values())
        version_before = op.cluster.resource_version

        # when its actor is nudged a hundred times, one reconcile after another
        for _ in range(100):
            op.nudge()
            await op.settle()

        # then no API write was made at all
        assert sum(op.writes.values()) == writes_before
        assert op.cluster.resource_version == version_before


async def test_the_lasttransitiontime_of_ready_moves_only_when_its_status_flips() -> None:
    async with running_operator() as op:
        # given a DGD that became ready at T0
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()

        # when time passes and a pod stops being ready, then comes back
        op.now += 60
        await op.grove_realizes(ready=False)
        not_ready = (await op.dgd()).status
        op.now += 60
        await op.grove_realizes(ready=True)
        again = (await op.dgd()).status

        # then Ready flipped twice, each time with the time of the flip
        assert not_ready is not None and not_ready.conditions is not None
        assert not_ready.conditions[0].status == "False"
        assert not_ready.conditions[0].reason == "pods_not_ready"
        assert not_ready.conditions[0].message == (
            "Resources not ready: demo: Frontend: scheduled but ready=0/1; Worker: scheduled but ready=0/2"
        )
        assert not_ready.conditions[0].last_transition_time == "2026-01-01T00:01:00Z"
        assert again is not None and again.conditions == [ready(at="2026-01-01T00:02:00Z")]


async def test_a_replicas_edit_goes_through_the_scale_subresource_and_leaves_the_pcs_spec_alone() -> None:
    async with running_operator() as op:
        # given a successful DGD whose worker runs 2 replicas
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()
        pcs_before = await op.pcs()
        op.writes.clear()

        # when the user scales the worker to 5
        await op.scale("Worker", 5)

        # then the PodClique was scaled through its scale subresource, and the PodCliqueSet not written
        clique = await op.cluster.get(PCLQ.key(NS, "demo-0-worker"))
        assert clique.spec.replicas == 5
        assert op.writes["update PodClique/scale"] == 1
        assert not any(kind.endswith("PodCliqueSet") for kind in op.writes)
        pcs_after = await op.pcs()
        assert pcs_after.metadata.resource_version == pcs_before.metadata.resource_version
        # and the DGD, at its new generation, waits for Grove to process the scaled PodClique
        status = (await op.dgd()).status
        assert status is not None and status.observed_generation == 2
        assert status.conditions is not None and status.conditions[0].reason == "some_resources_are_not_ready"
        assert status.conditions[0].message == (
            "Resources not ready: demo: Worker: spec not yet processed: generation=2, observedGeneration=1"
        )


def scheduling_shortfall() -> Condition:
    return condition(
        "PodCliqueScheduled",
        "False",
        "InsufficientScheduledPods",
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu",
        at=T0,
    )


async def test_a_capacity_shortage_is_reported_as_insufficient_capacity() -> None:
    async with running_operator() as op:
        # given an applied DGD
        await op.apply(manifest())
        await op.grove_accepts()

        # when Grove cannot schedule any pod for lack of GPUs
        await op.grove_realizes(ready=False, scheduled=0, conditions=[scheduling_shortfall()])

        # then the DGD is pending with the capacity classification and Grove's words
        status = (await op.dgd()).status
        assert status is not None and status.state == "pending"
        assert status.conditions == [
            ready_condition(
                "False",
                "insufficient_capacity",
                "Resources not ready: demo: Frontend: scheduling condition "
                "InsufficientScheduledPods: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu; "
                "Worker: scheduling condition InsufficientScheduledPods: 0/2 nodes are available: "
                "2 Insufficient nvidia.com/gpu",
                at=T0,
            )
        ]


def topology_manifest() -> dict[str, object]:
    document = manifest()
    document["spec"]["topologyConstraint"] = {"clusterTopologyName": "gpu-fabric", "packDomain": "rack"}
    return document


def levels_unavailable() -> Condition:
    return condition(
        "TopologyLevelsUnavailable",
        "True",
        "TopologyLevelsUnavailable",
        "topology level rack is not defined in ClusterTopology gpu-fabric",
        at=T0,
    )


async def test_unavailable_topology_sets_the_condition_false_with_one_warning_after_the_status_write() -> (
    None
):
    async with running_operator() as op:
        # given a DGD packed by rack, pending on a topology condition Grove has not reported yet
        await op.apply(topology_manifest())
        pending = (await op.dgd()).status
        assert pending is not None and pending.conditions is not None
        assert pending.conditions[1] == condition(
            "TopologyLevelsAvailable",
            "Unknown",
            "TopologyConditionPending",
            "Waiting for topology condition from the scheduling framework",
            at=T0,
            generation=1,
        )

        # when Grove reports the rack level missing, and then keeps reporting it
        await op.grove_accepts(conditions=[levels_unavailable()])
        op.nudge(times=5)
        await op.settle()

        # then the condition is False with Grove's message, and exactly one Warning was recorded,
        # after the status that carries it was written
        dgd = await op.dgd()
        assert dgd.status is not None and dgd.status.conditions is not None
        assert dgd.status.conditions[1] == condition(
            "TopologyLevelsAvailable",
            "False",
            "TopologyLevelsUnavailable",
            "topology level rack is not defined in ClusterTopology gpu-fabric",
            at=T0,
            generation=1,
        )
        warnings = [e for e in await op.events() if e[0] == "Warning"]
        assert warnings == [
            (
                "Warning",
                "TopologyLevelsUnavailable",
                "Topology constraints no longer enforced: topology level rack is not defined in "
                "ClusterTopology "
                "gpu-fabric",
            )
        ]


async def test_a_conflicting_status_write_emits_no_event_and_the_next_reconcile_converges() -> None:
    async with running_operator() as op:
        # given a DGD packed by rack, and a status write that will be refused once with 409 Conflict
        await op.apply(topology_manifest())
        rule = op.operator_client.faults.fail(
            Conflict("the object has been modified"),
            verb="patch",
            resource=DGD,
            subresource="status",
            times=1,
        )

        # when Grove reports the rack level missing
        await op.grove_accepts(conditions=[levels_unavailable()])

        # then the refused write dropped the queued Warning
        assert rule.fired == 1
        assert [e for e in await op.events() if e[0] == "Warning"] == []
        status = (await op.dgd()).status
        assert status is not None and status.conditions is not None
        assert status.conditions[1].status == "Unknown"

        # when the retry comes, after its backoff
        await op.advance(1.0)

        # then the status converged and the Warning was recorded once
        status = (await op.dgd()).status
        assert status is not None and status.conditions is not None
        assert (status.conditions[1].status, status.conditions[1].reason) == (
            "False",
            "TopologyLevelsUnavailable",
        )
        assert [e[1] for e in await op.events() if e[0] == "Warning"] == ["TopologyLevelsUnavailable"]


async def test_a_dgd_that_fails_validation_gets_every_message_and_nothing_else_is_written() -> None:
    async with running_operator() as op:
        # given a DGD no admission webhook checked: two components named alike, a frontend sidecar missing
        document = manifest()
        document["spec"]["components"][1]["name"] = "frontend"
        document["spec"]["components"][0]["frontendSidecar"] = "proxy"
        op.writes.clear()

        # when it is applied
        await op.apply(document)

        # then it is failed with reason invalid_spec and every validation message, and nothing else was
        # written
        dgd = await op.dgd()
        assert dgd.status is not None and dgd.status.state == "failed"
        assert dgd.status.conditions is not None
        ready_condition = dgd.status.conditions[0]
        assert (ready_condition.status, ready_condition.reason) == ("False", "invalid_spec")
        assert ready_condition.message.split("; ") == [
            'spec.components[0].frontendSidecar: "proxy" must match a podTemplate.spec.containers '
            "name (main)",
            'spec.components[1].name: "frontend" duplicates spec.components[0].name "Frontend": '
            "component names "
            "must be unique case-insensitively",
        ]
        assert dict(op.writes) == {"patch DynamoGraphDeployment/status": 1}
        assert dgd.metadata.finalizers is None
        assert await op.events() == []
