"""Shared resources step 4 (dgd-domain §7 row 4): the GPU memory service's ResourceClaimTemplates under the
DRA gate, their DeviceClass check, and their deletion when a component stops using GMS."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CHECKPOINT, DEVICE_CLASS, DGD, PCS, RESOURCE_CLAIM_TEMPLATE
from dgd.domain.gates import Gates
from dgd.messages.config import NamespaceConfig, OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.actors.operator.harness import NS, Harness, manifest, running_operator

pytestmark = pytest.mark.anyio

DRA = Gates(grove=True, dra=True)
TEMPLATE = RESOURCE_CLAIM_TEMPLATE.key(NS, "demo-worker-gpu")


async def with_nvidia_class(cluster: MemoryCluster) -> None:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
    }
    await cluster.create(DEVICE_CLASS, {**device_class, "spec": {}})


def gms_manifest() -> dict[str, Any]:
    document = manifest()
    document["spec"]["components"][1]["experimental"] = {"gpuMemoryService": {}}
    return document


async def edit_worker(op: Harness, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the DGD's worker as a user would (a new generation)."""
    document = msgspec.to_builtins(await op.dgd())
    change(document["spec"]["components"][1])
    await op.cluster.replace(DGD, msgspec.convert(document, DynamoGraphDeployment))
    await op.settle()


async def state_and_message(op: Harness) -> tuple[str, str]:
    dgd = await op.dgd()
    assert dgd.status is not None and dgd.status.conditions is not None
    return dgd.status.state or "", dgd.status.conditions[0].message or ""


async def test_a_gms_component_gets_its_claim_template_before_its_pods() -> None:
    async with running_operator(gates=DRA, before=with_nvidia_class) as op:
        # given a DRA cluster with NVIDIA's DeviceClass, and a DGD whose worker uses the GPU memory service
        op.writes.clear()

        # when it is applied
        await op.apply(gms_manifest())

        # then the worker's template exists, owned by the DGD, asking for main's 1 GPU of gpu.nvidia.com
        template = await op.cluster.get(TEMPLATE)
        (owner,) = template["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("DynamoGraphDeployment", "demo", True)
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"] == {
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "ExactCount",
            "count": 1,
        }
        # and the frontend (no GMS) has none
        with pytest.raises(NotFound):
            await op.cluster.get(RESOURCE_CLAIM_TEMPLATE.key(NS, "demo-frontend-gpu"))
        assert op.writes["create ResourceClaimTemplate"] == 1
        assert op.writes["create PodCliqueSet"] == 1

        # and a reconcile that finds it as desired writes nothing to it
        op.writes.clear()
        op.nudge()
        await op.settle()
        assert not [w for w in op.writes if "ResourceClaimTemplate" in w]


async def test_a_missing_device_class_fails_naming_it_until_the_driver_registers_it() -> None:
    async with running_operator(gates=DRA) as op:
        # given a DRA cluster without the GPU DRA driver's DeviceClass
        op.writes.clear()

        # when a GMS DGD is applied
        await op.apply(gms_manifest())

        # then the step fails naming the class and what to do, before the template or any pod is written
        state, message = await state_and_message(op)
        assert state == "failed"
        assert message == (
            'failed to reconcile GMS ResourceClaimTemplates: DeviceClass "gpu.nvidia.com" not found: '
            "ensure the GPU DRA driver is installed and the device class is registered"
        )
        assert "create ResourceClaimTemplate" not in op.writes
        assert "create PodCliqueSet" not in op.writes

        # when the driver registers the class ("not found" is never remembered) and the DGD is reconciled
        await with_nvidia_class(op.cluster)
        op.nudge()
        await op.settle()

        # then the template and the PodCliqueSet are made
        assert (await op.cluster.get(TEMPLATE))["metadata"]["name"] == "demo-worker-gpu"
        assert (await op.cluster.get(PCS.key(NS, "demo"))).metadata.name == "demo"


async def test_a_component_that_stops_using_gms_loses_its_template() -> None:
    async with running_operator(gates=DRA, before=with_nvidia_class) as op:
        # given a GMS DGD with its template
        await op.apply(gms_manifest())
        await op.cluster.get(TEMPLATE)

        # when its worker drops the GPU memory service
        await edit_worker(op, lambda worker: worker.pop("experimental"))

        # then the template it owned is deleted, with an event saying why
        with pytest.raises(NotFound):
            await op.cluster.get(TEMPLATE)
        deleted = [note for _, reason, note in await op.events() if reason == "DeleteResourceClaimTemplate"]
        assert len(deleted) == 1 and "its component no longer uses GMS" in deleted[0]


