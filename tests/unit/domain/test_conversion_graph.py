"""v1alpha1 → v1beta1 DGD conversion of the graph as a whole: its status, null services, graph-level fields
and metadata, and the input it reports as unconvertible (supplement §1).
"""

from __future__ import annotations

from typing import Any

import pytest

from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from tests.unit.domain.conversion_fixtures import (
    SPEC_KEY,
    STATUS_KEY,
    _dgd,
    _fixture,
)


def test_status_services_become_components_and_a_stray_component_name_is_preserved() -> None:
    # given a status with a singular name, a consistent pair, a mismatched pair and a rolling update
    document = _dgd({"Worker": {"componentType": "worker"}})
    document["status"] = {
        "state": "successful",
        "observedGeneration": 3,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "AllReady",
                "message": "",
                "lastTransitionTime": "t",
            }
        ],
        "services": {
            "Single": {
                "componentKind": "Deployment",
                "componentName": "g-single",
                "replicas": 1,
                "updatedReplicas": 1,
            },
            "Pair": {
                "componentKind": "PodClique",
                "componentName": "g-pair-b",
                "componentNames": ["g-pair-a", "g-pair-b"],
                "replicas": 2,
                "updatedReplicas": 2,
                "readyReplicas": 2,
            },
            "Stray": {
                "componentKind": "Deployment",
                "componentName": "old",
                "componentNames": ["new"],
                "replicas": 1,
                "updatedReplicas": 0,
            },
        },
        "rollingUpdate": {
            "phase": "InProgress",
            "startTime": "2025-01-01T00:00:00Z",
            "updatedServices": ["Worker"],
        },
    }

    # when converted
    converted = dgd_to_v1beta1(document)

    # then components carry componentNames only, the rolling update names components
    status = converted["status"]
    assert status["state"] == "successful"
    assert status["observedGeneration"] == 3
    assert status["components"]["Single"] == {
        "componentKind": "Deployment",
        "componentNames": ["g-single"],
        "replicas": 1,
        "updatedReplicas": 1,
    }
    assert status["components"]["Pair"]["componentNames"] == ["g-pair-a", "g-pair-b"]
    assert "componentName" not in status["components"]["Pair"]
    assert status["rollingUpdate"] == {
        "phase": "InProgress",
        "startTime": "2025-01-01T00:00:00Z",
        "updatedComponents": ["Worker"],
    }
    assert "services" not in status
    assert converted["metadata"]["annotations"][STATUS_KEY] == (
        '{"state":"","services":{"Single":{"componentKind":"","componentName":"g-single","replicas":0,'
        '"updatedReplicas":0},"Stray":{"componentKind":"","componentName":"old","componentNames":["new"],'
        '"replicas":0,"updatedReplicas":0}}}'
    )


def test_a_null_service_is_dropped_and_remembered_as_null() -> None:
    # given a services map with a null entry
    document = _dgd({"Gone": None, "Worker": {"componentType": "worker"}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then only the real service becomes a component and the payload records the null
    assert [component["name"] for component in converted["spec"]["components"]] == ["Worker"]
    assert converted["metadata"]["annotations"][SPEC_KEY] == '{"version":1,"spec":{"services":{"Gone":null}}}'


def test_graph_level_fields_are_renamed_and_metadata_is_kept_except_private_keys() -> None:
    # given graph-level envs and topology, user metadata and a stale status payload
    document = _dgd(
        {"Worker": {"componentType": "worker"}},
        envs=[{"name": "LOG", "value": "debug"}],
        topologyConstraint={"topologyProfile": "rack-topology", "packDomain": "rack"},
        backendFramework="vllm",
    )
    document["metadata"]["labels"] = {"team": "llm"}
    document["metadata"]["annotations"] = {STATUS_KEY: "{}", "nvidia.com/dgd-other": "x", "note": "keep"}

    # when converted
    converted = dgd_to_v1beta1(document)

    # then envs is env, topologyProfile is clusterTopologyName, metadata otherwise unchanged
    assert converted["spec"]["env"] == [{"name": "LOG", "value": "debug"}]
    assert converted["spec"]["topologyConstraint"] == {
        "clusterTopologyName": "rack-topology",
        "packDomain": "rack",
    }
    assert converted["spec"]["backendFramework"] == "vllm"
    assert converted["metadata"] == {
        "name": "graph",
        "namespace": "ns",
        "labels": {"team": "llm"},
        "annotations": {"nvidia.com/dgd-other": "x", "note": "keep"},
    }


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda d: d["spec"]["services"].update(VllmDecodeWorker="worker"),
            "spec.services[VllmDecodeWorker]",
        ),
        (
            lambda d: d["spec"]["services"]["VllmDecodeWorker"].update(componentType=7),
            "spec.services[VllmDecodeWorker].componentType",
        ),
        (
            lambda d: d["spec"]["services"]["Frontend"].update(volumeMounts=[{"name": ["x"]}]),
            "spec.services[Frontend].volumeMounts[0].name",
        ),
        (
            lambda d: d["spec"]["services"]["Frontend"].update(sharedMemory={"size": "lots"}),
            "spec.services[Frontend].sharedMemory.size",
        ),
        (lambda d: d["spec"].update(services=["Frontend"]), "spec.services"),
        (lambda d: d.update(apiVersion="nvidia.com/v1beta1"), "apiVersion"),
    ],
)
def test_input_the_conversion_cannot_handle_is_reported_at_its_path(mutate: Any, path: str) -> None:
    # given the fixture broken at one place
    document = _fixture()
    mutate(document)

    # when converted
    with pytest.raises(ConversionError) as raised:
        dgd_to_v1beta1(document)

    # then the error names the JSON path and reads "path: message"
    assert raised.value.path == path
    assert str(raised.value) == f"{path}: {raised.value.message}"
    assert isinstance(raised.value, ValueError)
