"""Admission of DynamoCheckpoints, create and update (supplement §4.7, fields in §5.2)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dgd.domain.admission.checkpoint import validate_checkpoint


def _document(*, gms: dict[str, Any] | None = None, **job: Any) -> dict[str, Any]:
    """A small DynamoCheckpoint with a ``main`` container; ``job`` sets job fields."""
    spec: dict[str, Any] = {
        "identity": {"model": "Qwen/Qwen3-0.6B", "backendFramework": "vllm"},
        "job": {
            "podTemplateSpec": {"spec": {"containers": [{"name": "main", "image": "vllm:1.5.0"}]}},
            **job,
        },
    }
    if gms is not None:
        spec["gpuMemoryService"] = gms
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoCheckpoint",
        "metadata": {"name": "ckpt", "namespace": "team-a"},
        "spec": spec,
    }


def _messages(
    document: dict[str, Any], old: dict[str, Any] | None = None, *, enabled: bool = True
) -> list[str]:
    return [str(e) for e in validate_checkpoint(document, old, checkpoint_enabled=enabled)]


def test_valid_checkpoint_is_admitted() -> None:
    """§4.7: a checkpoint breaking no rule is admitted, on create and on an unchanged update."""
    # given a valid checkpoint
    document = _document()

    # then it is admitted as a create and as an update
    assert _messages(document) == []
    assert _messages(copy.deepcopy(document), document) == []


@pytest.mark.parametrize("update", [False, True])
def test_checkpoints_are_refused_with_the_gate_off(update: bool) -> None:
    """§4.7: with the checkpoint gate off, creates and updates are forbidden."""
    # given a valid checkpoint
    document = _document()

    # when it is admitted with the gate off
    messages = _messages(document, copy.deepcopy(document) if update else None, enabled=False)

    # then it is forbidden at spec
    assert messages == ["spec: checkpoint functionality is disabled in the operator configuration"]


def test_checkpoint_being_deleted_is_admitted_with_the_gate_off() -> None:
    """§4.7: an update of a checkpoint being deleted is not checked (docs/decisions.md)."""
    # given a checkpoint being deleted
    old = _document()
    new = copy.deepcopy(old)
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    # then its update (finalizer removal) is admitted even with the gate off
    assert _messages(new, old, enabled=False) == []


def test_inter_pod_gms_is_not_supported() -> None:
    """§4.7: an enabled inter-pod GMS is NotSupported."""
    # given a checkpoint with inter-pod GMS
    document = _document(gms={"enabled": True, "mode": "interPod"})

    # then it is refused
    assert _messages(document) == ['spec.gpuMemoryService.mode: "interPod" is not one of "intraPod"']


def test_disabled_gms_is_not_checked() -> None:
    """§4.7: the GMS rules apply only with gpuMemoryService.enabled."""
    # given a disabled inter-pod GMS and a job without a main container
    document = _document(gms={"enabled": False, "mode": "interPod"})
    document["spec"]["job"]["podTemplateSpec"]["spec"]["containers"][0]["name"] = "engine"

    # then nothing is refused
    assert _messages(document) == []


def test_intra_pod_gms_needs_the_default_target_container() -> None:
    """§4.7: with intra-pod GMS and no targetContainerName, the template must contain "main"."""
    # given an intra-pod GMS checkpoint whose container is not called main
    document = _document(gms={"enabled": True})
    document["spec"]["job"]["podTemplateSpec"]["spec"]["containers"][0]["name"] = "engine"

    # then it is refused
    assert _messages(document) == [
        'spec.job.podTemplateSpec.spec.containers: must contain the default target container "main"'
    ]


@pytest.mark.parametrize(("target", "refused"), [("engine", True), ("main", False)])
def test_intra_pod_gms_target_container_must_exist(target: str, refused: bool) -> None:
    """§4.7: with intra-pod GMS, targetContainerName must name a template container."""
    # given an intra-pod GMS checkpoint naming its target container
    document = _document(gms={"enabled": True, "mode": "intraPod"}, targetContainerName=target)

    # then a name that is not a container is refused
    expected = [
        'spec.job.targetContainerName: "engine" does not name a container in podTemplateSpec.spec.containers'
    ]
    assert _messages(document) == (expected if refused else [])


def test_identity_is_immutable() -> None:
    """§4.7 (CEL): spec.identity is immutable after creation."""
    # given an update that changes the model
    old = _document()
    new = copy.deepcopy(old)
    new["spec"]["identity"]["model"] = "Qwen/Qwen3-8B"

    # then it is refused
    assert _messages(new, old) == ["spec.identity: spec.identity is immutable after creation"]


def test_identity_defaults_are_no_change() -> None:
    """§4.7 (CEL): the identity is compared as stored, so spelled-out schema defaults are no change."""
    # given an update that spells out the default parallel sizes
    old = _document()
    new = copy.deepcopy(old)
    new["spec"]["identity"].update(tensorParallelSize=1, pipelineParallelSize=1)

    # then it is admitted
    assert _messages(new, old) == []
