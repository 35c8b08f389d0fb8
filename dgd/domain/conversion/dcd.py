"""DynamoComponentDeployment conversion, both directions (supplement §1.11).

A DCD is one component: its spec converts with the same rules as a DGD service (``component_of`` /
``service_of``), plus ``backendFramework`` as it is. Two things differ from a DGD:

- the name: v1beta1 ``name`` is v1alpha1 ``serviceName``, or ``metadata.name`` when that is empty;
  the payload record ``{"path":"serviceName","nil":true}`` remembers the empty ``serviceName``;
- the status: one ``service`` ⇄ ``component``; v1alpha1's ``podSelector`` has no v1beta1 field and
  travels in ``nvidia.com/dcd-status``.

Both functions are pure, leave their input untouched and raise ``ConversionError`` for input they
cannot handle. v1beta1 results have alphabetical keys, v1alpha1 results Go's struct order.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.component import component_of
from dgd.domain.conversion.dgd import SERVICE_SHAPE, V1ALPHA1, V1BETA1
from dgd.domain.conversion.go_types import go_order
from dgd.domain.conversion.payload import (
    encode_spec_payload,
    encode_status_payload,
    read_spec_payload,
    read_status_payload,
)
from dgd.domain.conversion.preservation import preserved_service
from dgd.domain.conversion.service import COMPONENT_SHAPE, service_of
from dgd.domain.conversion.shapes import STRINGS, Shape, check_document
from dgd.domain.conversion.status import component_status_of, service_status_of
from dgd.domain.metadata_keys import DCD_SPEC_PAYLOAD, DCD_STATUS_PAYLOAD
from dgd.messages.base import sorted_keys

KIND = "DynamoComponentDeployment"

#: The payload record for an empty v1alpha1 ``serviceName``.
EMPTY_SERVICE_NAME = {"path": "serviceName", "nil": True}


def dcd_to_v1beta1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1alpha1 DCD document to v1beta1 (upstream "ConvertTo").

    The ``nvidia.com/dcd-spec`` payload is written when the object started as v1alpha1 and got a
    pod template, when ``serviceName`` was empty, or when anything else needs saving.
    """
    check_document(doc, V1ALPHA1, KIND, V1BETA1, _ALPHA_DOCUMENT)
    metadata, annotations = _metadata(doc)
    view = read_spec_payload(annotations.pop(DCD_SPEC_PAYLOAD, None))
    annotations.pop(DCD_STATUS_PAYLOAD, None)

    # The component takes serviceName, or the object's name; an empty serviceName is recorded.
    spec = doc.get("spec") or {}
    service_name = spec.get("serviceName") or ""
    saved_component = view.spec if view is not None else None
    name = service_name or metadata.get("name") or ""
    if not service_name and saved_component is not None and saved_component.get("name") == "":
        name = ""
    component = component_of(name, spec, saved_component)
    if spec.get("backendFramework"):
        component["backendFramework"] = spec["backendFramework"]
    component.pop("name")
    if name:
        component["name"] = name

    # What v1beta1 cannot hold goes to the payload.
    preserved = preserved_service(service_name, spec, include_origin_splits=view is None)
    raw_json = () if service_name else (EMPTY_SERVICE_NAME,)
    if preserved or raw_json or (view is None and "podTemplate" in component):
        annotations[DCD_SPEC_PAYLOAD] = encode_spec_payload(preserved, "DCDEnvelope", raw_json)
    out: dict[str, Any] = {"apiVersion": V1BETA1, "kind": KIND, "metadata": metadata, "spec": component}
    if doc.get("status") is not None:
        out["status"], saved_status = _component_status(doc["status"])
        if saved_status:
            annotations[DCD_STATUS_PAYLOAD] = encode_status_payload(saved_status, "DCDStatus")
    _set_annotations(metadata, annotations)
    result: dict[str, Any] = sorted_keys(out)
    return result


