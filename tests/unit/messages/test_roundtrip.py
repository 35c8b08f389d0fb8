"""Decoding a DGD into the model and encoding it again loses nothing.

"Nothing lost" means equal as JSON/YAML values, and with the same kind of value at every leaf: a
boolean must not come back as a number (Python's ``True == 1`` would hide that). Integers and
floats count as the same kind, as they do in JSON.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.messages.dgd import (
    API_VERSION,
    API_VERSION_V1ALPHA1,
    ComponentCheckpointStatus,
    ComponentReplicaStatus,
    DGDStatus,
    DynamoGraphDeployment,
    PlacementStatus,
    RestartStatus,
    RollingUpdateStatus,
)
from dgd.messages.meta import Condition
from tests.upstream import dgd_documents

UPSTREAM_DGDS = list(dgd_documents())
V1BETA1 = [
    pytest.param(doc, id=f"{path}#{index}")
    for path, index, doc in UPSTREAM_DGDS
    if doc["apiVersion"] == API_VERSION
]
V1ALPHA1 = [
    pytest.param(doc, id=f"{path}#{index}")
    for path, index, doc in UPSTREAM_DGDS
    if doc["apiVersion"] == API_VERSION_V1ALPHA1
]

#: A DGD status with every field of domain spec §3 filled (and both condition types in use).
FULL_STATUS: dict[str, Any] = {
    "observedGeneration": 7,
    "state": "pending",
    "conditions": [
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": "2026-08-21T10:00:00Z",
            "reason": "rolling_update_in_progress",
            "message": "Rolling update in progress",
            "observedGeneration": 7,
        },
        {
            "type": "TopologyLevelsAvailable",
            "status": "True",
            "lastTransitionTime": "2026-08-21T09:00:00Z",
            "reason": "AllTopologyLevelsAvailable",
            "message": "All topology levels are available",
            "observedGeneration": 6,
        },
    ],
    "components": {
        "VllmDecodeWorker": {
            "componentKind": "Deployment",
            "componentNames": ["vllm-agg-vllmdecodeworker-0a1b2c3d", "vllm-agg-vllmdecodeworker-9f8e7d6c"],
            "runtimeNamespace": "default-vllm-agg",
            "replicas": 3,
            "updatedReplicas": 1,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "scheduledReplicas": 3,
        },
        "Frontend": {"componentKind": "PodClique", "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0},
    },
    "restart": {"observedID": "restart-2", "phase": "Restarting", "inProgress": ["VllmDecodeWorker"]},
    "checkpoints": {
        "VllmDecodeWorker": {
            "checkpointName": "vllm-agg-vllmdecodeworker-ckpt",
            "checkpointID": "3f2a9c0d1e",
            "identityHash": "3f2a9c0d1e",
            "ready": False,
        }
    },
    "rollingUpdate": {
        "phase": "InProgress",
        "startTime": "2026-08-21T10:00:00Z",
        "endTime": "2026-08-21T10:05:00Z",
        "updatedComponents": ["VllmDecodeWorker"],
    },
    "placement": {"score": 0.75, "state": "Partial"},
}


def kinds(value: Any) -> Any:
    """The same tree with every leaf replaced by its JSON kind (``boolean``, ``number``, ...)."""
    if isinstance(value, dict):
        return {key: kinds(item) for key, item in value.items()}
    if isinstance(value, list):
        return [kinds(item) for item in value]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def through_struct(document: dict[str, Any]) -> Any:
    return msgspec.to_builtins(msgspec.convert(document, DynamoGraphDeployment))


def through_json(document: dict[str, Any]) -> Any:
    decoded = msgspec.json.decode(msgspec.json.encode(document), type=DynamoGraphDeployment)
    return msgspec.json.decode(msgspec.json.encode(decoded))


def encode_names(model: type[msgspec.Struct]) -> set[str]:
    return {field.encode_name for field in msgspec.structs.fields(model)}


def with_full_status() -> dict[str, Any]:
    _, _, document = next(d for d in UPSTREAM_DGDS if d[2]["apiVersion"] == API_VERSION)
    return {**document, "status": FULL_STATUS}


@pytest.mark.parametrize("document", V1BETA1)
def test_upstream_v1beta1_dgd_round_trips_through_the_struct_unchanged(document: dict[str, Any]) -> None:
    # given an upstream v1beta1 DGD
    # when it is converted to the model and back to plain values
    result = through_struct(document)
    # then it is the same document, with the same kind of value at every leaf
    assert result == document
    assert kinds(result) == kinds(document)


@pytest.mark.parametrize("document", V1BETA1)
def test_upstream_v1beta1_dgd_round_trips_through_json_bytes_unchanged(document: dict[str, Any]) -> None:
    # given an upstream v1beta1 DGD
    # when it is decoded from JSON bytes into the model and encoded to JSON again
    result = through_json(document)
    # then it is the same document, with the same kind of value at every leaf
    assert result == document
    assert kinds(result) == kinds(document)


@pytest.mark.parametrize("document", V1ALPHA1)
def test_upstream_v1alpha1_dgd_converts_to_a_v1beta1_dgd_that_round_trips_unchanged(
    document: dict[str, Any],
) -> None:
    # given an upstream v1alpha1 DGD converted to v1beta1
    converted = dgd_to_v1beta1(document)
    # when the converted document goes through the struct, and through JSON bytes
    via_struct, via_json = through_struct(converted), through_json(converted)
    # then it is a v1beta1 DGD and both ways give it back unchanged
    assert converted["apiVersion"] == API_VERSION
    assert via_struct == converted
    assert kinds(via_struct) == kinds(converted)
    assert via_json == converted
    assert kinds(via_json) == kinds(converted)


def test_upstream_data_has_dgds_of_both_versions() -> None:
    # given the upstream DGD examples, fixtures and golden inputs
    # when they are split by API version
    counts = (len(V1BETA1), len(V1ALPHA1))
    # then both versions are present, so neither round-trip test above passes vacuously
    assert counts[0] >= 1
    assert counts[1] >= 1


def test_full_status_example_fills_every_status_field_of_the_model() -> None:
    # given the full status example
    status = FULL_STATUS
    # when its keys are compared with the JSON names of every status model
    components = set().union(*(entry.keys() for entry in status["components"].values()))
    conditions = set().union(*(entry.keys() for entry in status["conditions"]))
    # then no field is left out, so the round-trip tests below cover all of them
    assert set(status) == encode_names(DGDStatus)
    assert components == encode_names(ComponentReplicaStatus)
    assert conditions == encode_names(Condition)
    assert set(status["restart"]) == encode_names(RestartStatus)
    assert set(status["checkpoints"]["VllmDecodeWorker"]) == encode_names(ComponentCheckpointStatus)
    assert set(status["rollingUpdate"]) == encode_names(RollingUpdateStatus)
    assert set(status["placement"]) == encode_names(PlacementStatus)
    assert {c["type"] for c in status["conditions"]} == {"Ready", "TopologyLevelsAvailable"}


def test_dgd_with_a_full_status_round_trips_through_the_struct_unchanged() -> None:
    # given a DGD whose status has every field filled
    document = with_full_status()
    # when it is converted to the model and back to plain values
    result = through_struct(document)
    # then it is the same document, status included
    assert result == document
    assert kinds(result) == kinds(document)


def test_dgd_with_a_full_status_round_trips_through_json_bytes_unchanged() -> None:
    # given a DGD whose status has every field filled
    document = with_full_status()
    # when it is decoded from JSON bytes into the model and encoded to JSON again
    result = through_json(document)
    # then it is the same document, status included
    assert result == document
    assert kinds(result) == kinds(document)
