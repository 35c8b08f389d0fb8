"""v1alpha1 → v1beta1 conversion of a DynamoGraphDeployment (upstream "ConvertTo", supplement §1).

``dgd_to_v1beta1`` is a pure function of one document: plain JSON values in, plain JSON values out,
the input left untouched. It checks the shape of everything it interprets first and reports input
it cannot handle as a ``ConversionError`` naming the JSON path. The result's object keys are in
alphabetical order, as upstream's v1beta1 encoder writes them. Data v1beta1 cannot hold is kept in
the ``nvidia.com/dgd-spec`` / ``nvidia.com/dgd-status`` annotations, encoded byte for byte as
upstream writes them; all other metadata is carried over unchanged.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from dgd.domain.conversion.component import component_of
from dgd.domain.conversion.graph import graph_fields, graph_status
from dgd.domain.conversion.payload import encode_spec_payload, encode_status_payload, read_spec_payload
from dgd.domain.conversion.preservation import preserved_service
from dgd.domain.conversion.shapes import (
    GRAPH_SPEC,
    GRAPH_STATUS,
    PROVIDER_OVERRIDE,
    STRINGS,
    ConversionError,
    Shape,
    check_document,
)
from dgd.domain.conversion.status import component_status_of
from dgd.messages.base import sorted_keys

__all__ = ["KIND", "V1ALPHA1", "V1BETA1", "ConversionError", "dgd_to_v1beta1"]

V1ALPHA1 = "nvidia.com/v1alpha1"
V1BETA1 = "nvidia.com/v1beta1"
KIND = "DynamoGraphDeployment"
SPEC_ANNOTATION = "nvidia.com/dgd-spec"
STATUS_ANNOTATION = "nvidia.com/dgd-status"


def dgd_to_v1beta1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1alpha1 DGD document to v1beta1.

    Components come out in byte-wise order of the service keys, unless a v1beta1 payload on the
    input records another order (§1.8). The result is deterministic: the same input always gives
    the same document and the same annotation bytes.
    """
    check_document(doc, V1ALPHA1, KIND, V1BETA1, _DOCUMENT)

    # Metadata: read a v1beta1 payload left by an earlier read, then drop both private keys.
    metadata = copy.deepcopy(doc.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    payload = _read_v1beta1_payload(annotations.get(SPEC_ANNOTATION))
    annotations.pop(SPEC_ANNOTATION, None)
    annotations.pop(STATUS_ANNOTATION, None)

    # Spec and status, each with what v1beta1 cannot hold set aside.
    spec, preserved_spec = _convert_spec(doc.get("spec") or {}, payload)
    out: dict[str, Any] = {"apiVersion": V1BETA1, "kind": KIND, "metadata": metadata, "spec": spec}
    if doc.get("status") is not None:
        out["status"], preserved_status = _convert_status(doc["status"])
        if preserved_status:
            annotations[STATUS_ANNOTATION] = encode_status_payload({"services": preserved_status})
    if preserved_spec:
        annotations[SPEC_ANNOTATION] = encode_spec_payload(preserved_spec)

    # Annotations go back only if any remain.
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    result: dict[str, Any] = sorted_keys(out)
    return result


class _Payload(NamedTuple):
    """The v1beta1 payload a v1alpha1 input may carry: component order and entries by name."""

    order: list[str]
    components: dict[str, dict[str, Any]]


def _read_v1beta1_payload(raw: Any) -> _Payload | None:
    # Any parseable payload counts (envelope or bare legacy spec); an unparseable one is ignored.
    payload = read_spec_payload(raw)
    entries = (payload.spec.get("components") or []) if payload is not None else None
    if not isinstance(entries, list) or not all(_is_named(item) for item in entries):
        return None
    names = [item.get("name") or "" for item in entries]
    return _Payload(names, dict(zip(names, entries, strict=True)))


def _is_named(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name") or "", str)


def _convert_spec(spec: dict[str, Any], payload: _Payload | None) -> tuple[dict[str, Any], dict[str, Any]]:
    # Graph-level fields both versions share; envs is renamed, topologyProfile too.
    out: dict[str, Any] = graph_fields(spec, to_beta=True)

    # Services become components; a null service is dropped but remembered.
    services: dict[str, Any] = spec.get("services") or {}
    components: list[dict[str, Any]] = []
    preserved_services: dict[str, Any] = {}
    for name in _emission_order(list(services), payload):
        service = services[name]
        if service is None:
            preserved_services[name] = None
            continue
        payload_component = payload.components.get(name) if payload is not None else None
        components.append(component_of(name, service, payload_component))
        saved = preserved_service(name, service, include_origin_splits=payload is None)
        if saved:
            preserved_services[name] = saved
    if components:
        out["components"] = components

    # The sparse v1alpha1 spec: top-level PVCs and the per-service leftovers.
    preserved: dict[str, Any] = {}
    if spec.get("pvcs"):
        preserved["pvcs"] = copy.deepcopy(spec["pvcs"])
    if preserved_services:
        preserved["services"] = preserved_services
    return out, preserved


def _emission_order(names: list[str], payload: _Payload | None) -> list[str]:
    # Sorted by key, unless the payload's list is unsorted: then its surviving names lead.
    if payload is None or payload.order == sorted(payload.order):
        return sorted(names)
    leading = [name for name in dict.fromkeys(payload.order) if name in names]
    return leading + sorted(set(names) - set(leading))


def _convert_status(status: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    # Status fields both versions share; the rolling update names components instead of services.
    out = graph_status(status, to_beta=True)

    # Services become components; componentName folds into componentNames.
    components: dict[str, Any] = {}
    preserved: dict[str, Any] = {}
    for name, service in (status.get("services") or {}).items():
        if service is None:
            continue
        components[name], saved = component_status_of(service)
        if saved is not None:
            preserved[name] = saved
    if components:
        out["components"] = components

    # The rolling update names components instead of services.
    if status.get("rollingUpdate") is not None:
        rolling = copy.deepcopy(status["rollingUpdate"])
        updated = rolling.pop("updatedServices", None)
        if updated:
            rolling["updatedComponents"] = updated
        out["rollingUpdate"] = rolling
    return out, preserved


# The v1alpha1 input shapes, checked before converting (see ``shapes``).
_RESOURCE_ITEM: Shape = {
    "cpu": "resource",
    "memory": "resource",
    "gpu": "resource",
    "gpuType": "string",
    "custom": ("map", "resource"),
}
_CONTAINER: Shape = {
    "name": "string",
    "env": ("list", {"name": "string"}),
    "envFrom": ("list", "object"),
    "volumeMounts": ("list", "object"),
    "resources": {"limits": "object", "requests": "object", "claims": ("list", "object")},
    "livenessProbe": "object",
    "readinessProbe": "object",
    "startupProbe": "object",
}
_FEATURE: dict[str, Shape] = {"enabled": "boolean", "mode": "string"}
#: A v1alpha1 service (a DGD `services` entry, and a DCD spec), as far as conversion reads it.
SERVICE_SHAPE: dict[str, Shape] = {
    "providerOverride": PROVIDER_OVERRIDE,
    "annotations": STRINGS,
    "labels": STRINGS,
    "serviceName": "string",
    "componentType": "string",
    "subComponentType": "string",
    "runtimeVersionOverride": "string",
    "dynamoNamespace": "string",
    "globalDynamoNamespace": "boolean",
    "resources": {"requests": _RESOURCE_ITEM, "limits": _RESOURCE_ITEM, "claims": ("list", "object")},
    "autoscaling": "object",
    "envs": ("list", {"name": "string"}),
    "envFromSecret": "string",
    "volumeMounts": ("list", {"name": "string", "mountPoint": "string", "useAsCompilationCache": "boolean"}),
    "ingress": "object",
    "modelRef": "object",
    "sharedMemory": {"disabled": "boolean", "size": "quantity"},
    "extraPodMetadata": {"annotations": STRINGS, "labels": STRINGS},
    "extraPodSpec": {"containers": ("list", {"name": "string"}), "mainContainer": _CONTAINER},
    "livenessProbe": "object",
    "readinessProbe": "object",
    "replicas": "integer",
    "minAvailable": "integer",
    "multinode": "object",
    "scalingAdapter": {"enabled": "boolean"},
    "eppConfig": "object",
    "frontendSidecar": {
        "image": "string",
        "args": ("list", "string"),
        "envFromSecret": "string",
        "envs": ("list", "object"),
    },
    "checkpoint": "object",
    "topologyConstraint": "object",
    "gpuMemoryService": {
        **_FEATURE,
        "extraClientContainers": ("list", "string"),
        "extraClientPods": ("list", "object"),
    },
    "failover": {**_FEATURE, "numShadows": "integer"},
}
_SPEC: Shape = {
    **GRAPH_SPEC,
    "pvcs": ("list", {"name": "string", "create": "boolean", "size": "quantity"}),
    "services": ("map", SERVICE_SHAPE),
    "envs": ("list", "object"),
    "topologyConstraint": {"topologyProfile": "string", "packDomain": "string"},
}
_STATUS: Shape = {
    **GRAPH_STATUS,
    "services": ("map", {"componentName": "string", "componentNames": ("list", "string")}),
    "rollingUpdate": {"updatedServices": ("list", "string")},
}
_DOCUMENT: dict[str, Shape] = {"metadata": {"annotations": STRINGS}, "spec": _SPEC, "status": _STATUS}
