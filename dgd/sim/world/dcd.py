"""The DCD controller, simulated: DynamoComponentDeployment -> pods (a Deployment's worth) and status.

For each DCD (one root) a pass holds the DCD finalizer (released, a no-op finalize, once the DCD is
being deleted), keeps ``spec.replicas`` pods labelled ``nvidia.com/selector=<dcd>`` from its pod
template, and writes the status the DGD reads (dgd-domain §8.2, §8.4): ``observedGeneration``,
``Available`` and ``DynamoComponentReady``, and ``status.component``. Pods are replaced on a
template change as a Deployment does: ``RollingUpdate`` within ``maxSurge``/``maxUnavailable`` (the
DCD annotations, default 25%), or ``Recreate`` (annotation ``nvidia.com/deployment-strategy``): every
old pod first, new ones once the old are gone. A scaled-down pod is deleted and, through the
simulated kubelet, reaches a terminal phase before it disappears (the Recreate barrier of §12.3
waits for that).

Not modelled: the Deployment, LeaderWorkerSet, Services and Ingress themselves (a multinode DCD
runs one pod per replica), and the checkpoint preflight.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Sequence
from typing import Any

import msgspec

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import DCD, POD
from dgd.domain.metadata_keys import (
    COMPONENT_TYPE,
    DYNAMO_NAMESPACE,
    SELECTOR,
    TOPOLOGY_SOURCE_KEYS,
    WORKER_HASH,
)
from dgd.domain.render.dcd import workload_annotations
from dgd.domain.rollout_replicas import DEFAULT_BOUND, MAX_SURGE, MAX_UNAVAILABLE, STRATEGY
from dgd.messages.base import JSONObject
from dgd.messages.dcd import API_VERSION, KIND, DCDStatus, DynamoComponentDeployment
from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus
from dgd.messages.meta import OwnerReference
from dgd.messages.timestamps import rfc3339
from dgd.sim.world.conditions import set_condition
from dgd.sim.world.controller import Nudge, Watch, WorldController
from dgd.sim.world.deployment_plan import TEMPLATE_HASH
from dgd.sim.world.pods import (
    by_name,
    is_active,
    is_deleting,
    is_ready,
    is_terminal,
    labels,
    owned_by,
    pod_manifest,
)

FINALIZER = "nvidia.com/finalizer"


class DCDController(WorldController):
    """The DCD controller for every DCD of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(DCD, route=_own), Watch(POD, route=_owner, label_selector=SELECTOR)]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        assert namespace is not None
        dcd = await self.live_root(DCD, namespace, name, FINALIZER)
        if dcd is None:
            return None
        current = template_hash(dcd)

        # Pods: the Deployment's rollout, read back once if anything changed.
        pods = await self._pods(dcd)
        doomed, missing = plan_rollout(dcd, pods, current)
        for pod in doomed:
            with contextlib.suppress(NotFound):
                await self.cluster.delete(POD.key(namespace, str(pod["metadata"]["name"])))
        for _ in range(missing):
            await self.cluster.create(POD, _manifest(dcd, current))
        if doomed or missing:
            pods = await self._pods(dcd)

        status = dcd_status(dcd, pods, current, rfc3339(self.clock()))
        if status != dcd.status:
            await self.cluster.replace_status(DCD, msgspec.structs.replace(dcd, status=status))
        return None

    async def _pods(self, dcd: DynamoComponentDeployment) -> list[JSONObject]:
        selector = f"{SELECTOR}={dcd.metadata.name}"
        listed = await self.cluster.list(POD, namespace=dcd.metadata.namespace, label_selector=selector)
        return [pod for pod in listed.items if owned_by(pod, dcd.metadata.uid)]


def template_hash(dcd: DynamoComponentDeployment) -> str:
    """The hash of everything in the spec but the replica count."""
    spec = msgspec.to_builtins(msgspec.structs.replace(dcd.spec, replicas=None))
    return hashlib.sha256(msgspec.json.encode(spec, order="sorted")).hexdigest()[:10]


def desired_replicas(dcd: DynamoComponentDeployment) -> int:
    return 1 if dcd.spec.replicas is None else dcd.spec.replicas


def plan_rollout(
    dcd: DynamoComponentDeployment, pods: Sequence[JSONObject], current: str
) -> tuple[list[JSONObject], int]:
    """Which pods to delete and how many to create, as a Deployment's controller would now."""
    desired = desired_replicas(dcd)
    active = by_name([pod for pod in pods if is_active(pod)])
    old = [pod for pod in active if labels(pod).get(TEMPLATE_HASH) != current]
    new = [pod for pod in active if labels(pod).get(TEMPLATE_HASH) == current]
    draining = any(is_deleting(pod) and not is_terminal(pod) for pod in pods)

    # Surplus new pods (a scale-down): not ready first, then the newest names.
    excess = sorted(new, key=lambda pod: (is_ready(pod), _negated(pod)))[: max(len(new) - desired, 0)]
    annotations = workload_annotations(dcd)
    if annotations.get(STRATEGY) == "Recreate":
        # Every old pod goes first; new ones only once the old have terminated.
        missing = 0 if old or draining else max(desired - len(new), 0)
        return old + excess, missing

    surge = _scaled(annotations.get(MAX_SURGE, DEFAULT_BOUND), desired, math.ceil)
    unavailable = _scaled(annotations.get(MAX_UNAVAILABLE, DEFAULT_BOUND), desired, math.floor)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    missing = max(min(desired - len(new), desired + surge - len(active)), 0)
    # Old pods: the unready ones at once, ready ones while enough stay ready.
    doomed = [pod for pod in old if not is_ready(pod)]
    ready = sum(1 for pod in active if is_ready(pod))
    for pod in (pod for pod in old if is_ready(pod)):
        if ready - 1 < desired - unavailable:
            break
        doomed.append(pod)
        ready -= 1
    return doomed + excess, missing


