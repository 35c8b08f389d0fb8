"""The pod checkpoint-restore mutator (dgd-domain §10.6 (b), supplement §4.7) on a pod-create review in
the shape kube-apiserver sends it (``reviews/pod-create-restore-candidate.json``: a Grove worker pod
marked as a restore candidate): every skip allowed with its reason, and the reshaping the same as the
render-time restore."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dgd.domain.admission import json_patch
from dgd.domain.admission.pod_restore import Candidate, Unavailable, candidate, mutate_pod
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.domain.checkpoint import CheckpointInfo
from dgd.domain.checkpoint_restore import restore_pod
from dgd.messages.admission import AdmissionRequest, AdmissionResponse, AdmissionReviewRequest
from dgd.messages.config import CheckpointConfig, CheckpointStorage, PVCStorage, SeccompConfig

REVIEW = Path(__file__).parent / "reviews" / "pod-create-restore-candidate.json"
CHECKPOINT = "checkpoint-5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"
ID = "5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"
STORAGE = CheckpointStorage(type="pvc", pvc=PVCStorage(pvc_name="snapshots", base_path="/checkpoints/"))
SETTINGS = AdmissionSettings(checkpoint=CheckpointConfig(enabled=True, storage=STORAGE))


def recorded() -> dict[str, Any]:
    """The pod of the review (a fresh copy to change)."""
    review: dict[str, Any] = json.loads(REVIEW.read_text())
    pod: dict[str, Any] = review["request"]["object"]
    return pod


def request(pod: dict[str, Any] | None = None, *, operation: str = "CREATE") -> AdmissionRequest:
    """The review's request, with ``pod`` as its object."""
    review = json.loads(REVIEW.read_text())
    review["request"]["operation"] = operation
    if pod is not None:
        review["request"]["object"] = pod
    decoded = msgspec.json.decode(json.dumps(review), type=AdmissionReviewRequest).request
    assert decoded is not None
    return decoded


def checkpoint(phase: str = "Ready", *, version: str | None = "2", **status: str) -> dict[str, Any]:
    annotations = {"nvidia.com/snapshot-artifact-version": version} if version else {}
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoCheckpoint",
        "metadata": {"name": CHECKPOINT, "namespace": "team-a", "annotations": annotations},
        "status": {"phase": phase, "checkpointID": ID, **status},
    }


def reason(response: AdmissionResponse) -> str:
    """Why an unchanged pod was allowed (failing the test if it was changed or refused)."""
    assert response.allowed and response.patch is None and response.status is not None
    assert response.status.code == 200
    return response.status.message


def patched(pod: dict[str, Any], response: AdmissionResponse) -> dict[str, Any]:
    assert response.allowed and response.patch is not None and response.patch_type == "JSONPatch"
    result: dict[str, Any] = json_patch.apply(pod, json.loads(response.patch))
    return result


def test_a_candidate_names_the_checkpoint_to_read_in_the_pods_namespace() -> None:
    assert candidate(request(), SETTINGS) == Candidate("team-a", CHECKPOINT)