def dcd_to_v1alpha1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1beta1 DCD document to v1alpha1 (upstream "ConvertFrom").

    ``serviceName`` is the component name, blank again when the v1alpha1 original had it blank.
    What v1alpha1 cannot hold (an empty name, a template layout, a v1beta1 origin) travels in the
    view's own ``nvidia.com/dcd-spec``.
    """
    check_document(doc, V1BETA1, KIND, V1ALPHA1, _BETA_DOCUMENT)
    metadata, annotations = _metadata(doc)
    saved = read_spec_payload(annotations.pop(DCD_SPEC_PAYLOAD, None))
    saved_status = read_status_payload(annotations.pop(DCD_STATUS_PAYLOAD, None), DCD_STATUS_PAYLOAD)

    # The service, its name, and the framework.
    spec = doc.get("spec") or {}
    view = service_of(spec, saved.spec if saved is not None else {})
    service: dict[str, Any] = view.service
    name = spec.get("name") or ""
    blanked = saved is not None and EMPTY_SERVICE_NAME in saved.raw_json and name == metadata.get("name")
    if name and not blanked:
        service["serviceName"] = name
    if spec.get("backendFramework"):
        service["backendFramework"] = spec["backendFramework"]

    # The view's payload: v1beta1-only data, an empty name, or the v1beta1 origin of a template.
    if view.leftover or not name or (saved is None and spec.get("podTemplate") is not None):
        annotations[DCD_SPEC_PAYLOAD] = encode_spec_payload(
            {"name": name, **view.leftover}, "BetaDCDEnvelope"
        )
    out: dict[str, Any] = {"kind": KIND, "apiVersion": V1ALPHA1, "metadata": metadata, "spec": service}
    if doc.get("status") is not None:
        out["status"] = _service_status(doc["status"], saved_status)
    _set_annotations(metadata, annotations)
    result: dict[str, Any] = go_order(out, "DCDDocument")
    return result


def _metadata(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    metadata = copy.deepcopy(doc.get("metadata") or {})
    return metadata, dict(metadata.get("annotations") or {})


def _set_annotations(metadata: dict[str, Any], annotations: dict[str, Any]) -> None:
    # Annotations go back only if any remain.
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations


def _component_status(status: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    # v1alpha1 service → v1beta1 component; podSelector and a stray componentName are saved.
    out = _common_status(status)
    saved: dict[str, Any] = {}
    if status.get("service") is not None:
        out["component"], saved_service = component_status_of(status["service"])
        if saved_service is not None:
            saved["service"] = saved_service
    if status.get("podSelector"):
        saved["podSelector"] = dict(status["podSelector"])
    return out, saved


def _service_status(status: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    out = _common_status(status)
    if saved.get("podSelector"):
        out["podSelector"] = copy.deepcopy(saved["podSelector"])
    if status.get("component") is not None:
        out["service"] = service_status_of(status["component"], saved.get("service"))
    return out


def _common_status(status: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if status.get("observedGeneration") is not None:
        out["observedGeneration"] = status["observedGeneration"]
    if status.get("conditions"):
        out["conditions"] = copy.deepcopy(status["conditions"])
    return out


# The input shapes of both versions, checked before converting (see ``shapes``).
_REPLICAS: Shape = {"componentName": "string", "componentNames": ("list", "string")}
_ALPHA_DOCUMENT: dict[str, Shape] = {
    "metadata": {"name": "string", "annotations": STRINGS},
    "spec": {**SERVICE_SHAPE, "backendFramework": "string"},
    "status": {"conditions": ("list", "object"), "podSelector": STRINGS, "service": _REPLICAS},
}
_BETA_DOCUMENT: dict[str, Shape] = {
    "metadata": {"name": "string", "annotations": STRINGS},
    "spec": {**COMPONENT_SHAPE, "backendFramework": "string"},
    "status": {"conditions": ("list", "object"), "component": _REPLICAS},
}
