"""Pods restored from checkpoints (dgd-domain §10.5, §10.6), as pure functions.

A checkpointed component's DCD names its checkpoint (and waits for it at 0 replicas while gated); a
ready ``WaitForCheckpoint`` checkpoint shapes the pods at render time (seccomp profile, storage and
control volumes, standby env, a patient startup probe, restore-target metadata); an ``Immediate`` one
only marks the pod template as a restore candidate, which the pod-create webhook reshapes.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping

from dgd.domain.checkpoint import (
    ARTIFACT_VERSION,
    CHECKPOINT_ID,
    CHECKPOINT_NAME,
    CONTROL_DIR,
    DEFAULT_SECCOMP_PROFILE,
    IMMEDIATE,
    RESTORE_CANDIDATE,
    RESTORE_TARGET,
    STARTUP_POLICY,
    STORAGE_BASE_PATH,
    STORAGE_TYPE,
    TARGET_CONTAINERS,
    WAIT,
    CheckpointInfo,
    is_gated,
)
from dgd.domain.metadata_keys import COMPONENT
from dgd.domain.pod_merge import JSON
from dgd.messages.config import CheckpointConfig, OperatorConfig

_CANDIDATE_KEYS = (RESTORE_CANDIDATE, CHECKPOINT_NAME, STARTUP_POLICY)
_PROBE_FAILURES = 1800


def dcd_adjustment(spec: JSON, info: CheckpointInfo) -> JSON:
    """§10.5: the DCD spec (JSON) of a checkpointed component, adjusted."""
    out = copy.deepcopy(spec)
    if info.exists and info.name:
        experimental = dict(out.get("experimental") or {})
        experimental["checkpoint"] = {
            "enabled": True,
            "checkpointRef": info.name,
            "startupPolicy": info.startup_policy,
        }
        out["experimental"] = experimental
    if is_gated(info):
        out["replicas"] = 0
        return out
    if info.startup_policy == IMMEDIATE and info.exists:
        out["podTemplate"] = candidate_template(out.get("podTemplate") or {}, info)
    return out


def restore_candidate(info: CheckpointInfo) -> dict[str, str]:
    """§10.6 (b): the annotations that make a pod a candidate to restore from ``info``'s checkpoint."""
    return {
        RESTORE_CANDIDATE: "true",
        CHECKPOINT_NAME: info.name or "",
        STARTUP_POLICY: IMMEDIATE,
        TARGET_CONTAINERS: ",".join(info.target_containers()),
    }


def candidate_template(template: JSON, info: CheckpointInfo) -> JSON:
    """§10.6 (b): the pod template carries the restore-candidate annotations only."""
    out = copy.deepcopy(template)
    metadata = dict(out.get("metadata") or {})
    annotations = {**(metadata.get("annotations") or {}), **restore_candidate(info)}
    metadata["annotations"] = dict(sorted(annotations.items()))
    out["metadata"] = metadata
    return {key: out[key] for key in sorted(out, key=lambda k: (k != "metadata", k != "spec"))}


