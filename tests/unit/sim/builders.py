"""Small objects for the world-model tests, and reads of what the world made of them."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.cluster.protocol import Cluster, Scale, ScaleSpec
from dgd.cluster.resources import CHECKPOINT, DCD, PCLQ, PCS, PCSG, POD, ObjectKey
from dgd.domain.metadata_keys import GRAPH_NAME
from dgd.domain.render.offline import prepare, render
from dgd.messages import dcd as dcd_messages
from dgd.messages import grove, grove_children
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DCDSpec, DynamoComponentDeployment
from dgd.messages.meta import ObjectMeta
from tests.upstream import DYNAMO, load_documents

NS = "default"
POD_SPEC: JSONObject = {"containers": [{"name": "main", "image": "nvcr.io/dynamo:1.0"}]}


def clique(
    name: str, replicas: int = 1, *, image: str = "nvcr.io/dynamo:1.0", **extra: Any
) -> grove.PodCliqueTemplateSpec:
    """A clique template with one main container."""
    pod_spec = {"containers": [{"name": "main", "image": image}]}
    spec = grove.PodCliqueSpec(role_name=name, replicas=replicas, pod_spec=pod_spec)
    return grove.PodCliqueTemplateSpec(name=name, spec=spec, labels={GRAPH_NAME: "graph"}, **extra)


def pcs(
    name: str = "graph",
    cliques: list[grove.PodCliqueTemplateSpec] | None = None,
    *,
    groups: list[grove.PodCliqueScalingGroupConfig] | None = None,
    topology: grove.TopologyConstraint | None = None,
) -> grove.PodCliqueSet:
    """A PodCliqueSet as the operator renders one (replicas 1, DGD-name label)."""
    template = grove.PodCliqueSetTemplateSpec(
        cliques=cliques or [clique("frontend")],
        pod_clique_scaling_groups=groups,
        topology_constraint=topology,
    )
    return grove.PodCliqueSet(
        api_version=grove.API_VERSION,
        metadata=ObjectMeta(name=name, namespace=NS, labels={GRAPH_NAME: name}),
        spec=grove.PodCliqueSetSpec(template=template, replicas=1),
    )


def dcd(
    name: str = "graph-worker",
    replicas: int = 1,
    *,
    annotations: dict[str, str] | None = None,
    image: str = "v1",
) -> DynamoComponentDeployment:
    """A DCD of one worker component."""
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }
    return DynamoComponentDeployment(
        api_version=dcd_messages.API_VERSION,
        metadata=ObjectMeta(name=name, namespace=NS, labels={GRAPH_NAME: "graph"}, annotations=annotations),
        spec=DCDSpec(name="worker", type="worker", replicas=replicas, pod_template=template),
    )


def checkpoint(name: str = "checkpoint-abc", *, auto: bool = False) -> JSONObject:
    """A DynamoCheckpoint, as the DGD creates one when ``auto``."""
    annotations = {"nvidia.com/dynamo-auto-checkpoint": "true"} if auto else {}
    return {
        "apiVersion": CHECKPOINT.api_version,
        "kind": "DynamoCheckpoint",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {
            "identity": {"model": "default/graph", "backendFramework": "vllm"},
            "job": {"podTemplateSpec": {"spec": POD_SPEC}},
        },
    }


def rendered(example: str, *, pathway: str) -> list[JSONObject]:
    """What the operator would render for an upstream example DGD on ``pathway``."""
    document = next(
        doc for doc in load_documents(DYNAMO / example) if doc.get("kind") == "DynamoGraphDeployment"
    )
    config = OperatorConfig()
    graph = prepare(document, namespace=NS, config=config, pathway=pathway)  # type: ignore[arg-type]
    return render(graph, config=config)


def as_pcs(obj: JSONObject) -> grove.PodCliqueSet:
    return msgspec.convert(obj, type=grove.PodCliqueSet)


def as_dcd(obj: JSONObject) -> DynamoComponentDeployment:
    return msgspec.convert(obj, type=DynamoComponentDeployment)


# Reads.


async def clique_status(cluster: Cluster, name: str) -> grove_children.PodCliqueStatus:
    found = await cluster.get(PCLQ.key(NS, name))
    assert found.status is not None, f"{name} has no status yet"
    return found.status


async def group_status(cluster: Cluster, name: str) -> grove_children.PodCliqueScalingGroupStatus:
    found = await cluster.get(PCSG.key(NS, name))
    assert found.status is not None, f"{name} has no status yet"
    return found.status


async def set_status(cluster: Cluster, name: str = "graph") -> grove.PodCliqueSetStatus:
    found = await cluster.get(PCS.key(NS, name))
    assert found.status is not None, f"{name} has no status yet"
    return found.status


async def dcd_of(cluster: Cluster, name: str = "graph-worker") -> DynamoComponentDeployment:
    return await cluster.get(DCD.key(NS, name))


async def pods(cluster: Cluster, selector: str | None = None) -> list[JSONObject]:
    return (await cluster.list(POD, namespace=NS, label_selector=selector)).items


def phases(found: list[JSONObject]) -> list[str]:
    return sorted(str((pod.get("status") or {}).get("phase")) for pod in found)


async def scale(cluster: Cluster, key: ObjectKey[Any], replicas: int) -> None:
    """Set replicas through the scale subresource, as the operator's Grove scaler does (§9.4)."""
    current = await cluster.get_scale(key)
    await cluster.replace_scale(
        key, Scale(current.api_version, current.metadata, ScaleSpec(replicas=replicas))
    )


def condition(conditions: Any, type: str) -> tuple[str, str] | None:
    """(status, reason) of a condition, or ``None``."""
    for found in conditions or []:
        if isinstance(found, dict):
            if found.get("type") == type:
                return (found["status"], found.get("reason", ""))
        elif found.type == type:
            return (found.status, found.reason)
    return None
