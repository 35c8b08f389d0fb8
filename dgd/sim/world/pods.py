"""Pods of the simulated cluster: the scheduler and the kubelets, as one world controller.

Workload controllers (Grove, DCD) create pods with :func:`pod_manifest`; this controller moves each
pod through its life in cluster time:

1. **Admission and binding.** Pending pods are taken in creation order (then namespace and name).
   While the cluster has room (``capacity`` minus the pods bound and not yet terminal), a pod is
   admitted: Grove's scheduling gate is lifted (standing in for Grove's PodGang creation plus gang
   scheduling), and ``schedule_delay`` after its creation it is bound through its ``binding``
   subresource, as a scheduler binds (``spec.nodeName``, ``PodScheduled=True``). A pod that does not
   fit keeps its gate, or, ungated, is marked ``PodScheduled=False/Unschedulable``.
2. **Start.** ``ready_delay`` after binding it is ``Running`` with ``Ready=True``.
3. **Termination.** Deleted pods carry the simulated kubelet's finalizer, so they linger with a
   deletionTimestamp (still holding their node) for ``termination_delay``, then reach phase
   ``Succeeded`` and are released. A pod deleted before binding is released at once.

Every pod is a root of its own, reconciled from a fresh read of that pod alone, so the cost of a
change does not grow with the number of pods. Admission under a ``capacity`` is the exception: it
is decided by one more root, the pool, whose pass reads every pod, so room is counted from one
consistent view; a pending pod and a released one nudge it. Without a capacity a pending pod is
admitted by its own reconcile.
"""

from __future__ import annotations

from collections.abc import Sequence

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import POD, ObjectKey
from dgd.messages.base import JSONObject
from dgd.messages.meta import OwnerReference
from dgd.messages.timestamps import rfc3339
from dgd.sim.world.controller import EPSILON, Nudge, Watch, WorldController, earliest, parse_time
from dgd.sim.world.settings import WorldSettings

#: Held by every simulated pod until the simulated kubelet has terminated it.
KUBELET_FINALIZER = "sim.dgd.nvidia.com/kubelet"
#: The scheduling gate Grove puts on the pods it creates.
GROVE_GATE = "grove.io/podgang-pending-creation"
#: The node every bound pod lands on (capacity is counted in pods, not per node).
NODE_NAME = "sim-node"

_POOL = Nudge(None, "pods")
_UNSCHEDULABLE = "0/1 nodes are available: 1 Insufficient capacity."


# What workload controllers need to know about a pod (raw JSON).


def pod_manifest(
    *,
    namespace: str,
    generate_name: str,
    labels: dict[str, str],
    annotations: dict[str, str] | None,
    spec: JSONObject,
    owner: OwnerReference | None,
    gated: bool = False,
) -> JSONObject:
    """A new pod owned (as controller) by ``owner``, with the simulated kubelet's finalizer."""
    spec = dict(spec)
    if gated:
        spec["schedulingGates"] = [{"name": GROVE_GATE}]
    metadata: JSONObject = {
        "generateName": generate_name,
        "namespace": namespace,
        "labels": dict(sorted(labels.items())),
        "finalizers": [KUBELET_FINALIZER],
    }
    if owner is not None:
        reference = {
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
        }
        metadata["ownerReferences"] = [reference | {"controller": True, "blockOwnerDeletion": True}]
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def metadata(pod: JSONObject) -> JSONObject:
    return pod.get("metadata") or {}


def labels(pod: JSONObject) -> dict[str, str]:
    return metadata(pod).get("labels") or {}


def is_terminal(pod: JSONObject) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_deleting(pod: JSONObject) -> bool:
    return bool(metadata(pod).get("deletionTimestamp"))


def is_active(pod: JSONObject) -> bool:
    """Counted by its workload: neither terminating nor terminated."""
    return not is_deleting(pod) and not is_terminal(pod)


def is_bound(pod: JSONObject) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def is_gated(pod: JSONObject) -> bool:
    return bool((pod.get("spec") or {}).get("schedulingGates"))


def is_ready(pod: JSONObject) -> bool:
    condition = pod_condition(pod, "Ready")
    return condition is not None and condition.get("status") == "True"


def pod_condition(pod: JSONObject, type: str) -> JSONObject | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((condition for condition in conditions if condition.get("type") == type), None)


def owned_by(pod: JSONObject, uid: str | None) -> bool:
    """Whether ``uid`` is the pod's controller."""
    return any(
        reference.get("controller") and reference.get("uid") == uid
        for reference in metadata(pod).get("ownerReferences") or []
    )


def by_name(pods: Sequence[JSONObject]) -> list[JSONObject]:
    return sorted(pods, key=lambda pod: str(metadata(pod).get("name")))


# The scheduler and the kubelets.


