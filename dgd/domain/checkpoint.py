"""Checkpoints (snapshot/restore) of components (dgd-domain §10, supplement §5), as pure functions.

A component with ``experimental.checkpoint.enabled`` resolves to a ``CheckpointInfo``: the
``DynamoCheckpoint`` it restores from (one the DGD creates and owns, ``checkpoint-<id>``, or the
user's ``checkpointRef``), whether that checkpoint is ``Ready``, and the startup policy.
``is_gated`` is **the** WaitForCheckpoint predicate: both programs, the Grove scaler and the
scaling-adapter step ask it, and nothing else decides whether a component waits.
``checkpoint_refused`` is **the** checkpoint gate: the refusals of ``dgd.domain.preflight`` and the
``checkpoint-storage`` child both ask it. The
``checkpoint-storage`` child actor does the reads and writes; this module decides what they are.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from dgd.domain.metadata_keys import COMPONENT, GRAPH_NAME, WORKER_HASH
from dgd.domain.pod_merge import JSON
from dgd.domain.projection import ReconcileResult
from dgd.messages.component import ComponentCheckpoint, ComponentSpec
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import ComponentCheckpointStatus, DynamoGraphDeployment

API_VERSION = "nvidia.com/v1alpha1"
KIND = "DynamoCheckpoint"
FINALIZER = "nvidia.com/finalizer"
AUTO = "nvidia.com/dynamo-auto-checkpoint"
DELETION_POLICY = "nvidia.com/dynamo-checkpoint-deletion-policy"
ARTIFACT_VERSION = "nvidia.com/snapshot-artifact-version"
CHECKPOINT_ID = "nvidia.com/snapshot-checkpoint-id"
RESTORE_TARGET = "nvidia.com/snapshot-is-restore-target"
TARGET_CONTAINERS = "nvidia.com/snapshot-target-containers"
STORAGE_TYPE = "nvidia.com/snapshot-storage-type"
STORAGE_BASE_PATH = "nvidia.com/snapshot-storage-base-path"
RESTORE_CANDIDATE = "nvidia.com/dynamo-checkpoint-restore-candidate"
CHECKPOINT_NAME = "nvidia.com/dynamo-checkpoint-name"
STARTUP_POLICY = "nvidia.com/dynamo-checkpoint-startup-policy"

WAITING_FOR_CHECKPOINT = "waiting_for_checkpoint"
WAIT = "WaitForCheckpoint"
IMMEDIATE = "Immediate"
DEFAULT_SECCOMP_PROFILE = "profiles/block-iouring.json"
CONTROL_DIR = "/snapshot-control"


class CheckpointInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a component's checkpoint is, as one reconcile resolved it (§10.3)."""

    enabled: bool = False
    exists: bool = False
    name: str | None = None
    checkpoint_id: str | None = None
    artifact_version: str = "1"
    ready: bool = False
    startup_policy: str = IMMEDIATE
    targets: tuple[str, ...] = ()

    def target_containers(self) -> tuple[str, ...]:
        return self.targets or ("main",)


def is_gated(info: CheckpointInfo | None) -> bool:
    """The WaitForCheckpoint gate (§10.4): the component waits at 0 replicas for its checkpoint."""
    return info is not None and info.enabled and info.startup_policy == WAIT and not info.ready


def gated_components(infos: Mapping[str, CheckpointInfo]) -> frozenset[str]:
    """Every component the gate holds at 0 replicas."""
    return frozenset(name for name, info in infos.items() if is_gated(info))


def config_of(component: ComponentSpec) -> ComponentCheckpoint | None:
    """The component's checkpoint configuration, when checkpointing is on for it."""
    experimental = component.experimental
    found = experimental.checkpoint if experimental is not None else None
    return found if found is not None and found.enabled else None


def checkpoint_refused(component: ComponentSpec, config: OperatorConfig) -> bool:
    """**The** checkpoint gate: ``component`` asks for checkpoints while the operator configuration
    turns them off (``checkpoint.enabled``); such a DGD is refused, never rendered without them."""
    return config_of(component) is not None and not config.checkpoint.enabled