def test_a_candidate_whose_checkpoint_is_ready_is_reshaped_exactly_as_render_time_restore_shapes_it() -> None:
    # given the recorded candidate and its Ready checkpoint (artifact version 2)
    pod = recorded()

    # when the mutator answers
    response = mutate_pod(request(), SETTINGS, checkpoint())

    # then the patch turns the pod into what restore_pod makes of it, and nothing else changes
    info = CheckpointInfo(
        enabled=True,
        exists=True,
        name=CHECKPOINT,
        checkpoint_id=ID,
        artifact_version="2",
        ready=True,
        targets=("main",),
    )
    spec, labels, annotations = restore_pod(
        pod["spec"], pod["metadata"]["labels"], pod["metadata"]["annotations"], info, SETTINGS.checkpoint
    )
    expected = copy.deepcopy(pod)
    expected["metadata"].update(labels=labels, annotations=annotations)
    expected["spec"] = spec
    assert patched(pod, response) == expected
    # and that is a restore target: the candidate annotations gone, the restore metadata there
    shaped = patched(pod, response)["metadata"]
    assert shaped["labels"]["nvidia.com/snapshot-is-restore-target"] == "true"
    assert shaped["labels"]["nvidia.com/snapshot-checkpoint-id"] == ID
    assert shaped["annotations"] == {
        "nvidia.com/dynamo-operator-origin-version": "1.4.0",
        "nvidia.com/snapshot-artifact-version": "2",
        "nvidia.com/snapshot-storage-base-path": "/checkpoints",
        "nvidia.com/snapshot-storage-type": "pvc",
        "nvidia.com/snapshot-target-containers": "main",
    }
    # and the patch is of what changed only: the owner, the other containers' fields stay untouched
    operations = json.loads(response.patch or b"[]")
    assert not any(op["path"].startswith("/metadata/ownerReferences") for op in operations)
    assert response.uid == "3b1f8a52-5c0e-4d7a-9a43-6f2a1c9d0e11"


def test_the_seccomp_profile_follows_the_configuration() -> None:
    custom = msgspec.structs.replace(
        SETTINGS, checkpoint=CheckpointConfig(enabled=True, seccomp=SeccompConfig(profile="profiles/x.json"))
    )
    off = msgspec.structs.replace(
        SETTINGS, checkpoint=CheckpointConfig(enabled=True, seccomp=SeccompConfig(disabled=True))
    )

    with_profile = patched(recorded(), mutate_pod(request(), custom, checkpoint()))
    without = patched(recorded(), mutate_pod(request(), off, checkpoint()))

    assert with_profile["spec"]["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "profiles/x.json",
    }
    assert without["spec"]["securityContext"] == {}


def test_several_target_containers_are_each_shaped() -> None:
    # given a candidate restoring into two engine containers
    pod = recorded()
    sidecar = {**copy.deepcopy(pod["spec"]["containers"][0]), "name": "engine-1"}
    pod["spec"]["containers"].append(sidecar)
    pod["metadata"]["annotations"]["nvidia.com/snapshot-target-containers"] = "main, engine-1"

    shaped = patched(pod, mutate_pod(request(pod), SETTINGS, checkpoint()))

    for container in shaped["spec"]["containers"]:
        assert {"name": "DYN_SNAPSHOT_RESTORE_STANDBY", "value": "1"} in container["env"]
    assert shaped["metadata"]["annotations"]["nvidia.com/snapshot-target-containers"] == "main,engine-1"


def test_a_pod_already_shaped_for_its_checkpoint_is_left_untouched() -> None:
    # given the candidate as the mutator shapes it (say, sent again by a retrying client)
    shaped = patched(recorded(), mutate_pod(request(), SETTINGS, checkpoint()))
    shaped["metadata"]["annotations"]["nvidia.com/dynamo-checkpoint-restore-candidate"] = "true"

    # then it is not shaped twice
    response = mutate_pod(request(shaped), SETTINGS, checkpoint())
    assert reason(response) == "pod is already checkpoint-shaped"


def _without(key: str, where: str) -> dict[str, Any]:
    pod = recorded()
    del pod["metadata"][where][key]
    return pod