class PodLifecycle(WorldController):
    """Admits, binds, starts and terminates every pod of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(POD, route=_route)]

    async def roots(self) -> list[Nudge]:
        pods = (await self.cluster.list(POD)).items
        return [_route(pod) for pod in pods] + [_POOL]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        if (namespace, name) == (_POOL.namespace, _POOL.name):
            return await self._admit_in_turn()
        settings, now = self.settings, self.clock()
        try:
            pod = await self.cluster.get(POD.key(namespace, name))
        except NotFound:
            return None
        if is_deleting(pod):
            due = await self._terminate(pod, settings, now)
            if due is None and settings.capacity is not None:
                await self.context.ref.tell(_POOL)  # released: room for a pending pod
            return due
        if is_bound(pod) and is_active(pod):
            return await self._start(pod, settings, now)
        if _is_pending(pod):
            if settings.capacity is None:
                return await self._admit(pod, settings, now)
            await self.context.ref.tell(_POOL)
        return None

    async def _admit_in_turn(self) -> float | None:
        """Admit pending pods oldest first, while there is room (the capacity's one consistent view)."""
        settings, now = self.settings, self.clock()
        if settings.capacity is None:
            return None
        pods = (await self.cluster.list(POD)).items
        room = settings.capacity - sum(1 for pod in pods if is_bound(pod) and not is_terminal(pod))
        due: list[float | None] = []
        for pod in sorted((pod for pod in pods if _is_pending(pod)), key=_arrival):
            if room <= 0:
                await self._hold(pod, now)
                continue
            room -= 1
            due.append(await self._admit(pod, settings, now))
        return earliest(*due)

    async def _terminate(self, pod: JSONObject, settings: WorldSettings, now: float) -> float | None:
        if KUBELET_FINALIZER not in (metadata(pod).get("finalizers") or []):
            return None
        if is_bound(pod) and not is_terminal(pod):
            deleted = parse_time(metadata(pod).get("deletionTimestamp")) or now
            if now + EPSILON < deleted + settings.termination_delay:
                return deleted + settings.termination_delay
            status = _status(pod, phase="Succeeded", ready=False, now=now)
            await self.cluster.patch_status(_key(pod), {"status": status})
        # Terminated (or never started): release it.
        finalizers = [f for f in metadata(pod).get("finalizers") or [] if f != KUBELET_FINALIZER]
        await self.cluster.patch(_key(pod), {"metadata": {"finalizers": finalizers or None}})
        return None

    async def _start(self, pod: JSONObject, settings: WorldSettings, now: float) -> float | None:
        if is_ready(pod):
            return None
        scheduled = pod_condition(pod, "PodScheduled") or {}
        ready_at = (parse_time(scheduled.get("lastTransitionTime")) or now) + settings.ready_delay
        if now + EPSILON < ready_at:
            return ready_at
        await self.cluster.patch_status(_key(pod), {"status": ready_status(pod, now)})
        return None

    async def _admit(self, pod: JSONObject, settings: WorldSettings, now: float) -> float | None:
        if is_gated(pod):
            await self.cluster.patch(_key(pod), {"spec": {"schedulingGates": None}})
        bind_at = (parse_time(metadata(pod).get("creationTimestamp")) or now) + settings.schedule_delay
        if now + EPSILON < bind_at:
            return bind_at
        await self.cluster.bind(_key(pod), NODE_NAME)
        stamp = rfc3339(now)
        scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp}
        await self.cluster.patch_status(
            _key(pod), {"status": {"phase": "Pending", "conditions": [scheduled]}}
        )
        return now + settings.ready_delay

    async def _hold(self, pod: JSONObject, now: float) -> None:
        if is_gated(pod):
            return
        current = pod_condition(pod, "PodScheduled") or {}
        if current.get("status") == "False":
            return
        unschedulable = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": _UNSCHEDULABLE,
            "lastTransitionTime": rfc3339(now),
        }
        await self.cluster.patch_status(
            _key(pod), {"status": {"phase": "Pending", "conditions": [unschedulable]}}
        )


def ready_status(pod: JSONObject, now: float) -> JSONObject:
    """The status the kubelet writes when ``pod`` is Running and Ready at ``now`` (a trace's
    ``pods_ready`` world event writes it before ``ready_delay`` is up)."""
    return _status(pod, phase="Running", ready=True, now=now)


def _route(pod: JSONObject) -> Nudge:
    return Nudge(metadata(pod).get("namespace"), str(metadata(pod).get("name")))


def _is_pending(pod: JSONObject) -> bool:
    # Waiting for a node: not bound, not going away, and gated by nobody but Grove (if at all).
    gates = {gate.get("name") for gate in (pod.get("spec") or {}).get("schedulingGates") or []}
    return not is_bound(pod) and is_active(pod) and gates <= {GROVE_GATE}


def _arrival(pod: JSONObject) -> tuple[str, str, str]:
    meta = metadata(pod)
    return (str(meta.get("creationTimestamp")), str(meta.get("namespace")), str(meta.get("name")))


def _key(pod: JSONObject) -> ObjectKey[JSONObject]:
    return POD.key(metadata(pod).get("namespace"), str(metadata(pod).get("name")))


def _status(pod: JSONObject, *, phase: str, ready: bool, now: float) -> JSONObject:
    """The pod's status with ``phase`` and its readiness conditions set (transition times kept)."""
    stamp = rfc3339(now)
    value = "True" if ready else "False"
    conditions = [
        c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"
    ]
    for type in ("ContainersReady", "Initialized", "Ready"):
        current = pod_condition(pod, type)
        since = current.get("lastTransitionTime") if current and current.get("status") == value else stamp
        conditions.append(
            {"type": type, "status": value if type != "Initialized" else "True", "lastTransitionTime": since}
        )
    status: JSONObject = {"phase": phase, "conditions": conditions}
    if ready:
        status["startTime"] = (pod.get("status") or {}).get("startTime") or stamp
        # One running, ready status per container, as a kubelet reports them (kubectl's READY column).
        status["containerStatuses"] = [
            {
                "name": container.get("name"), "image": container.get("image") or "", "imageID": "",
                "ready": True, "started": True, "restartCount": 0,
                "state": {"running": {"startedAt": status["startTime"]}},
            }
            for container in (pod.get("spec") or {}).get("containers") or []
        ]  # fmt: skip
    return status
