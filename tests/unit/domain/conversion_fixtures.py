"""The upstream fixtures, worked examples and document builders that the DGD conversion tests (supplement §1)
share.
"""

from __future__ import annotations

import json
from typing import Any

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
