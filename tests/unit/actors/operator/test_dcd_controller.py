"""The DCD controller on a memory cluster (dcd-controller §2; each test cites its case of §4).

The operator runs with its DCD controller on and no DGD: the tests create DCDs as a DGD (or a user)
would, play kube-controller-manager by writing the Deployment's status, and read what a user would:
the DCD's status and finalizers, its children, and the events about it.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from dgd.actors.machinery.owners import owner_reference
from dgd.cluster.errors import Forbidden
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.memory.faults import Fail
from dgd.cluster.resources import DCD, DEPLOYMENT, PVC, SERVICE
from dgd.domain.gates import Gates, effective_config
from dgd.domain.render.dcd_children import render_dcd_children
from dgd.domain.sync import LAST_APPLIED_GENERATION, LAST_APPLIED_HASH, Create, plan_sync
from dgd.messages.config import (
    CheckpointConfig,
    CheckpointStorage,
    DiscoveryConfig,
    OperatorConfig,
    PVCStorage,
)
from dgd.messages.dcd import DynamoComponentDeployment
from tests.unit.actors.operator.dcd_fixtures import (
    FINALIZER,
    conditions,
    create,
    dcd,
    manifest,
    workload_reports,
)
from tests.unit.actors.operator.harness import GROVE_ONLY, NS, Harness, running_operator

pytestmark = pytest.mark.anyio


async def deployment(op: Harness, name: str = "d") -> dict[str, Any]:
    found: dict[str, Any] = await op.cluster.get(DEPLOYMENT.key(NS, name))
    return found


async def kcm_reports(op: Harness, *, ready: int, name: str = "d") -> None:
    """Play kube-controller-manager on the Deployment ``name``."""
    await workload_reports(op, DEPLOYMENT, name, ready=ready)


async def test_a_new_dcd_gets_its_finalizer_conditions_and_deployment() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a new frontend DCD (§4 cases 1-3)
        await create(op, manifest())

        # then it has the finalizer, a Reconciling event, and both conditions, not ready
        found = await dcd(op)
        assert FINALIZER in (found.metadata.finalizers or [])
        assert conditions(found) == {
            "Available": ("False", "DeploymentNotReady", "Deployment is not ready"),
            "DynamoComponentReady": ("False", "ComponentNotReady", "DynamoComponent is not ready"),
        }
        assert found.status is not None and found.status.observed_generation == found.metadata.generation
        assert found.status.component is not None and found.status.component.component_kind == "Deployment"
        assert found.status.component.component_names == ["d"]
        assert (
            "Normal",
            "Reconciling",
            "Starting to reconcile DynamoComponentDeployment",
        ) in await op.events("d")
        # and its Deployment selects its pods, rolls 25%/25%, is controlled by it, with the bookkeeping
        made = await deployment(op)
        assert made["spec"]["selector"] == {"matchLabels": {"nvidia.com/selector": "d"}}
        assert made["spec"]["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        }
        (owner,) = made["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "DynamoComponentDeployment",
            "d",
            found.metadata.uid,
            True,
        )
        assert made["metadata"]["annotations"][LAST_APPLIED_GENERATION] == "1"
        assert LAST_APPLIED_HASH in made["metadata"]["annotations"]


async def test_a_ready_deployment_makes_the_dcd_ready() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a DCD of 2 replicas whose Deployment kube-controller-manager reports ready (§4 case 4)
        await create(op, manifest(replicas=2))
        await kcm_reports(op, ready=2)

        # then the DCD is Available and ready, with the Deployment's replicas in its status
        found = await dcd(op)
        assert conditions(found) == {
            "Available": ("True", "DeploymentReady", "Deployment is ready"),
            "DynamoComponentReady": ("True", "ComponentReady", "DynamoComponent is ready"),
        }
        assert found.status is not None and found.status.component is not None
        assert (found.status.component.ready_replicas, found.status.component.available_replicas) == (2, 2)


async def test_an_unchanged_dcd_writes_no_child_and_records_no_event() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a DCD reconciled once (§4 case 11)
        await create(op, manifest())
        writes = dict(op.writes)

        # when it is reconciled again with nothing changed
        await kcm_reports(op, ready=1)

        # then no child was written (only the DCD's status), and no event recorded: upstream's "No
        # changes to dynamo deployment d" and "All resources updated!" tell nothing (docs/decisions.md)
        events = await op.events("d")
        assert op.writes["create Deployment"] == writes["create Deployment"]
        assert op.writes.get("patch Deployment", 0) == writes.get("patch Deployment", 0)
        assert [note for _, _, note in events].count("All resources updated!") == 1
        assert "No changes to dynamo deployment d" not in [note for _, _, note in events]


async def test_an_edited_deployment_spec_is_restored() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a DCD's Deployment whose pod template someone edited (§4 case 12)
        await create(op, manifest())
        live = await deployment(op)
        edited = copy.deepcopy(live)
        edited["spec"]["template"]["spec"]["containers"][0]["image"] = "someone/else:1"
        stored = await op.cluster.replace(DEPLOYMENT, edited)
        await op.settle()

        # then the spec is the rendered one again, recorded at the generation the restore made
        restored = await deployment(op)
        assert restored["spec"]["template"] == live["spec"]["template"]
        expected = str(stored["metadata"]["generation"] + 1)
        assert restored["metadata"]["annotations"][LAST_APPLIED_GENERATION] == expected


def service(name: str, owner: DynamoComponentDeployment | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if owner is not None:
        reference = {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoComponentDeployment"}
        reference |= {"name": owner.metadata.name, "uid": owner.metadata.uid, "controller": True}
        metadata["ownerReferences"] = [reference]
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": {"ports": [{"port": 80}]}}


async def test_a_service_no_longer_rendered_is_deleted_only_if_the_dcd_controls_it() -> None:
    config = OperatorConfig(discovery=DiscoveryConfig(backend="etcd"))
    async with running_operator(dcd_controller=True, config=config) as op:
        # given worker DCDs with etcd discovery (no component Service, §4 case 13): a user's Service
        # named like one, and a Service the other controls
        await op.cluster.create(SERVICE, service("mine"))
        await create(op, manifest("mine", type="worker"))
        await create(op, manifest("owned", type="worker"))

        # when the Service the DCD controls appears
        await op.cluster.create(SERVICE, service("owned", await dcd(op, "owned")))
        await op.settle()

        # then that one is deleted, and the user's is kept (departure: upstream deletes by name, §2.13 #4)
        names = {s["metadata"]["name"] for s in (await op.cluster.list(SERVICE, namespace=NS)).items}
        assert "mine" in names and "owned" not in names
        assert (
            "Normal",
            "DeleteService",
            "Deleted Service team-a/owned: not rendered for this component",
        ) in (await op.events("owned"))


async def test_a_checkpointed_dcd_with_failover_is_refused_untouched() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a checkpointed DCD that uses failover (§4 case 28)
        failover = {"checkpoint": {"enabled": True}, "failover": {"enabled": True}}
        await create(op, manifest(experimental=failover))

        # then it is refused in its status, at its generation, and nothing else is written
        found = await dcd(op)
        available = next(c for c in found.status.conditions or () if c.type == "Available")  # type: ignore[union-attr]
        assert (available.status, available.reason, available.message) == (
            "False",
            "InvalidCheckpointConfiguration",
            "Snapshot with active/passive failover is temporarily unsupported",
        )
        assert available.observed_generation == found.metadata.generation
        assert not found.metadata.finalizers
        assert op.writes.get("create Deployment", 0) == 0


async def test_a_deleted_dcd_loses_its_finalizer_and_nothing_else_is_written() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a reconciled DCD (§4 case 32)
        await create(op, manifest())
        before = dict(op.writes)

        # when it is deleted
        await op.cluster.delete(DCD.key(NS, "d"))
        await op.settle()

        # then its finalizer was removed (it is gone), with no status write and no child write
        assert not [d for d in (await op.cluster.list(DCD, namespace=NS)).items if d.metadata.name == "d"]
        assert op.writes.get("patch DynamoComponentDeployment/status", 0) == before.get(
            "patch DynamoComponentDeployment/status", 0
        )
        assert op.writes.get("create Deployment", 0) == before.get("create Deployment", 0)


async def test_a_refused_deployment_create_is_said_on_the_dcd_and_retried() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given the API server refuses to create the Deployment once
        op.operator_client.faults.add(Fail(Forbidden("not now")), verb="create", resource=DEPLOYMENT, times=1)

        # when a DCD is created
        await create(op, manifest())

        # then a Warning and the status name the failed step
        step = "failed to reconcile the resources: failed to create"
        message = f"Failed to reconcile DynamoComponentDeployment: {step}"
        warnings = [note for kind, reason, note in await op.events("d") if reason == "ReconcileError"]
        assert warnings and warnings[0].startswith(message), warnings
        available = conditions(await dcd(op))["Available"]
        assert available[:2] == ("False", "Reconciling") and available[2].startswith(message)

        # and after the backoff the Deployment is created and the status is the workload's
        await op.advance(30)
        assert (await deployment(op))["metadata"]["name"] == "d"
        assert conditions(await dcd(op))["Available"][1] == "DeploymentNotReady"


async def test_a_deployment_left_by_another_controller_is_taken_over_without_a_write() -> None:
    # given a DCD and the Deployment another DCD controller made of it, with its bookkeeping
    async def before(cluster: MemoryCluster) -> None:
        made = await cluster.create(DCD, msgspec.convert(manifest(), DynamoComponentDeployment))
        rendered = render_dcd_children(made, effective_config(OperatorConfig(), GROVE_ONLY), gates=GROVE_ONLY)
        body = next(c.body for c in rendered.children if c.body["kind"] == "Deployment")
        plan = plan_sync(body, None, owner_reference(made))
        assert isinstance(plan, Create)
        await cluster.create(DEPLOYMENT, plan.body)

    # when our DCD controller starts
    async with running_operator(dcd_controller=True, before=before) as op:
        # then it writes no Deployment and reports the one there
        assert op.writes.get("create Deployment", 0) == op.writes.get("patch Deployment", 0) == 0
        found = await dcd(op)
        assert found.status is not None and found.status.component is not None
        assert found.status.component.component_names == ["d"]
        assert "Created Deployment team-a/d" not in [note for _, _, note in await op.events("d")]


def checkpointed(create: bool) -> OperatorConfig:
    pvc = PVCStorage(pvc_name="p", base_path="/c", create=create, size="10Gi")
    return OperatorConfig(checkpoint=CheckpointConfig(storage=CheckpointStorage(type="pvc", pvc=pvc)))


async def test_a_checkpointed_dcd_gets_the_shared_storage_pvc_before_its_deployment() -> None:
    gates = Gates(grove=True, checkpoint=True)
    async with running_operator(dcd_controller=True, config=checkpointed(True), gates=gates) as op:
        # given the checkpoint gate on and a PVC to create (§4 case 30), when a checkpointed DCD comes
        await create(op, manifest(experimental={"checkpoint": {"enabled": True}}))

        # then the PVC exists, owned by no one, and was created before the Deployment
        pvc = await op.cluster.get(PVC.key(NS, "p"))
        assert not pvc["metadata"].get("ownerReferences")
        made = await deployment(op)
        assert int(pvc["metadata"]["resourceVersion"]) < int(made["metadata"]["resourceVersion"])


async def test_a_missing_storage_pvc_that_may_not_be_created_fails_before_the_deployment() -> None:
    gates = Gates(grove=True, checkpoint=True)
    async with running_operator(dcd_controller=True, config=checkpointed(False), gates=gates) as op:
        # given no PVC p and create false (§4 case 43), when a checkpointed DCD comes
        await create(op, manifest(experimental={"checkpoint": {"enabled": True}}))

        # then the reconcile fails naming the storage, and no Deployment is written
        expected = (
            "Failed to reconcile DynamoComponentDeployment: failed to reconcile checkpoint storage: "
            "checkpoint storage PVC team-a/p does not exist and checkpoint.storage.pvc.create is false"
        )
        assert ("Warning", "ReconcileError", expected) in await op.events("d")
        assert conditions(await dcd(op))["Available"] == ("False", "Reconciling", expected)
        assert op.writes.get("create Deployment", 0) == 0