def checkpoint_id(namespace: str, dgd_name: str, dgd_uid: str, component: str, worker_hash: str) -> str:
    """The ID of an automatic checkpoint: a new worker generation is a new checkpoint (§10.3 step 1)."""
    identity = {
        "namespace": namespace,
        "dgdName": dgd_name,
        "dgdUID": dgd_uid,
        "componentName": component,
        "workerHash": worker_hash,
    }
    encoded = json.dumps(identity, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def auto_name(identifier: str) -> str:
    return f"checkpoint-{identifier}"


def observed_id(checkpoint: JSON) -> str | None:
    """A DynamoCheckpoint's ID (supplement §5.2): status, then the deprecated hash, then the label."""
    status = checkpoint.get("status") or {}
    labels = (checkpoint.get("metadata") or {}).get("labels") or {}
    return status.get("checkpointID") or status.get("identityHash") or labels.get(CHECKPOINT_ID)


def info_from(
    checkpoint: JSON | None,
    config: ComponentCheckpoint,
    *,
    fallback_id: str | None = None,
    targets: tuple[str, ...] | None = None,
) -> CheckpointInfo:
    """The info of a component whose checkpoint CR is ``checkpoint`` (``None``: not created yet);
    ``targets`` are the restore's containers when not ``targetContainerName`` (intra-pod failover)."""
    policy = config.startup_policy or IMMEDIATE
    if targets is None:
        targets = (config.target_container_name,) if config.target_container_name else ()
    if checkpoint is None:
        return CheckpointInfo(enabled=True, startup_policy=policy, targets=targets, checkpoint_id=fallback_id)
    metadata = checkpoint.get("metadata") or {}
    status = checkpoint.get("status") or {}
    return CheckpointInfo(
        enabled=True,
        exists=True,
        name=metadata.get("name"),
        checkpoint_id=observed_id(checkpoint) or fallback_id,
        artifact_version=(metadata.get("annotations") or {}).get(ARTIFACT_VERSION) or "1",
        ready=status.get("phase") == "Ready",
        startup_policy=policy,
        targets=targets,
    )


def status_projection(infos: Mapping[str, CheckpointInfo]) -> dict[str, ComponentCheckpointStatus] | None:
    """``status.checkpoints``: one entry per checkpointed component (§10.3)."""
    out = {
        name: ComponentCheckpointStatus(
            checkpoint_name=info.name,
            checkpoint_id=info.checkpoint_id,
            identity_hash=info.checkpoint_id,
            ready=info.ready,
        )
        for name, info in sorted(infos.items())
        if info.enabled
    }
    return out or None


def waiting_overlay(result: ReconcileResult, infos: Mapping[str, CheckpointInfo]) -> ReconcileResult:
    """§6.3 ``applyCheckpointStartupReadiness``: a gated component makes the graph wait for it."""
    waiting = sorted(
        f"{name} ({info.name})" if info.name else name for name, info in infos.items() if is_gated(info)
    )
    if not waiting:
        return result
    return msgspec.structs.replace(
        result,
        state="pending",
        reason=WAITING_FOR_CHECKPOINT,
        message=f"Waiting for checkpoints: {', '.join(waiting)}",
    )


# The automatic DynamoCheckpoint (§10.3 step 4).


def auto_checkpoint(
    dgd: DynamoGraphDeployment,
    component: ComponentSpec,
    *,
    identifier: str,
    worker_hash: str,
    backend: str,
    job_pod_template: JSON,
    owner: JSON | None,
    gpu_memory_service: JSON | None = None,
) -> JSON:
    """The DynamoCheckpoint a DGD creates for ``component``; ``owner`` is its controller reference
    (``None`` under ``Retain``: the checkpoint outlives the DGD); ``gpu_memory_service`` the GMS
    configuration the checkpoint is taken with (intra-pod GMS components)."""
    config = config_of(component)
    assert config is not None
    namespace, name = dgd.metadata.namespace or "", dgd.metadata.name or ""
    labels = {CHECKPOINT_ID: identifier, GRAPH_NAME: name, COMPONENT: component.name}
    if worker_hash:
        labels[WORKER_HASH] = worker_hash
    metadata: JSON = {
        "name": auto_name(identifier),
        "namespace": namespace,
        "labels": dict(sorted(labels.items())),
        "annotations": {
            ARTIFACT_VERSION: "1",
            AUTO: "true",
            DELETION_POLICY: config.deletion_policy or "Delete",
        },
        "finalizers": [FINALIZER],
    }
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    spec: JSON = {} if gpu_memory_service is None else {"gpuMemoryService": gpu_memory_service}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": spec
        | {
            "identity": {
                "model": f"{namespace}/{name}",
                "backendFramework": backend,
                "extraParameters": {
                    "dgdUID": dgd.metadata.uid or "",
                    "component": component.name,
                    "checkpointID": identifier,
                },
            },
            "job": {
                "podTemplateSpec": job_pod_template,
                "targetContainerName": config.target_container_name or "main",
            },
        },
    }


