"""DynamoGraphDeploymentScalingAdapter conversion, both directions (supplement §1.11).

A lossless rename: v1alpha1 ``spec.dgdRef.serviceName`` is v1beta1 ``spec.dgdRef.componentName``;
everything else (``replicas``, the DGD name, the status) is copied, and no annotation is involved.
Both functions are pure and leave their input untouched; v1beta1 results have alphabetical keys,
v1alpha1 results Go's struct order.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.dgd import V1ALPHA1, V1BETA1
from dgd.domain.conversion.go_types import go_order
from dgd.domain.conversion.shapes import check_identity, check_shape
from dgd.messages.base import sorted_keys

KIND = "DynamoGraphDeploymentScalingAdapter"


def dgdsa_to_v1beta1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1alpha1 DGDSA document to v1beta1: ``serviceName`` becomes ``componentName``."""
    result: dict[str, Any] = sorted_keys(_convert(doc, V1ALPHA1, V1BETA1, "serviceName", "componentName"))
    return result


def dgdsa_to_v1alpha1(doc: dict[str, Any]) -> dict[str, Any]:
    """Convert a v1beta1 DGDSA document to v1alpha1: ``componentName`` becomes ``serviceName``."""
    result: dict[str, Any] = go_order(
        _convert(doc, V1BETA1, V1ALPHA1, "componentName", "serviceName"), "DGDSADocument"
    )
    return result


def _convert(doc: dict[str, Any], version: str, target: str, key: str, target_key: str) -> dict[str, Any]:
    check_identity(doc, version, KIND, target)
    check_shape(doc.get("spec"), {"replicas": "integer", "dgdRef": {"name": "string", key: "string"}}, "spec")
    out = copy.deepcopy(doc)
    out["apiVersion"] = target
    reference = (out.get("spec") or {}).get("dgdRef")
    if isinstance(reference, dict) and key in reference:
        reference[target_key] = reference.pop(key)
    return out