def restore_pod(
    pod_spec: JSON,
    labels: dict[str, str],
    annotations: dict[str, str],
    info: CheckpointInfo,
    config: CheckpointConfig,
) -> tuple[JSON, dict[str, str], dict[str, str]]:
    """§10.6 (a): a pod spec and its metadata shaped to restore from the (ready) checkpoint, with the
    operator's checkpoint storage and seccomp configuration. The admission-time restore (§10.6 (b),
    ``dgd.domain.admission.pod_restore``) shapes a pod with this same function."""
    spec = copy.deepcopy(pod_spec)
    targets = set(info.target_containers())
    storage = config.storage.pvc
    seccomp = config.seccomp
    if not seccomp.disabled:
        security = dict(spec.get("securityContext") or {})
        security["seccompProfile"] = {
            "type": "Localhost",
            "localhostProfile": seccomp.profile or DEFAULT_SECCOMP_PROFILE,
        }
        spec["securityContext"] = security
    volumes = [
        v
        for v in spec.get("volumes") or []
        if v.get("name") not in ("checkpoint-storage", "snapshot-control")
    ]
    base_path = posixpath.normpath(storage.base_path) if storage.base_path else ""
    if storage.pvc_name and base_path:
        volumes.append(
            {"name": "checkpoint-storage", "persistentVolumeClaim": {"claimName": storage.pvc_name}}
        )
    volumes.append({"name": "snapshot-control", "emptyDir": {}})
    spec["volumes"] = volumes
    containers = []
    for container in spec.get("containers") or []:
        if container.get("name") in targets:
            container = _restore_container(container, storage.pvc_name and base_path)
        containers.append(container)
    spec["containers"] = containers
    labels = {**labels, RESTORE_TARGET: "true", CHECKPOINT_ID: info.checkpoint_id or ""}
    annotations = {k: v for k, v in annotations.items() if k not in _CANDIDATE_KEYS}
    annotations[ARTIFACT_VERSION] = info.artifact_version
    annotations[TARGET_CONTAINERS] = ",".join(info.target_containers())
    if storage.pvc_name and base_path:
        annotations[STORAGE_TYPE] = "pvc"
        annotations[STORAGE_BASE_PATH] = base_path
    return spec, dict(sorted(labels.items())), dict(sorted(annotations.items()))


def _restore_container(container: JSON, base_path: str) -> JSON:
    out = copy.deepcopy(container)
    name = str(out.get("name"))
    mounts = [
        m
        for m in out.get("volumeMounts") or []
        if m.get("name") not in ("checkpoint-storage", "snapshot-control")
    ]
    if base_path:
        mounts.append({"name": "checkpoint-storage", "mountPath": base_path})
    mounts.append({"name": "snapshot-control", "mountPath": CONTROL_DIR, "subPath": name})
    out["volumeMounts"] = mounts
    env = [
        e
        for e in out.get("env") or []
        if e.get("name") not in ("DYN_SNAPSHOT_CONTROL_DIR", "DYN_SNAPSHOT_RESTORE_STANDBY")
    ]
    env += [
        {"name": "DYN_SNAPSHOT_CONTROL_DIR", "value": CONTROL_DIR},
        {"name": "DYN_SNAPSHOT_RESTORE_STANDBY", "value": "1"},
    ]
    out["env"] = env
    source = out.get("startupProbe") or out.get("livenessProbe") or out.get("readinessProbe")
    if source is not None:
        probe = copy.deepcopy(source)
        probe.update(
            initialDelaySeconds=0, periodSeconds=1, failureThreshold=_PROBE_FAILURES, successThreshold=1
        )
    else:
        probe = {
            "exec": {"command": ["cat", f"{CONTROL_DIR}/restore-complete"]},
            "periodSeconds": 1,
            "failureThreshold": _PROBE_FAILURES,
        }
    out["startupProbe"] = probe
    return out


def restore_cliques(pcs: JSON, infos: Mapping[str, CheckpointInfo], config: OperatorConfig) -> JSON:
    """The PodCliqueSet (JSON) with each checkpointed component's cliques shaped to restore (§10.6):
    render-time restore once a WaitForCheckpoint checkpoint is ready, restore-candidate annotations
    for an Immediate one that exists."""
    if not any(info.enabled for info in infos.values()):
        return pcs
    out = copy.deepcopy(pcs)
    for clique in ((out.get("spec") or {}).get("template") or {}).get("cliques") or []:
        info = infos.get((clique.get("labels") or {}).get(COMPONENT, ""))
        if info is None or not info.enabled:
            continue
        labels = dict(clique.get("labels") or {})
        annotations = dict(clique.get("annotations") or {})
        if info.startup_policy == WAIT and info.ready:
            spec = clique.setdefault("spec", {})
            spec["podSpec"], labels, annotations = restore_pod(
                spec.get("podSpec") or {}, labels, annotations, info, config.checkpoint
            )
        elif info.startup_policy == IMMEDIATE and info.exists:
            annotations.update(restore_candidate(info))
        clique["labels"] = dict(sorted(labels.items()))
        clique["annotations"] = dict(sorted(annotations.items())) or None
    return out
