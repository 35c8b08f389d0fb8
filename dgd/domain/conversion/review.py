"""One entry point for the conversion webhook: any served kind, to any served version (§1.1, §4.8).

The API server sends objects in one version and asks for another (a ConversionReview); ``convert``
reads the kind from the document and picks the conversion. v1beta1 is the hub: every kind here has
exactly the two versions, so each request is one direct conversion.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from dgd.domain.conversion import dcd, dgdsa
from dgd.domain.conversion.dgd import KIND as DGD_KIND
from dgd.domain.conversion.dgd import V1ALPHA1, V1BETA1, dgd_to_v1beta1
from dgd.domain.conversion.shapes import ConversionError
from dgd.domain.conversion.view import dgd_to_v1alpha1

Converter = Callable[[dict[str, Any]], dict[str, Any]]

#: The conversion for each (kind, desired apiVersion).
CONVERTERS: dict[tuple[str, str], Converter] = {
    (DGD_KIND, V1BETA1): dgd_to_v1beta1,
    (DGD_KIND, V1ALPHA1): dgd_to_v1alpha1,
    (dcd.KIND, V1BETA1): dcd.dcd_to_v1beta1,
    (dcd.KIND, V1ALPHA1): dcd.dcd_to_v1alpha1,
    (dgdsa.KIND, V1BETA1): dgdsa.dgdsa_to_v1beta1,
    (dgdsa.KIND, V1ALPHA1): dgdsa.dgdsa_to_v1alpha1,
}
KINDS = tuple(dict.fromkeys(kind for kind, _ in CONVERTERS))
VERSIONS = (V1ALPHA1, V1BETA1)


def convert(document: dict[str, Any], to: str) -> dict[str, Any]:
    """``document`` as apiVersion ``to``; a document already at ``to`` comes back as an unchanged copy.

    Raises ``ConversionError`` at ``kind`` for a kind other than DynamoGraphDeployment,
    DynamoComponentDeployment or DynamoGraphDeploymentScalingAdapter, at ``apiVersion`` for a
    version (of the document, or ``to``) other than nvidia.com/v1alpha1 or nvidia.com/v1beta1, and
    wherever the conversion finds input it cannot handle. The input is never modified.
    """
    kind = document.get("kind")
    if kind not in KINDS:
        raise ConversionError("kind", f"cannot convert kind {kind!r}: must be one of {', '.join(KINDS)}")
    allowed = ", ".join(VERSIONS)
    for label, version in (("the document's", document.get("apiVersion")), ("the desired", to)):
        if version not in VERSIONS:
            message = f"cannot convert {kind} with {label} apiVersion {version!r}: must be one of {allowed}"
            raise ConversionError("apiVersion", message)
    if document.get("apiVersion") == to:
        return copy.deepcopy(document)
    return CONVERTERS[(str(kind), to)](document)
