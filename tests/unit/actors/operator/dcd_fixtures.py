"""DCDs as the DCD controller's tests create and read them."""

from __future__ import annotations

from typing import Any

from dgd.cluster.resources import DCD, Resource
from dgd.messages.dcd import DynamoComponentDeployment
from tests.unit.actors.operator.harness import NS, Harness

MAIN = {"name": "main", "image": "registry.example/dynamo:1.4.0", "command": ["python3"], "args": ["-m", "x"]}
FINALIZER = "nvidia.com/finalizer"


def manifest(name: str = "d", *, type: str = "frontend", **spec: Any) -> dict[str, Any]:
    """A DCD of Dynamo namespace ``team-a-g`` (no owner: a standalone one)."""
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"nvidia.com/dynamo-namespace": "team-a-g"}},
        "spec": {"name": name, "type": type, "podTemplate": {"spec": {"containers": [MAIN]}}, **spec},
    }


async def create(op: Harness, document: dict[str, Any]) -> None:
    await op.cluster.create(DCD.as_raw(), document)
    await op.settle()


async def dcd(op: Harness, name: str = "d") -> DynamoComponentDeployment:
    return await op.cluster.get(DCD.key(NS, name))


def conditions(found: DynamoComponentDeployment) -> dict[str, tuple[str, str, str]]:
    return {
        c.type: (c.status, c.reason or "", c.message or "")
        for c in (found.status.conditions if found.status else None) or ()
    }


async def workload_reports(op: Harness, resource: Resource[Any], name: str, *, ready: int) -> None:
    """Play the workload's controller (kube-controller-manager's, or LeaderWorkerSet's): its generation
    observed, ``ready`` replicas updated, ready and available, ``Available`` accordingly."""
    live = await op.cluster.get(resource.as_raw().key(NS, name))
    status = {
        "observedGeneration": live["metadata"]["generation"],
        "replicas": ready,
        "updatedReplicas": ready,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [{"type": "Available", "status": "True" if ready else "False"}],
    }
    await op.cluster.replace_status(resource.as_raw(), {**live, "status": status})
    await op.settle()
