"""The Services of a DCD (dcd-controller §2.3.4, §2.3.6): the component Service through which its pods
are discovered or reached, and the headless Service of its base model.

The component Service exists iff Kubernetes discovery is on for the DCD or the DCD is a frontend; it
is named normalize(DCD name) and selects the pods by workload component type, Dynamo namespace and
component. The model Service is per model and namespace: the first DCD (or DGD) that creates it owns
it, the others leave it as it is.
"""

from __future__ import annotations

from dgd.domain.metadata_keys import (
    BASE_MODEL,
    BASE_MODEL_HASH,
    COMPONENT,
    COMPONENT_TYPE,
    DISCOVERY_BACKEND,
    DISCOVERY_ENABLED,
    DYNAMO_NAMESPACE,
)
from dgd.domain.naming import normalize
from dgd.domain.pod_merge import JSON
from dgd.domain.render.clique_metadata import model_hash
from dgd.domain.render.dcd_identity import Identity
from dgd.domain.render.dcd_workload import ROLE_LABEL
from dgd.domain.render.errors import RenderError
from dgd.domain.render.stable_resources import EPP_GRPC_PORT, FRONTEND_PORT, SYSTEM_PORT


def wants_component_service(identity: Identity) -> bool:
    """Whether the DCD has a component Service: with Kubernetes discovery, or as a frontend."""
    return identity.k8s_discovery or identity.spec_type == "frontend"


def _port(spec_type: str) -> JSON:
    if spec_type == "frontend":
        return {"name": "http", "port": FRONTEND_PORT, "targetPort": "http", "protocol": "TCP"}
    if spec_type == "epp":
        return {
            "name": "grpc",
            "port": EPP_GRPC_PORT,
            "targetPort": EPP_GRPC_PORT,
            "protocol": "TCP",
            "appProtocol": "http2",
        }
    return {"name": "system", "port": SYSTEM_PORT, "targetPort": "system", "protocol": "TCP"}


def component_service(identity: Identity, workload_type: str, *, leader_only: bool) -> JSON:
    """The component Service; ``leader_only`` adds ``role: leader`` to the selector (the DCD runs as a
    LeaderWorkerSet, whose leaders serve). ``RenderError`` without a Dynamo namespace."""
    if not identity.dynamo_namespace:
        raise RenderError(
            "metadata.labels", f"expected DynamoComponentDeployment {identity.name} to have a dynamoNamespace"
        )
    labels = dict(identity.labels)
    if identity.k8s_discovery:
        labels.update({DISCOVERY_BACKEND: "kubernetes", DISCOVERY_ENABLED: "true"})
    selector = {
        COMPONENT_TYPE: workload_type,
        DYNAMO_NAMESPACE: identity.dynamo_namespace,
        COMPONENT: identity.component,
    }
    if leader_only:
        selector[ROLE_LABEL] = "leader"
    metadata: JSON = {"name": normalize(identity.name), "namespace": identity.namespace}
    if labels:
        metadata["labels"] = dict(sorted(labels.items()))
    if identity.annotations:
        metadata["annotations"] = dict(sorted(identity.annotations.items()))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"selector": dict(sorted(selector.items())), "ports": [_port(identity.spec_type)]},
    }


def model_service(model: str, namespace: str) -> JSON:
    """The headless Service of the pods serving base model ``model`` (upstream ``model_service.go``)."""
    hashed = model_hash(model)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"dynamo-model-{hashed}",
            "namespace": namespace,
            "labels": {BASE_MODEL_HASH: hashed, "nvidia.com/managed-by": "dynamo-operator"},
            "annotations": {BASE_MODEL: model},
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": False,
            "selector": {BASE_MODEL_HASH: hashed},
            "ports": [{"name": "system", "port": SYSTEM_PORT, "targetPort": SYSTEM_PORT, "protocol": "TCP"}],
        },
    }
