"""The workload of a DCD (dcd-controller §2.3.1-§2.3.3): a Deployment, or with the LWS gate on and more
than one node a LeaderWorkerSet ``<dcd>-0``, and the legacy per-replica LeaderWorkerSets and Volcano
PodGroups that LeaderWorkerSet replaces.

The Deployment's rollout strategy comes from the DCD kube annotations (pod-template and preserved
v1alpha1 annotations, never the DCD's own ``metadata.annotations``): ``Recreate`` exactly, else a
rolling update whose bounds are integers or percentages (``25%`` each by default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from dgd.domain.metadata_keys import COMPONENT_TYPE, SELECTOR, SUB_COMPONENT_TYPE
from dgd.domain.pod_merge import JSON
from dgd.domain.render.dcd_identity import Identity
from dgd.domain.render.errors import RenderError
from dgd.messages.dcd import API_VERSION as DCD_API_VERSION
from dgd.messages.dcd import KIND as DCD_KIND

STRATEGY = "nvidia.com/deployment-strategy"
MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
LEGACY_INSTANCE_LABEL = "instance-id"
ROLE_LABEL = "role"
_INTEGER = re.compile(r"[+-]?[0-9]+")
_PERCENT = re.compile(r"[0-9]+%")


def _bound(annotations: Mapping[str, str], key: str) -> int | str:
    """An int-or-string rollout bound. Departure (§2.13 #14): a value that is neither an integer nor a
    percentage is refused here, naming the annotation, instead of being sent to the API server."""
    value = annotations.get(key)
    if value is None:
        return "25%"
    if _INTEGER.fullmatch(value):
        return int(value)
    if _PERCENT.fullmatch(value):
        return value
    raise RenderError(
        f"spec.podTemplate.metadata.annotations[{key}]",
        f'"{value}" must be an integer (such as 1) or a percentage (such as 25%)',
    )


def strategy(annotations: Mapping[str, str]) -> JSON:
    """The Deployment strategy the DCD kube ``annotations`` ask for."""
    if annotations.get(STRATEGY) == "Recreate":
        return {"type": "Recreate"}
    rolling = {
        "maxUnavailable": _bound(annotations, MAX_UNAVAILABLE),
        "maxSurge": _bound(annotations, MAX_SURGE),
    }
    return {"type": "RollingUpdate", "rollingUpdate": rolling}


def _metadata(name: str, identity: Identity, *, annotations: bool) -> JSON:
    meta: JSON = {"name": name, "namespace": identity.namespace}
    if identity.labels:
        meta["labels"] = dict(sorted(identity.labels.items()))
    if annotations and identity.annotations:
        meta["annotations"] = dict(sorted(identity.annotations.items()))
    return meta


def render_deployment(identity: Identity, replicas: int | None, template: JSON) -> JSON:
    """The Deployment of a single-node DCD (or a multinode one with the LWS gate off, rendered ``main``)."""
    spec: JSON = {}
    if replicas is not None:
        spec["replicas"] = replicas
    spec["selector"] = {"matchLabels": {SELECTOR: identity.name}}
    spec["template"] = template
    spec["strategy"] = strategy(identity.annotations)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(identity.name, identity, annotations=True),
        "spec": spec,
    }


def lws_name(dcd_name: str) -> str:
    """``<dcd>-0``: it adopts the pre-native-scaling LeaderWorkerSet and does not collide with the Service."""
    return f"{dcd_name}-0"


def _check_main(template: JSON, what: str) -> None:
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        raise RenderError("spec.podTemplate", f"{what}: No containers found in pod spec")
    main = next((c for c in containers if c.get("name") == "main"), None)
    if main is None:
        raise RenderError("spec.podTemplate", f"{what}: main container not found in pod spec")
    if main.get("command") is None:
        raise RenderError("spec.podTemplate", f"{what}: container Command cannot be nil for LWS pod")
    if not main.get("args"):
        raise RenderError("spec.podTemplate", f"{what}: container Args cannot be empty for LWS pod")


def _lws_template(template: JSON, identity: Identity, workload_type: str, role: str) -> JSON:
    """A leader or worker template: the rendered pod labels under the workload pod labels, the role,
    and no ``nvidia.com/selector`` (LeaderWorkerSet selects its own pods)."""
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.update(identity.labels)
    labels[COMPONENT_TYPE] = workload_type
    if workload_type == "worker" and identity.spec_type in ("prefill", "decode"):
        labels.setdefault(SUB_COMPONENT_TYPE, identity.spec_type)
    labels[ROLE_LABEL] = role
    labels.pop(SELECTOR, None)
    metadata = {**(template.get("metadata") or {}), "labels": dict(sorted(labels.items()))}
    return {**template, "metadata": metadata}


def render_lws(
    identity: Identity, replicas: int | None, leader: JSON, worker: JSON, workload_type: str
) -> JSON:
    """The LeaderWorkerSet of a multinode DCD with the LWS gate on; ``RenderError`` when a role's main
    container lacks a command or arguments (LWS pods are launched through them)."""
    _check_main(leader, "generateLeaderPodTemplateSpec: failed to check main container")
    _check_main(worker, "generateWorkerPodTemplateSpec: failed to check LWS worker main container")
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": _metadata(lws_name(identity.name), identity, annotations=False),
        "spec": {
            "replicas": 1 if replicas is None else replicas,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": identity.nodes,
                "leaderTemplate": _lws_template(leader, identity, workload_type, "leader"),
                "workerTemplate": _lws_template(worker, identity, workload_type, "worker"),
            },
        },
    }


class Removal(msgspec.Struct, frozen=True, kw_only=True):
    """An object to delete if it exists and this DCD is its controller (§2.13 #4, ``docs/decisions.md``)."""

    api_version: str
    kind: str
    name: str


def _controlled_by(obj: JSON, identity: Identity) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    # As metav1.IsControlledBy: by UID (by kind and name for a DCD not yet written, as when rendered offline).
    for ref in refs:
        if not ref.get("controller"):
            continue
        if identity.uid:
            if ref.get("uid") == identity.uid:
                return True
        elif (ref.get("apiVersion"), ref.get("kind"), ref.get("name")) == (
            DCD_API_VERSION,
            DCD_KIND,
            identity.name,
        ):
            return True
    return False


def legacy_cleanup(identity: Identity, legacy: Sequence[JSON]) -> list[Removal]:
    """§2.3.3: of the live LeaderWorkerSets and PodGroups labelled ``instance-id`` in the namespace, the
    ones this DCD controls to delete: every LeaderWorkerSet but ``<dcd>-0``, every PodGroup."""
    removals: list[Removal] = []
    current = lws_name(identity.name)
    for kind in ("LeaderWorkerSet", "PodGroup"):
        for obj in legacy:
            meta = obj.get("metadata") or {}
            if obj.get("kind") != kind or LEGACY_INSTANCE_LABEL not in (meta.get("labels") or {}):
                continue
            if not _controlled_by(obj, identity) or (
                kind == "LeaderWorkerSet" and meta.get("name") == current
            ):
                continue
            api = LWS_API_VERSION if kind == "LeaderWorkerSet" else PODGROUP_API_VERSION
            removals.append(Removal(api_version=api, kind=kind, name=str(meta.get("name"))))
    return removals
