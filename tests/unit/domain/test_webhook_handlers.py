"""The admission handlers on recorded reviews: the wiring of the rules to the API server's requests
(the rules themselves are tested in test_validation.py and test_admission_*.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec

from dgd.domain.admission.webhooks import (
    AdmissionSettings,
    mutate_dcd,
    mutate_dgd,
    validate_checkpoint,
    validate_dgd,
)
from dgd.messages.admission import AdmissionRequest, AdmissionResponse
from dgd.messages.config import CheckpointConfig
from tests.unit.domain.dgd_cases import small_dgd

SETTINGS = AdmissionSettings(
    operator_principal="system:serviceaccount:dynamo-system:dynamo-operator-controller-manager"
)


def request(
    obj: dict[str, Any] | None,
    *,
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    user: str = "alice",
    kind: str = "DynamoGraphDeployment",
    version: str = "v1beta1",
) -> AdmissionRequest:
    plural = {
        "DynamoGraphDeployment": "dynamographdeployments",
        "DynamoComponentDeployment": "dynamocomponentdeployments",
    }
    return msgspec.convert(
        {
            "uid": "u-1",
            "kind": {"group": "nvidia.com", "version": version, "kind": kind},
            "resource": {
                "group": "nvidia.com",
                "version": version,
                "resource": plural.get(kind, "dynamocheckpoints"),
            },
            "operation": operation,
            "userInfo": {"username": user},
            "name": "demo",
            "namespace": "team-a",
            "object": obj,
            "oldObject": old,
        },
        AdmissionRequest,
    )


def patch_of(response: AdmissionResponse) -> list[dict[str, Any]]:
    assert response.allowed and response.patch is not None
    ops: list[dict[str, Any]] = json.loads(response.patch)
    return ops


def stored(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as the API server stores it after our mutating webhook on create."""
    created = copy.deepcopy(document)
    created["metadata"]["annotations"] = {"nvidia.com/workload-provider": "grove"}
    for component in created["spec"]["components"]:
        component.setdefault("replicas", 1)
        component.setdefault("minAvailable", 1)
    return created


def test_an_update_keeps_the_provider_and_adds_only_missing_defaults() -> None:
    # given a stored DGD, and an update that adds a component field but leaves replicas out
    old = stored(small_dgd(scalingAdapter={}))
    new = copy.deepcopy(old)
    del new["spec"]["components"][1]["replicas"]

    # then the update is given the default replicas back, and the provider is not rewritten
    ops = patch_of(mutate_dgd(request(new, operation="UPDATE", old=old), SETTINGS))
    assert ops == [{"op": "add", "path": "/spec/components/1/replicas", "value": 1}]


def test_replicas_under_a_scaling_adapter_are_the_adapters_and_the_planners_to_change() -> None:
    # given a stored DGD whose worker is scaled by an adapter
    old = stored(small_dgd(scalingAdapter={}))
    scaled = copy.deepcopy(old)
    scaled["spec"]["components"][1]["replicas"] = 3

    # when a user changes its replicas, then it is refused with upstream's words
    refused = validate_dgd(request(scaled, operation="UPDATE", old=old, user="alice"), SETTINGS)
    assert refused.allowed is False and refused.status is not None
    assert refused.status.code == 422
    assert "cannot be modified directly when scaling adapter is enabled" in refused.status.message
    assert "spec.components[1].replicas" in refused.status.message
    # and the operator itself, or a planner's ServiceAccount in any namespace, may
    for user in (SETTINGS.operator_principal or "", "system:serviceaccount:team-b:planner-serviceaccount"):
        assert validate_dgd(request(scaled, operation="UPDATE", old=old, user=user), SETTINGS).allowed


def test_a_restart_may_be_asked_for_on_update_but_not_on_create() -> None:
    old = stored(small_dgd())
    restarted = copy.deepcopy(old)
    restarted["spec"]["restart"] = {"id": "2026-12-02"}

    assert validate_dgd(request(restarted, operation="UPDATE", old=old), SETTINGS).allowed
    on_create = validate_dgd(request(restarted), SETTINGS)
    assert on_create.allowed is False and on_create.status is not None
    assert "spec.restart must be unset on create" in on_create.status.message


def test_deletes_and_a_dgd_being_deleted_are_admitted() -> None:
    old = stored(small_dgd())
    going = copy.deepcopy(old)
    going["metadata"]["deletionTimestamp"] = "2026-12-02T10:00:00Z"
    going["spec"]["components"].pop()  # would be refused on a live object

    assert validate_dgd(request(None, operation="DELETE", old=old), SETTINGS).allowed
    assert validate_dgd(request(going, operation="UPDATE", old=old), SETTINGS).allowed


def test_a_dcd_is_named_after_itself_when_it_names_no_component() -> None:
    dcd = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "demo-worker", "namespace": "team-a"},
        "spec": {"backendFramework": "vllm"},
    }

    ops = patch_of(mutate_dcd(request(dcd, kind="DynamoComponentDeployment"), SETTINGS))

    assert ops == [{"op": "add", "path": "/spec/name", "value": "demo-worker"}]


def test_checkpoints_are_refused_while_the_checkpoint_gate_is_off() -> None:
    checkpoint = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoCheckpoint",
        "metadata": {"name": "ckpt", "namespace": "team-a"},
        "spec": {"identity": {"model": "m", "backendFramework": "vllm"}},
    }
    review = request(checkpoint, kind="DynamoCheckpoint", version="v1alpha1")

    off = validate_checkpoint(review, SETTINGS)
    assert off.allowed is False and off.status is not None
    assert off.status.message == (
        'DynamoCheckpoint.nvidia.com "demo" is invalid: spec: checkpoint functionality is disabled in the '
        "operator configuration"
    )
    gate_on = msgspec.structs.replace(SETTINGS, checkpoint=CheckpointConfig(enabled=True))
    assert validate_checkpoint(review, gate_on).allowed
