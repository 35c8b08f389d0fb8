"""The upstream fixtures, worked examples and document builders that the DGD conversion tests (supplement §1)
share.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, settings

from dgd.domain.quantity import canonical_quantity
from tests.upstream import DYNAMO, load_documents

FIXTURE = DYNAMO / "deploy" / "utils" / "tests" / "fixtures" / "v1alpha1" / "agg.yaml"
VLLM_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "agg.yaml"
SPEC_KEY = "nvidia.com/dgd-spec"
STATUS_KEY = "nvidia.com/dgd-status"

EXAMPLE_1_ANNOTATION = (
    '{"version":1,"spec":{"services":{"Frontend":{"envFromSecret":"hf-token-secret","extraPodSpec":'
    '{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":{"resources":{"requests":'
    '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
    '"extraPodSpec":{"mainContainer":{"name":"","resources":{}}}}}}}'
)
EXAMPLE_2_ANNOTATION = (
    '{"version":1,"spec":{"pvcs":[{"create":true,"name":"model-cache","storageClass":"standard",'
    '"size":"100Gi","volumeAccessMode":"ReadWriteMany"}],"services":{"Frontend":{"envFromSecret":'
    '"hf-token-secret","extraPodSpec":{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":'
    '{"annotations":{"example.com/team":"llm"},"dynamoNamespace":"my-legacy-ns","resources":{"requests":'
    '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
    '"volumeMounts":[{"name":"model-cache","mountPoint":"/root/.cache"}],"extraPodSpec":{"mainContainer":'
    '{"name":"","resources":{}}}}}}}'
)


def _fixture() -> dict[str, Any]:
    document: dict[str, Any] = load_documents(FIXTURE)[0]
    return document


def example_2_input() -> dict[str, Any]:
    """The input of worked example 2 (supplement §1.14): the fixture plus PVCs and v1alpha1-only
    worker fields."""
    document = _fixture()
    document["spec"]["pvcs"] = [
        {
            "name": "model-cache",
            "create": True,
            "size": "100Gi",
            "storageClass": "standard",
            "volumeAccessMode": "ReadWriteMany",
        }
    ]
    document["spec"]["services"]["VllmDecodeWorker"].update(
        {
            "subComponentType": "decode",
            "dynamoNamespace": "my-legacy-ns",
            "annotations": {"example.com/team": "llm"},
            "scalingAdapter": {"enabled": True},
            "sharedMemory": {"size": "16Gi"},
            "volumeMounts": [{"name": "model-cache", "mountPoint": "/root/.cache"}],
        }
    )
    return document


def _dgd(services: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph", "namespace": "ns"},
        "spec": {"services": services, **spec},
    }


def _components(converted: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {component["name"]: component for component in converted["spec"]["components"]}


def _preserved(converted: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(converted["metadata"]["annotations"][SPEC_KEY])
    assert payload["version"] == 1
    return dict(payload["spec"])


def _containers(component: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = component["podTemplate"]["spec"]["containers"]
    return containers


ALPHA = "nvidia.com/v1alpha1"
BETA = "nvidia.com/v1beta1"
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


#: Keys whose values are Kubernetes quantities, and those whose "0" is a Go zero (absent).
_QUANTITY_KEYS = {"sharedMemorySize", "size", "cpu", "memory", "gpu"}
_ZERO_MEANS_ABSENT = {"size"}


#: An enabled GPU-memory-service or failover block without a mode converts with the schema-default mode
#: (which the API server writes into any stored object of either version): docs/decisions.md, "Admission
#: webhooks". v1alpha1 blocks say so with ``enabled``.
_MODE_DEFAULTED = ("gpuMemoryService", "failover")


def normalized(value: Any, key: str = "", quantities: bool = False) -> Any:
    """``value`` as the §1.12 comparison sees it: empties dropped, quantities by value, the GMS and failover
    modes defaulted."""
    if isinstance(value, dict) and key in _MODE_DEFAULTED and not value.get("mode"):
        value = {**value, "mode": "intraPod" if "enabled" in value else "IntraPod"}
    if isinstance(value, dict):
        inner = quantities or key in ("limits", "requests")
        items = {name: normalized(item, name, inner) for name, item in value.items()}
        return {name: item for name, item in items.items() if not _is_empty(item)}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if (quantities or key in _QUANTITY_KEYS) and isinstance(value, str | int) and not isinstance(value, bool):
        value = canonical_quantity(value) or value
        return None if key in _ZERO_MEANS_ABSENT and value == "0" else value
    return value


def schema_defaulted(document: dict[str, Any]) -> dict[str, Any]:
    """A v1beta1 DGD with the mode its CRD defaults written into each empty GMS and failover block."""
    document = copy.deepcopy(document)
    for component in document.get("spec", {}).get("components") or []:
        for key in _MODE_DEFAULTED:
            block = (component.get("experimental") or {}).get(key)
            if block == {}:
                block["mode"] = "IntraPod"
    return document


def _is_empty(value: Any) -> bool:
    return value is None or value is False or value == "" or value == [] or value == {}


def _stored_example_1() -> dict[str, Any]:
    # §1.13: the stored object is the v1beta1 example's spec with the derived annotation.
    stored: dict[str, Any] = copy.deepcopy(load_documents(VLLM_AGG)[0])
    stored["metadata"] = {
        "name": "vllm-agg",
        "annotations": {
            SPEC_KEY: (
                '{"version":1,"spec":{"services":{"Frontend":{"envFromSecret":"hf-token-secret","extraPodSpec":'
                '{"mainContainer":{"name":"","resources":{}}}},"VllmDecodeWorker":{"resources":{"requests":'
                '{"custom":{"ephemeral-storage":"2Gi"}},"limits":{"gpu":"1"}},"envFromSecret":"hf-token-secret",'
                '"extraPodSpec":{"mainContainer":{"name":"","resources":{}}}}}}}'
            )
        },
    }
    return stored


def _without_private_keys(document: dict[str, Any]) -> dict[str, Any]:
    # The view's own payload is conversion state, not user data (§1.12 "not supported").
    document = copy.deepcopy(document)
    annotations = document["metadata"].get("annotations", {})
    annotations.pop(SPEC_KEY, None)
    if not annotations:
        document["metadata"].pop("annotations", None)
    return document


def _beta_dgd(*components: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": BETA,
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph"},
        "spec": {"components": list(components)},
    }


def _dcd(version: str, spec: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "apiVersion": version,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": name},
        "spec": spec,
    }
