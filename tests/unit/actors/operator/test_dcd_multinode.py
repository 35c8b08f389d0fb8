"""The DCD controller's multinode path: a LeaderWorkerSet with the LWS gate on (dcd-controller §2.3.2-2.3.3,
§2.10; each test cites its case of §4)."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.cluster.resources import DCD, DEPLOYMENT, LWS, POD_GROUP
from dgd.domain.gates import Gates
from dgd.messages.dcd import DynamoComponentDeployment
from tests.unit.actors.operator.dcd_fixtures import MAIN, conditions, create, dcd, manifest, workload_reports
from tests.unit.actors.operator.harness import NS, Harness, running_operator

pytestmark = pytest.mark.anyio

LWS_ON = Gates(grove=True, lws=True)
TWO_NODES = {"multinode": {"nodeCount": 2}}


async def lws(op: Harness, name: str = "d-0") -> dict[str, Any]:
    found: dict[str, Any] = await op.cluster.get(LWS.key(NS, name))
    return found


async def lws_reports(op: Harness, *, ready: int) -> None:
    """Play the LeaderWorkerSet controller on ``d-0``."""
    await workload_reports(op, LWS, "d-0", ready=ready)


def owned_by(found: DynamoComponentDeployment) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoComponentDeployment",
         "name": found.metadata.name, "uid": found.metadata.uid, "controller": True}
    ]  # fmt: skip


async def test_a_multinode_dcd_runs_as_a_leaderworkerset_that_makes_it_ready() -> None:
    async with running_operator(dcd_controller=True, gates=LWS_ON) as op:
        # given a two-node worker DCD with the LWS gate on (§4 case 21)
        await create(op, manifest(type="worker", **TWO_NODES))

        # then LeaderWorkerSet d-0 of size 2 is created, and no Deployment
        made = await lws(op)
        assert made["spec"]["leaderWorkerTemplate"]["size"] == 2
        assert op.writes.get("create Deployment", 0) == 0
        assert conditions(await dcd(op))["Available"][1] == "LeaderWorkerSetNotReady"

        # when its groups are ready (§4 case 24)
        await lws_reports(op, ready=1)

        # then the DCD is ready, and its status has no available replicas (an LWS reports none)
        found = await dcd(op)
        assert conditions(found)["Available"] == ("True", "LeaderWorkerSetReady", "LeaderWorkerSet is ready")
        assert found.status is not None and found.status.component is not None
        assert found.status.component.component_kind == "LeaderWorkerSet"
        assert found.status.component.available_replicas is None


async def test_a_leaderworkerset_main_container_without_args_fails_the_reconcile_by_name() -> None:
    async with running_operator(dcd_controller=True, gates=LWS_ON) as op:
        # given a two-node worker whose main has a command and no args (§4 case 22)
        main = {"name": "main", "image": MAIN["image"], "command": ["/bin/run"]}
        document = manifest(type="worker", **TWO_NODES)
        document["spec"]["podTemplate"]["spec"]["containers"] = [main]
        await create(op, document)

        # then the Warning and the status name the LeaderWorkerSet step and upstream's words
        available = conditions(await dcd(op))["Available"]
        prefix = (
            "Failed to reconcile DynamoComponentDeployment: failed to reconcile the resources: "
            "failed to sync the LeaderWorkerSet:"
        )
        assert available[:2] == ("False", "Reconciling")
        assert available[2].startswith(prefix) and available[2].endswith(
            "container Args cannot be empty for LWS pod"
        )
        assert [r for _, r, _ in await op.events("d")].count("ReconcileError") == 1


async def test_legacy_per_replica_objects_go_and_the_adopted_leaderworkerset_loses_its_label() -> None:
    async with running_operator(dcd_controller=True, gates=LWS_ON) as op:
        # given a multinode DCD and, controlled by it, legacy LWS d-0 and d-1 and PodGroups d-0 and d-1,
        # all labelled instance-id (§4 case 23)
        await op.cluster.create(DCD.as_raw(), manifest(type="worker", **TWO_NODES))
        found = await dcd(op)
        for resource, kind, api in ((LWS, "LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"),
                                    (POD_GROUP, "PodGroup", "scheduling.volcano.sh/v1beta1")):  # fmt: skip
            for name in ("d-0", "d-1"):
                metadata = {"name": name, "namespace": NS, "labels": {"instance-id": name[-1]}}
                body = {
                    "apiVersion": api,
                    "kind": kind,
                    "metadata": metadata | {"ownerReferences": owned_by(found)},
                }
                await op.cluster.create(resource, body | {"spec": {}})
        await op.settle()
        await op.advance(1)

        # then d-0 is kept without the label, d-1 and both PodGroups are deleted
        assert "instance-id" not in (await lws(op))["metadata"].get("labels", {})
        names = {
            (o["kind"], o["metadata"]["name"])
            for r in (LWS, POD_GROUP)
            for o in (await op.cluster.list(r, namespace=NS)).items
        }
        assert names == {("LeaderWorkerSet", "d-0")}


async def test_a_multinode_dcd_without_the_lws_gate_runs_as_a_deployment() -> None:
    async with running_operator(dcd_controller=True) as op:
        # given a two-node DCD and the LWS gate off (§4 case 25)
        await create(op, manifest(type="worker", **TWO_NODES))

        # then a Deployment is created, and no LeaderWorkerSet
        assert (await op.cluster.get(DEPLOYMENT.key(NS, "d")))["kind"] == "Deployment"
        assert op.writes.get("create LeaderWorkerSet", 0) == 0