async def test_a_template_of_that_name_the_dgd_does_not_own_is_left_alone() -> None:
    async with running_operator(gates=DRA, before=with_nvidia_class) as op:
        # given a user's own template named like the worker's, and a DGD whose worker does not use GMS
        mine = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "demo-worker-gpu", "namespace": NS},
            "spec": {"spec": {"devices": {"requests": []}}},
        }
        await op.cluster.create(RESOURCE_CLAIM_TEMPLATE, mine)

        # when the DGD is applied
        await op.apply(manifest())

        # then the user's template stays (the operator deletes only templates it owns)
        assert (await op.cluster.get(TEMPLATE))["metadata"]["name"] == "demo-worker-gpu"
        assert "delete ResourceClaimTemplate" not in op.writes


async def test_a_new_gpu_count_replaces_the_template_whose_spec_cannot_change() -> None:
    async with running_operator(gates=DRA, before=with_nvidia_class) as op:
        # given a GMS DGD whose template asks for 1 GPU
        await op.apply(gms_manifest())
        old_uid = (await op.cluster.get(TEMPLATE))["metadata"]["uid"]
        op.writes.clear()

        # when its worker asks for 2 GPUs
        def two_gpus(worker: dict[str, Any]) -> None:
            worker["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"

        await edit_worker(op, two_gpus)

        # then the template is made anew (deleted, then created; never patched: the API server refuses a
        # changed ResourceClaimTemplate spec) and asks for 2
        template = await op.cluster.get(TEMPLATE)
        assert template["metadata"]["uid"] != old_uid
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
        assert (op.writes["delete ResourceClaimTemplate"], op.writes["create ResourceClaimTemplate"]) == (
            1,
            1,
        )
        assert "patch ResourceClaimTemplate" not in op.writes


async def test_a_deleted_template_is_made_again_through_its_watch() -> None:
    async with running_operator(gates=DRA, before=with_nvidia_class) as op:
        # given a GMS DGD with its template (the DRA gate watches templates; dgd-domain §16)
        await op.apply(gms_manifest())
        old_uid = (await op.cluster.get(TEMPLATE))["metadata"]["uid"]

        # when someone deletes the template
        await op.cluster.delete(TEMPLATE)
        await op.settle()

        # then its deletion wakes the DGD it belonged to, which makes it again
        assert (await op.cluster.get(TEMPLATE))["metadata"]["uid"] != old_uid


async def test_a_checkpointed_gms_worker_gets_a_prepared_job_and_its_own_claim_template() -> None:
    async with running_operator(
        gates=Gates(grove=True, dra=True, checkpoint=True), before=with_nvidia_class
    ) as op:
        # given a DRA cluster with checkpoints on, and a GMS worker with an automatic checkpoint
        document = gms_manifest()
        document["spec"]["components"][1]["experimental"]["checkpoint"] = {"enabled": True}

        # when it is applied
        await op.apply(document)

        # then its checkpoint records the GMS configuration it is taken with (dgd-domain §10.3 step 4)
        (checkpoint,) = (await op.cluster.list(CHECKPOINT, namespace=NS)).items
        identifier = checkpoint["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"]
        assert checkpoint["spec"]["gpuMemoryService"] == {
            "enabled": True,
            "mode": "intraPod",
            "deviceClassName": "gpu.nvidia.com",
        }
        # and its Job pod is prepared: the server sidecar and main on the V1 protocol (upstream
        # EnsureServerSidecar useV1 with a checkpoint), claiming from the checkpoint's own template
        job = checkpoint["spec"]["job"]["podTemplateSpec"]["spec"]
        claim_template = f"checkpoint-{identifier}-worker-gpu"
        assert job["resourceClaims"] == [
            {"name": "intrapod-shared-gpu", "resourceClaimTemplateName": claim_template}
        ]
        use_v1 = {"name": "DYN_GMS_USE_V1", "value": "true"}
        assert use_v1 in job["initContainers"][0]["env"] and use_v1 in job["containers"][0]["env"]
        # and that template exists, controlled by the checkpoint (it lives as long as the checkpoint)
        template = await op.cluster.get(RESOURCE_CLAIM_TEMPLATE.key(NS, claim_template))
        (owner,) = template["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "DynamoCheckpoint",
            checkpoint["metadata"]["name"],
            checkpoint["metadata"]["uid"],
            True,
        )
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


async def test_a_namespace_restricted_operator_does_not_read_the_cluster_scoped_device_class() -> None:
    config = OperatorConfig(namespace=NamespaceConfig(restricted=NS))
    async with running_operator(config=config, gates=DRA) as op:
        # given an operator restricted to one namespace (its Roles grant nothing cluster-scoped), on a
        # cluster whose DeviceClass it could not read
        op.writes.clear()

        # when a GMS DGD is applied there
        await op.apply(gms_manifest())

        # then the template is made without the DeviceClass check (a missing class leaves the pods
        # pending, as DRA scheduling reports, instead of failing the DGD)
        assert (await op.cluster.get(TEMPLATE))["metadata"]["name"] == "demo-worker-gpu"
        assert op.writes["create PodCliqueSet"] == 1