def job_pod_template(pod_spec: JSON, template_metadata: JSON, config: ComponentCheckpoint) -> JSON:
    """The checkpoint Job's pod: the component's rendered pod with only the target container, never
    restarted, with the component's pod-template metadata and the ``job.podTemplate`` overrides."""
    target = config.target_container_name or "main"
    spec = copy.deepcopy(pod_spec)
    spec["containers"] = [c for c in spec.get("containers") or [] if c.get("name") == target]
    spec["restartPolicy"] = "Never"
    template: JSON = {"metadata": copy.deepcopy(template_metadata), "spec": spec}
    overrides = config.job.pod_template if config.job is not None else None
    if overrides:
        template = _merged(template, overrides)
    if not template["metadata"]:
        del template["metadata"]
    return template


def _merged(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = _merged(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(override)


# Deletion (§10.7).


def deletion_plan(checkpoints: Iterable[JSON], dgd_name: str) -> tuple[list[JSON], list[JSON]]:
    """Of the DGD's automatic checkpoints: those to delete, and those to detach (``Retain``)."""
    delete: list[JSON] = []
    detach: list[JSON] = []
    for checkpoint in checkpoints:
        metadata = checkpoint.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        if (metadata.get("labels") or {}).get(GRAPH_NAME) != dgd_name or annotations.get(AUTO) != "true":
            continue
        (detach if annotations.get(DELETION_POLICY) == "Retain" else delete).append(checkpoint)
    return delete, detach


# Storage (§10.2).


class StorageError(ValueError):
    """The checkpoint storage configuration cannot be used (names the config key)."""


def storage_pvc(config: OperatorConfig, namespace: str) -> tuple[str, bool, JSON] | None:
    """The storage PVC: its name, whether to create it when missing, and its body; ``None`` when no
    storage is configured (it is discovered at restore time)."""
    storage = config.checkpoint.storage
    pvc = storage.pvc
    if not storage.type and not pvc.pvc_name and not pvc.base_path:
        return None
    if storage.type and storage.type != "pvc":
        return None  # s3 and oci are accepted and not implemented (§21 item 15)
    if not pvc.pvc_name or not pvc.base_path:
        raise StorageError("checkpoint.storage.pvc: pvcName and basePath are required")
    body: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": pvc.pvc_name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/component": "checkpoint-storage",
                "app.kubernetes.io/managed-by": "dynamo-operator",
                "app.kubernetes.io/name": "dynamo",
            },
        },
        "spec": {
            "accessModes": [pvc.access_mode or "ReadWriteMany"],
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": pvc.size}},
        },
    }
    if pvc.storage_class_name:
        body["spec"]["storageClassName"] = pvc.storage_class_name
    return pvc.pvc_name, pvc.create, body
