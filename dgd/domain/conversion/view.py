"""v1beta1 → v1alpha1 conversion of a DynamoGraphDeployment: the v1alpha1 view (upstream "ConvertFrom").

``dgd_to_v1alpha1`` is the inverse of ``dgd.dgd_to_v1beta1`` and, like it, a pure function of one
document: the input is left untouched and input it cannot handle is a ``ConversionError`` naming
the JSON path. It consumes the ``nvidia.com/dgd-spec`` / ``nvidia.com/dgd-status`` annotations of the
stored object (v1alpha1 data saved by an earlier conversion) and removes them; when the view needs
to carry v1beta1 data (the component order, a template layout v1alpha1 cannot say, the v1beta1
origin of the object) it writes its own ``nvidia.com/dgd-spec``, which the way back consumes.
The result's keys are in the order upstream's v1alpha1 encoder writes them (Go struct order).
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.dgd import KIND, SPEC_ANNOTATION, STATUS_ANNOTATION, V1ALPHA1, V1BETA1
from dgd.domain.conversion.go_types import go_order
from dgd.domain.conversion.graph import graph_fields, graph_status
from dgd.domain.conversion.payload import encode_spec_payload, read_spec_payload, read_status_payload
from dgd.domain.conversion.service import COMPONENT_SHAPE, service_of
from dgd.domain.conversion.shapes import (
    GRAPH_SPEC,
    GRAPH_STATUS,
    STRINGS,
    ConversionError,
    Shape,
    check_document,
)
from dgd.domain.conversion.status import service_status_of


def dgd_to_v1alpha1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1beta1 DGD document to v1alpha1.

    Services are keyed by component name. A component order that is not sorted by name, and
    whatever else of a component v1alpha1 cannot hold, travel in the view's ``nvidia.com/dgd-spec``
    so that converting the view back gives the same v1beta1 document (supplement §1.12).
    """
    check_document(doc, V1BETA1, KIND, V1ALPHA1, _DOCUMENT)

    # Metadata: read what an earlier conversion saved, then drop both private keys.
    metadata = copy.deepcopy(doc.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    saved = read_spec_payload(annotations.pop(SPEC_ANNOTATION, None))
    saved_status = read_status_payload(annotations.pop(STATUS_ANNOTATION, None), STATUS_ANNOTATION)

    # Spec and status; the v1beta1 data the view cannot hold goes into its own payload.
    spec, leftover = _convert_spec(doc.get("spec") or {}, saved.spec if saved is not None else None)
    out: dict[str, Any] = {"kind": KIND, "apiVersion": V1ALPHA1, "metadata": metadata, "spec": spec}
    if doc.get("status") is not None:
        out["status"] = _convert_status(doc["status"], saved_status)
    if leftover:
        annotations[SPEC_ANNOTATION] = encode_spec_payload(leftover, "BetaEnvelope")

    # Annotations go back only if any remain.
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    result: dict[str, Any] = go_order(out, "DGDDocument")
    return result


def _convert_spec(
    spec: dict[str, Any], saved: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    # Graph-level fields both versions share; env is renamed, clusterTopologyName too.
    out = graph_fields(spec, to_beta=False)

    # PVCs exist only in v1alpha1: they come back as saved.
    saved_spec = saved or {}
    if saved_spec.get("pvcs"):
        out["pvcs"] = copy.deepcopy(saved_spec["pvcs"])

    # Components become services; the view's payload lists what v1alpha1 cannot hold.
    components: list[dict[str, Any]] = spec.get("components") or []
    names = _unique_names(components)
    saved_services = _object(saved_spec.get("services"))
    services: dict[str, Any] = {}
    leftovers: dict[str, dict[str, Any]] = {}
    for name, component in zip(names, components, strict=True):
        saved_service = saved_services.get(name)
        view = service_of(component, saved_service if isinstance(saved_service, dict) else {})
        services[name] = view.service
        if isinstance(saved_service, dict) and saved_service.get("serviceName"):
            services[name]["serviceName"] = saved_service["serviceName"]
        # A v1beta1-first object (nothing saved) marks each templated component, so the way back
        # knows the object did not start as v1alpha1 (§1.8).
        if view.leftover or (saved is None and component.get("podTemplate") is not None):
            leftovers[name] = view.leftover

    # Services saved as null come back as null, unless a component took the name.
    services.update(
        {name: None for name, item in saved_services.items() if item is None and name not in services}
    )
    if services:
        out["services"] = services
    return out, _leftover_spec(names, leftovers)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _unique_names(components: list[dict[str, Any]]) -> list[str]:
    names = [component.get("name") or "" for component in components]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise ConversionError("spec.components", f'duplicate component name "{name}" in spec.components')
    return names


def _leftover_spec(names: list[str], leftovers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    # All components in v1beta1 order when that order is not sorted; else only those with a leftover.
    listed = names if names != sorted(names) else [name for name in names if name in leftovers]
    if not listed:
        return {}
    return {"components": [{"name": name, **leftovers.get(name, {})} for name in listed]}


def _convert_status(status: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    # Status fields both versions share; the rolling update names services instead of components.
    out = graph_status(status, to_beta=False)

    # Components become services; componentName is derived, or restored while still consistent.
    saved_services = _object(saved.get("services"))
    services = {
        name: service_status_of(component, saved_services.get(name))
        for name, component in (status.get("components") or {}).items()
        if component is not None
    }
    if services:
        out["services"] = services

    return out


# The v1beta1 input shapes, checked before converting (see ``shapes``).
_SPEC: Shape = {
    **GRAPH_SPEC,
    "components": ("list", COMPONENT_SHAPE),
    "env": ("list", "object"),
    "topologyConstraint": {"clusterTopologyName": "string", "packDomain": "string"},
}
_STATUS: Shape = {
    **GRAPH_STATUS,
    "components": ("map", {"componentNames": ("list", "string")}),
    "rollingUpdate": {"updatedComponents": ("list", "string")},
}
_DOCUMENT: dict[str, Shape] = {"metadata": {"annotations": STRINGS}, "spec": _SPEC, "status": _STATUS}