def dcd_status(
    dcd: DynamoComponentDeployment, pods: Sequence[JSONObject], current: str, now: str
) -> DCDStatus:
    """What the DCD controller reports: Deployment readiness (§8.4) and the component's replicas."""
    desired = desired_replicas(dcd)
    active = [pod for pod in pods if is_active(pod)]
    updated = sum(1 for pod in active if labels(pod).get(TEMPLATE_HASH) == current)
    ready = sum(1 for pod in active if is_ready(pod))
    done = desired == 0 or (updated >= desired and ready >= desired and len(active) == desired)
    previous = dcd.status or DCDStatus()
    conditions = previous.conditions
    kind: ComponentKind = "LeaderWorkerSet" if _multinode(dcd) else "Deployment"
    if done:
        conditions = set_condition(
            conditions, "Available", "True", f"{kind}Ready", f"{kind} is ready", now=now
        )
        conditions = set_condition(
            conditions, "DynamoComponentReady", "True", "ComponentReady", "Component is ready", now=now
        )
    else:
        message = f"{kind} is not ready: {ready}/{desired} replicas ready, {updated} updated"
        conditions = set_condition(conditions, "Available", "False", f"{kind}NotReady", message, now=now)
        conditions = set_condition(
            conditions,
            "DynamoComponentReady",
            "False",
            "ComponentNotReady",
            "Component is not ready",
            now=now,
        )
    component = ComponentReplicaStatus(
        component_kind=kind,
        replicas=len(active),
        updated_replicas=updated,
        component_names=[dcd.metadata.name or ""],
        runtime_namespace=_runtime_namespace(dcd),
        ready_replicas=ready,
        available_replicas=ready,
    )
    return DCDStatus(observed_generation=dcd.metadata.generation, conditions=conditions, component=component)


def _manifest(dcd: DynamoComponentDeployment, current: str) -> JSONObject:
    template = dcd.spec.pod_template or {}
    template_meta = template.get("metadata") or {}
    pod_labels = dict(template_meta.get("labels") or {}) | dict(dcd.metadata.labels or {})
    pod_labels[SELECTOR] = dcd.metadata.name or ""
    pod_labels[TEMPLATE_HASH] = current
    if dcd.spec.type is not None:
        pod_labels[COMPONENT_TYPE] = dcd.spec.type
    owner = OwnerReference(API_VERSION, KIND, dcd.metadata.name or "", dcd.metadata.uid or "")
    # The KV-transfer topology source travels on the DCD's metadata; the controller hands it to the
    # pods, replacing whatever the pod template says (dgd-domain §8.3, upstream GetDCDKubeAnnotations).
    pod_annotations = {
        k: v for k, v in (template_meta.get("annotations") or {}).items() if k not in TOPOLOGY_SOURCE_KEYS
    }
    pod_annotations |= {
        k: v for k, v in (dcd.metadata.annotations or {}).items() if k in TOPOLOGY_SOURCE_KEYS
    }
    return pod_manifest(
        namespace=dcd.metadata.namespace or "",
        generate_name=f"{dcd.metadata.name}-{current}-",
        labels=pod_labels,
        annotations=pod_annotations or None,
        spec=_with_claim_volumes(template.get("spec") or {"containers": [{"name": "main"}]}),
        owner=owner,
    )


def _with_claim_volumes(spec: JSONObject) -> JSONObject:
    """The pod spec with a volume for every mount that names none: the claim of that name, as the DCD
    controller's pod rendering adds it (a v1alpha1 ``volumeMounts`` entry names its claim; podspec §3)."""
    declared = {volume.get("name") for volume in spec.get("volumes") or []}
    missing: list[str] = []
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for mount in container.get("volumeMounts") or []:
            name = mount.get("name")
            if name not in declared and name not in missing:
                missing.append(name)
    if not missing:
        return spec
    claims = [{"name": name, "persistentVolumeClaim": {"claimName": name}} for name in missing]
    return {**spec, "volumes": [*(spec.get("volumes") or []), *claims]}


def _multinode(dcd: DynamoComponentDeployment) -> bool:
    """A multinode DCD runs as a LeaderWorkerSet (one pod per replica stands in for each group)."""
    multinode = dcd.spec.multinode
    return multinode is not None and (multinode.node_count is None or multinode.node_count > 1)


def _runtime_namespace(dcd: DynamoComponentDeployment) -> str | None:
    found = dcd.metadata.labels or {}
    base = found.get(DYNAMO_NAMESPACE)
    suffix = found.get(WORKER_HASH)
    return f"{base}-{suffix}" if base and suffix else base


def _scaled(value: str, total: int, rounding: Any) -> int:
    """An int-or-percent rollout bound (``"25%"`` or ``"1"``) against ``total`` replicas."""
    if value.endswith("%"):
        return int(rounding(total * float(value[:-1]) / 100))
    return int(value)


def _negated(pod: JSONObject) -> list[int]:
    # Sort key that puts the newest (largest) name first.
    return [-ord(char) for char in str(pod["metadata"]["name"])]


def _own(dcd: DynamoComponentDeployment) -> Nudge:
    return Nudge(dcd.metadata.namespace, dcd.metadata.name or "")


def _owner(pod: JSONObject) -> Nudge | None:
    meta = pod.get("metadata") or {}
    for reference in meta.get("ownerReferences") or []:
        if reference.get("controller") and reference.get("kind") == KIND:
            return Nudge(meta.get("namespace"), str(reference.get("name")))
    return None