def _checkpoint_source() -> dict[str, Any]:
    pod = recorded()
    pod["metadata"]["labels"]["nvidia.com/snapshot-is-checkpoint-source"] = "true"
    return pod


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (lambda: request(operation="UPDATE"), "not a pod create"),
        (lambda: request(_checkpoint_source()), "pod is already checkpoint-shaped"),
        (
            lambda: request(_without("nvidia.com/dynamo-checkpoint-restore-candidate", "annotations")),
            "pod is not a checkpoint restore candidate",
        ),
        (
            lambda: request(_without("nvidia.com/dynamo-checkpoint-name", "annotations")),
            "restore candidate has no checkpoint name",
        ),
        (
            lambda: request(_without("nvidia.com/dynamo-component", "labels")),
            "restore candidate is not operator-stamped",
        ),
        (
            lambda: request(_without("nvidia.com/dynamo-namespace", "labels")),
            "restore candidate is not operator-stamped",
        ),
        (
            lambda: request(_without("nvidia.com/selector", "labels")),
            "restore candidate is not operator-stamped",
        ),
    ],
)
def test_a_pod_that_needs_no_checkpoint_read_is_allowed_unchanged_with_the_reason(
    given: Any, expected: str
) -> None:
    # given a request the mutator need not look up a checkpoint for
    review = given()

    # then it says so without a read, and answers the same whatever the checkpoint would have been
    answered = candidate(review, SETTINGS)
    assert isinstance(answered, AdmissionResponse) and reason(answered) == expected
    assert reason(mutate_pod(review, SETTINGS, checkpoint())) == expected


def test_with_the_checkpoint_gate_off_nothing_is_reshaped() -> None:
    off = AdmissionSettings(checkpoint=CheckpointConfig(enabled=False, storage=STORAGE))

    assert reason(mutate_pod(request(), off, checkpoint())) == "checkpoint disabled"


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (
            Unavailable('dynamocheckpoints.nvidia.com "x" not found'),
            'checkpoint not available: dynamocheckpoints.nvidia.com "x" not found',
        ),
        (checkpoint("Creating"), "checkpoint not ready"),
        (checkpoint("Failed"), "checkpoint not ready"),
        ({**checkpoint(), "status": {"phase": "Ready"}}, "checkpoint ID unavailable"),
    ],
)
def test_a_candidate_whose_checkpoint_cannot_be_used_is_allowed_unchanged_with_the_reason(
    found: dict[str, Any] | Unavailable, expected: str
) -> None:
    assert reason(mutate_pod(request(), SETTINGS, found)) == expected


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        (None, "missing required nvidia.com/snapshot-target-containers annotation"),
        ("main,,b", "empty container name in nvidia.com/snapshot-target-containers='main,,b'"),
        ("main,main", "duplicate container name 'main' in nvidia.com/snapshot-target-containers='main,main'"),
    ],
)
def test_a_candidate_with_unusable_target_containers_is_allowed_unchanged(
    targets: str | None, expected: str
) -> None:
    pod = recorded()
    annotations = pod["metadata"]["annotations"]
    annotations.pop("nvidia.com/snapshot-target-containers")
    if targets is not None:
        annotations["nvidia.com/snapshot-target-containers"] = targets

    answer = reason(mutate_pod(request(pod), SETTINGS, checkpoint()))

    assert answer == f"checkpoint target containers invalid: {expected}"


def test_a_candidate_naming_a_container_it_does_not_have_is_allowed_unchanged() -> None:
    pod = recorded()
    pod["metadata"]["annotations"]["nvidia.com/snapshot-target-containers"] = "engine-0"

    answer = reason(mutate_pod(request(pod), SETTINGS, checkpoint()))

    assert answer == "checkpoint restore injection unavailable: no container named 'engine-0' in the pod"


def test_the_artifact_version_defaults_to_1() -> None:
    shaped = patched(recorded(), mutate_pod(request(), SETTINGS, checkpoint(version=None)))

    assert shaped["metadata"]["annotations"]["nvidia.com/snapshot-artifact-version"] == "1"


def test_an_allowed_reason_goes_on_the_wire_as_controller_runtime_answers_it() -> None:
    response = mutate_pod(request(operation="UPDATE"), SETTINGS, checkpoint())

    assert msgspec.to_builtins(response) == {
        "uid": "3b1f8a52-5c0e-4d7a-9a43-6f2a1c9d0e11",
        "allowed": True,
        "status": {"code": 200, "message": "not a pod create", "status": "Success"},
    }
