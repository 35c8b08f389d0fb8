"""v1alpha1-only data a converted DGD still carries, read back for rendering (supplement §1.10).

A DGD created as v1alpha1 keeps per-service ``labels``, ``annotations``, ``ingress`` and
``subComponentType`` in its ``nvidia.com/dgd-spec`` annotation; the operator still honours them.
An unreadable payload counts as empty: it is the conversion's to report, not the renderer's.
"""

from __future__ import annotations

import json
from typing import Any

from dgd.domain.conversion.payload import read_spec_payload
from dgd.domain.metadata_keys import DGD_SPEC_PAYLOAD
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment

#: v1alpha1 fields of a service that a DCD controller reads back from the DCD's own payload.
_DCD_FIELDS = ("annotations", "labels", "ingress", "subComponentType", "dynamoNamespace")


def preserved_service(dgd: DynamoGraphDeployment, component_name: str) -> dict[str, Any]:
    """The sparse v1alpha1 service kept for a component (empty when there is none)."""
    payload = read_spec_payload((dgd.metadata.annotations or {}).get(DGD_SPEC_PAYLOAD))
    services = payload.spec.get("services") if payload is not None else None
    service = services.get(component_name) if isinstance(services, dict) else None
    return service if isinstance(service, dict) else {}


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def alpha_labels(dgd: DynamoGraphDeployment, component_name: str) -> dict[str, str]:
    return _strings(preserved_service(dgd, component_name).get("labels"))


def alpha_annotations(dgd: DynamoGraphDeployment, component_name: str) -> dict[str, str]:
    return _strings(preserved_service(dgd, component_name).get("annotations"))


def alpha_ingress(dgd: DynamoGraphDeployment, component_name: str) -> dict[str, Any] | None:
    ingress = preserved_service(dgd, component_name).get("ingress")
    return ingress if isinstance(ingress, dict) else None


def sub_component_type(dgd: DynamoGraphDeployment, component: ComponentSpec) -> str | None:
    """``prefill``/``decode`` as the v1alpha1 view of the component reads (supplement §0)."""
    if component.type in ("prefill", "decode"):
        return component.type
    value = preserved_service(dgd, component.name).get("subComponentType")
    return value if isinstance(value, str) and value else None


def dcd_spec_payload(dgd: DynamoGraphDeployment, component_name: str) -> str:
    """The ``nvidia.com/dcd-spec`` annotation of a generated DCD (supplement §1.11).

    The v1alpha1 view of a generated DCD has an empty ``serviceName``, recorded as a nil path; the
    v1alpha1-only service data the DCD controller reads back travels in ``spec``.
    """
    service = preserved_service(dgd, component_name)
    sparse = {key: service[key] for key in _DCD_FIELDS if service.get(key)}
    payload = {"version": 1, "spec": sparse, "rawJSON": [{"path": "serviceName", "nil": True}]}
    return json.dumps(payload, separators=(",", ":"), sort_keys=False, ensure_ascii=False)
