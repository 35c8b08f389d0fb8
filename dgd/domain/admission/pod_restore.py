"""The pod checkpoint-restore mutator (dgd-domain §10.6 (b), supplement §4.1, §4.7), as pure functions.

An ``Immediate`` checkpointed component's pods are rendered cold, carrying only the restore-candidate
annotations. When such a pod is created after its DynamoCheckpoint is ``Ready``, this mutator reshapes
it with the render-time restore (``dgd.domain.checkpoint_restore.restore_pod``: seccomp profile,
storage and control volumes, standby env, a patient startup probe, restore-target metadata, the
candidate annotations removed) and answers the change as a JSON patch.

It never refuses a pod: every request it leaves alone is allowed with the reason why (as upstream's
``admission.Allowed(reason)``: code 200 and the reason as the message), and so is a pod whose
checkpoint cannot be read or used. Reading the checkpoint is the caller's business, so the rules
stay pure and the read happens where I/O may: ``candidate`` says which checkpoint a request needs
(or answers it outright), the caller reads it, ``mutate_pod`` decides.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import msgspec

from dgd.domain.admission.json_patch import diff
from dgd.domain.admission.webhooks import AdmissionSettings, allowed
from dgd.domain.checkpoint import (
    ARTIFACT_VERSION,
    CHECKPOINT_ID,
    CHECKPOINT_NAME,
    IMMEDIATE,
    RESTORE_CANDIDATE,
    TARGET_CONTAINERS,
    CheckpointInfo,
    observed_id,
)
from dgd.domain.checkpoint_restore import restore_pod
from dgd.domain.metadata_keys import COMPONENT, DYNAMO_NAMESPACE, SELECTOR
from dgd.messages.admission import AdmissionRequest, AdmissionResponse
from dgd.messages.base import JSONObject

#: The label of a checkpoint Job's source pod (never restored into).
CHECKPOINT_SOURCE = "nvidia.com/snapshot-is-checkpoint-source"
#: The labels the operator stamps on every pod of a component; a candidate without them is not ours.
OPERATOR_LABELS = (COMPONENT, DYNAMO_NAMESPACE, SELECTOR)


class Candidate(NamedTuple):
    """A pod create the mutator may reshape: the namespace it is created in, and the name of the
    DynamoCheckpoint there it asks to be restored from."""

    namespace: str
    checkpoint: str


class Unavailable(msgspec.Struct, frozen=True):
    """The candidate's checkpoint could not be read: why (not found, forbidden, timed out, …)."""

    why: str


def candidate(request: AdmissionRequest, settings: AdmissionSettings) -> Candidate | AdmissionResponse:
    """The checkpoint a pod create needs read before it can be answered, or the answer to a request
    that needs none: anything but a create, the checkpoint gate off, a pod already shaped for a
    checkpoint (a restore target or a checkpoint source), one that is no candidate, names no
    checkpoint or lacks the operator's labels."""
    pod = request.object
    if request.operation != "CREATE" or pod is None:
        return _skipped(request, "not a pod create")
    if not settings.checkpoint_enabled:
        return _skipped(request, "checkpoint disabled")
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    # A pod carrying a checkpoint identity already is what a restore would make it, or a source.
    if labels.get(CHECKPOINT_ID) or labels.get(CHECKPOINT_SOURCE):
        return _skipped(request, "pod is already checkpoint-shaped")
    if annotations.get(RESTORE_CANDIDATE) != "true":
        return _skipped(request, "pod is not a checkpoint restore candidate")
    name = annotations.get(CHECKPOINT_NAME)
    if not name:
        return _skipped(request, "restore candidate has no checkpoint name")
    if not all(labels.get(key) for key in OPERATOR_LABELS):
        return _skipped(request, "restore candidate is not operator-stamped")
    return Candidate(metadata.get("namespace") or request.namespace or "", name)


def mutate_pod(
    request: AdmissionRequest, settings: AdmissionSettings, checkpoint: JSONObject | Unavailable
) -> AdmissionResponse:
    """The answer to a pod create (§10.6 (b)), given the DynamoCheckpoint its ``candidate`` names as
    read (or why it could not be): reshaped as the render-time restore shapes a pod when that
    checkpoint is Ready, else allowed unchanged with the reason."""
    wanted = candidate(request, settings)
    if isinstance(wanted, AdmissionResponse):
        return wanted
    if isinstance(checkpoint, Unavailable):
        return _skipped(request, f"checkpoint not available: {checkpoint.why}")
    if (checkpoint.get("status") or {}).get("phase") != "Ready":
        return _skipped(request, "checkpoint not ready")
    identifier = observed_id(checkpoint)
    if not identifier:
        return _skipped(request, "checkpoint ID unavailable")
    pod: JSONObject = request.object or {}
    metadata = pod.get("metadata") or {}
    annotations: dict[str, str] = metadata.get("annotations") or {}
    try:
        targets = target_containers(annotations.get(TARGET_CONTAINERS))
    except ValueError as error:
        return _skipped(request, f"checkpoint target containers invalid: {error}")
    spec = pod.get("spec") or {}
    present = {container.get("name") for container in spec.get("containers") or []}
    missing = [name for name in targets if name not in present]
    if missing:
        return _skipped(
            request, f"checkpoint restore injection unavailable: no container named {missing[0]!r} in the pod"
        )
    checkpoint_annotations = (checkpoint.get("metadata") or {}).get("annotations") or {}
    info = CheckpointInfo(
        enabled=True,
        exists=True,
        name=wanted.checkpoint,
        checkpoint_id=identifier,
        artifact_version=checkpoint_annotations.get(ARTIFACT_VERSION) or "1",
        ready=True,
        startup_policy=IMMEDIATE,
        targets=targets,
    )
    # The same mutation as the render-time restore, applied to what the API server sent.
    shaped_spec, labels, shaped_annotations = restore_pod(
        spec, metadata.get("labels") or {}, annotations, info, settings.checkpoint
    )
    shaped = copy.deepcopy(pod)
    shaped["metadata"] = {**metadata, "labels": labels, "annotations": shaped_annotations}
    shaped["spec"] = shaped_spec
    return allowed(request, patch=diff(pod, shaped))


def target_containers(value: str | None) -> tuple[str, ...]:
    """The containers a candidate names to restore into (``a,b``: trimmed, at least one, none twice);
    ``ValueError`` saying what is wrong with the annotation."""
    if value is None or not value.strip():
        raise ValueError(f"missing required {TARGET_CONTAINERS} annotation")
    names: list[str] = []
    for part in value.split(","):
        name = part.strip()
        if not name:
            raise ValueError(f"empty container name in {TARGET_CONTAINERS}={value!r}")
        if name in names:
            raise ValueError(f"duplicate container name {name!r} in {TARGET_CONTAINERS}={value!r}")
        names.append(name)
    return tuple(names)


def _skipped(request: AdmissionRequest, reason: str) -> AdmissionResponse:
    """The pod is admitted unchanged, saying why."""
    return allowed(request, reason=reason)
