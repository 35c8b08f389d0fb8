"""Small objects for the conformance tests: one builder per kind the suite writes."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.messages import dgd as dgd_messages
from dgd.messages import dgdsa as dgdsa_messages
from dgd.messages.base import JSONObject
from dgd.messages.dgd import DGDSpec, DGDStatus, DynamoGraphDeployment
from dgd.messages.dgdsa import DGDRef, DGDSASpec, DGDSAStatus, DynamoGraphDeploymentScalingAdapter
from dgd.messages.meta import Event, ObjectMeta, ObjectReference

NS = "team-a"


def dgd(
    name: str = "graph",
    *,
    namespace: str = NS,
    labels: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    backend: str | None = None,
    status: DGDStatus | None = None,
) -> DynamoGraphDeployment:
    """A DGD with no components (the smallest valid one)."""
    return DynamoGraphDeployment(
        api_version=dgd_messages.API_VERSION,
        metadata=ObjectMeta(name=name, namespace=namespace, labels=labels, finalizers=finalizers),
        spec=DGDSpec(backend_framework=backend),  # type: ignore[arg-type]
        status=status,
    )


def adapter(
    name: str = "graph-worker", *, namespace: str = NS, replicas: int = 1, status_replicas: int | None = None
) -> DynamoGraphDeploymentScalingAdapter:
    """A DGDSA for component ``worker`` of DGD ``graph``."""
    status = None
    if status_replicas is not None:
        status = DGDSAStatus(replicas=status_replicas, selector="app=worker")
    return DynamoGraphDeploymentScalingAdapter(
        api_version=dgdsa_messages.API_VERSION,
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=DGDSASpec(replicas=replicas, dgd_ref=DGDRef(name="graph", component_name="worker")),
        status=status,
    )


def config_map(
    name: str = "settings",
    *,
    namespace: str = NS,
    data: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owners: list[JSONObject] | None = None,
    finalizers: list[str] | None = None,
) -> JSONObject:
    """A raw ConfigMap (a kind with no spec and no status)."""
    metadata: JSONObject = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    if owners is not None:
        metadata["ownerReferences"] = owners
    if finalizers is not None:
        metadata["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {"key": "value"}}


def deployment(name: str = "web", *, namespace: str = NS, replicas: int = 2) -> JSONObject:
    """A raw apps/v1 Deployment (spec, status subresource, scale subresource)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {
                "matchLabels": {"app": name},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "edge"]}],
            },
            "template": {
                "metadata": {"labels": {"app": name, "tier": "web"}},
                "spec": {"containers": [{"name": "main", "image": "registry.example/web:1"}]},
            },
        },
        "status": {"replicas": 1},
    }


def owner(obj: Any, *, block: bool = True, controller: bool = True) -> JSONObject:
    """An owner reference to ``obj`` (a Struct or raw JSON)."""
    if isinstance(obj, dict):
        metadata = obj["metadata"]
        api_version, kind, name, uid = obj["apiVersion"], obj["kind"], metadata["name"], metadata["uid"]
    else:
        api_version, kind = obj.api_version, type(obj).__struct_config__.tag
        name, uid = obj.metadata.name, obj.metadata.uid
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": controller,
        "blockOwnerDeletion": block,
    }


def event(
    regarding: DynamoGraphDeployment, reason: str = "Scaled", note: str = "scaled worker 1 -> 2"
) -> Event:
    """An events.k8s.io/v1 Event about a DGD, as the operator reports one."""
    return Event(
        api_version="events.k8s.io/v1",
        metadata=ObjectMeta(),
        reporting_controller="nvidia.com/dgd-operator",
        reporting_instance="dgd-operator-0",
        action="Reconcile",
        reason=reason,
        type="Normal",
        note=note,
        regarding=ObjectReference(
            api_version=regarding.api_version,
            kind="DynamoGraphDeployment",
            name=regarding.metadata.name,
            namespace=regarding.metadata.namespace,
            uid=regarding.metadata.uid,
        ),
    )


def read_at(read: Any, written: Any) -> Any:
    """``written`` carrying the resourceVersion (and uid) of ``read``: an update of what was read (a
    custom resource takes no unconditional update)."""
    return msgspec.structs.replace(
        written,
        metadata=msgspec.structs.replace(
            written.metadata, resource_version=read.metadata.resource_version, uid=read.metadata.uid
        ),
    )
