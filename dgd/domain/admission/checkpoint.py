"""Admission of a DynamoCheckpoint, create and update (supplement §4.7, fields in §5.2).

A DynamoCheckpoint travels as raw JSON in this project, so the rules read plain values; the CRD schema
has already checked the types by the time admission runs.

Not checked yet: for intra-pod GMS upstream also requires the job pod template to carry the GMS
wiring (shared volume, init sidecar, socket-directory env, resource claims and client mounts, pod
resource claim). The specification does not name those objects, so only the target container is checked.
"""

from __future__ import annotations

from typing import Any

from dgd.domain.admission.errors import FieldError, show
from dgd.domain.podtemplate import MAIN_CONTAINER, containers

DISABLED = "checkpoint functionality is disabled in the operator configuration"
_IDENTITY_DEFAULTS = {"tensorParallelSize": 1, "pipelineParallelSize": 1}


def validate_checkpoint(
    document: dict[str, Any], old: dict[str, Any] | None, *, checkpoint_enabled: bool
) -> list[FieldError]:
    """Every problem of ``document``, admitted as a create (``old`` is ``None``) or an update of ``old``.

    With the checkpoint gate off nothing else is checked: no checkpoint may be written at all, except
    one being deleted, which is always allowed so its finalizer can be removed.
    """
    if old is not None and _object(document.get("metadata")).get("deletionTimestamp") is not None:
        return []
    if not checkpoint_enabled:
        return [FieldError("spec", DISABLED)]
    spec = _object(document.get("spec"))
    errors = _gpu_memory_service(spec)
    # CEL rule of the CRD: the identity is what the checkpoint is of; it never changes.
    if old is not None and _identity(spec) != _identity(_object(old.get("spec"))):
        errors.append(FieldError("spec.identity", "spec.identity is immutable after creation"))
    return errors


def _gpu_memory_service(spec: dict[str, Any]) -> list[FieldError]:
    """An enabled GMS must be intra-pod, and its job pod template must hold the target container."""
    gms = _object(spec.get("gpuMemoryService"))
    if gms.get("enabled") is not True:
        return []
    mode = gms.get("mode") or "intraPod"
    if mode != "intraPod":
        return [FieldError("spec.gpuMemoryService.mode", f'{show(mode)} is not one of "intraPod"')]
    job = _object(spec.get("job"))
    names = {c.get("name") for c in containers(_object(job.get("podTemplateSpec")))}
    target = job.get("targetContainerName")
    if target:
        if target not in names:
            return [
                FieldError(
                    "spec.job.targetContainerName",
                    f"{show(target)} does not name a container in podTemplateSpec.spec.containers",
                )
            ]
    elif MAIN_CONTAINER not in names:
        return [
            FieldError(
                "spec.job.podTemplateSpec.spec.containers",
                f'must contain the default target container "{MAIN_CONTAINER}"',
            )
        ]
    return []


def _identity(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec.identity`` as the API server stores it: schema defaults applied, nulls dropped."""
    identity = {key: value for key, value in _object(spec.get("identity")).items() if value is not None}
    return {**_IDENTITY_DEFAULTS, **identity}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
