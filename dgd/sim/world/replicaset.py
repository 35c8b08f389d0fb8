"""kube-controller-manager's ReplicaSet controller, simulated: ReplicaSet -> pods, and its status.

For each ReplicaSet (one root) a pass keeps ``spec.replicas`` active pods (neither terminating nor
terminated) among those it controls: it creates the missing ones from its pod template (named
``<replicaset>-<suffix>``, labelled with the template's labels, which carry ``pod-template-hash``
when a Deployment made the set) and deletes the surplus, the least established first (unscheduled,
then pending, then not ready, then ready for the shortest time, then the newest). It writes
``status``: ``replicas`` (active pods), ``fullyLabeledReplicas`` (those with every template label),
``readyReplicas``, ``availableReplicas`` (ready for ``minReadySeconds``), ``terminatingReplicas``
(deleted, not yet terminated) and ``observedGeneration``, and looks again when a ready pod's
``minReadySeconds`` are up.

Pods are started by :mod:`dgd.sim.world.pods`; a deleted pod terminates there. Not modelled: adopting
or releasing pods by selector (a set controls the pods it created), the slow-start batches of 500,
and the ``ReplicaFailure`` condition (the simulated API server does not refuse pods for quota).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.selectors import from_label_selector
from dgd.cluster.resources import POD, REPLICA_SET
from dgd.messages.base import JSONObject
from dgd.messages.meta import OwnerReference
from dgd.sim.world.controller import Nudge, Route, Watch, WorldController, earliest, parse_time
from dgd.sim.world.deployment_plan import meta, min_ready_seconds, name, replicas, spec, status
from dgd.sim.world.pods import (
    is_active,
    is_bound,
    is_deleting,
    is_ready,
    is_terminal,
    labels,
    owned_by,
    pod_condition,
    pod_manifest,
)

#: How long after a ready pod's ``minReadySeconds`` the controller looks again (its requeue).
_AFTER_MIN_READY = 1.0


class ReplicaSetController(WorldController):
    """The ReplicaSet controller for every ReplicaSet of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(REPLICA_SET, route=_own), Watch(POD, route=controller_of("ReplicaSet"))]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        assert namespace is not None
        try:
            rs = await self.cluster.get(REPLICA_SET.key(namespace, name))
        except NotFound:
            return None
        if meta(rs).get("deletionTimestamp"):
            return None  # its pods go by garbage collection
        pods = await self._pods(rs)
        live = [pod for pod in pods if is_active(pod)]
        surplus = len(live) - replicas(rs)
        for _ in range(-surplus):
            await self.cluster.create(POD, _manifest(rs))
        for pod in doomed(live, surplus):
            with contextlib.suppress(NotFound):
                await self.cluster.delete(POD.key(namespace, str(meta(pod)["name"])))
        if surplus:
            pods = await self._pods(rs)
            live = [pod for pod in pods if is_active(pod)]
        now = self.clock()
        found = rs_status(rs, live, now, terminating=sum(1 for pod in pods if is_terminating(pod)))
        if found != status(rs):
            await self.cluster.replace_status(REPLICA_SET, {**rs, "status": found})
        return _next_available(rs, live, now)

    async def _pods(self, rs: JSONObject) -> list[JSONObject]:
        listed = await self.cluster.list(
            POD, namespace=meta(rs).get("namespace"), label_selector=selector(rs)
        )
        return [pod for pod in listed.items if owned_by(pod, meta(rs).get("uid"))]


def selector(obj: JSONObject) -> str | None:
    """A Deployment's or ReplicaSet's ``spec.selector`` as a list's label selector (``None``: all)."""
    return str(from_label_selector(spec(obj).get("selector"))) or None


def _manifest(rs: JSONObject) -> JSONObject:
    template = spec(rs).get("template") or {}
    template_meta = template.get("metadata") or {}
    owner = OwnerReference("apps/v1", "ReplicaSet", name(rs), str(meta(rs).get("uid")))
    return pod_manifest(
        namespace=str(meta(rs).get("namespace")),
        generate_name=f"{name(rs)}-",
        labels=dict(template_meta.get("labels") or {}),
        annotations=template_meta.get("annotations") or None,
        spec=template.get("spec") or {},
        owner=owner,
    )


def ready_since(pod: JSONObject) -> float | None:
    """When a ready pod became ready (``None`` when it is not ready)."""
    if not is_ready(pod):
        return None
    return parse_time((pod_condition(pod, "Ready") or {}).get("lastTransitionTime"))


def is_available(pod: JSONObject, min_ready: int, now: float) -> bool:
    """Ready, and for more than ``min_ready`` seconds (``podutil.IsPodAvailable``)."""
    since = ready_since(pod)
    if not is_ready(pod):
        return False
    return min_ready == 0 or (since is not None and since + min_ready < now)


def doomed(pods: Sequence[JSONObject], surplus: int) -> list[JSONObject]:
    """The ``surplus`` pods to delete, the least established first (``controller.ActivePods``)."""
    if surplus <= 0:
        return []

    def rank(pod: JSONObject) -> tuple[Any, ...]:
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        since = ready_since(pod)
        created = str(meta(pod).get("creationTimestamp"))
        return (
            is_bound(pod),
            {"Pending": 0, "Unknown": 1, "Running": 2}.get(phase, 0),
            is_ready(pod),
            -(since or 0.0),
            _descending(created),
            _descending(str(meta(pod).get("name"))),
        )

    return sorted(pods, key=rank)[:surplus]


def _descending(text: str) -> list[int]:
    return [-ord(char) for char in text]


def is_terminating(pod: JSONObject) -> bool:
    """Deleted but not yet terminated (``controller.IsPodTerminating``)."""
    return is_deleting(pod) and not is_terminal(pod)


def rs_status(rs: JSONObject, pods: Sequence[JSONObject], now: float, *, terminating: int) -> JSONObject:
    """The status the ReplicaSet controller writes for these active pods and ``terminating`` ones
    (zero counts left out but ``replicas`` and ``terminatingReplicas``, which the API always carries
    once kube-controller-manager counts terminating pods, as it does by default since 1.35)."""
    template_labels = ((spec(rs).get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = min_ready_seconds(rs)
    counts = {
        "fullyLabeledReplicas": sum(1 for pod in pods if template_labels.items() <= labels(pod).items()),
        "readyReplicas": sum(1 for pod in pods if is_ready(pod)),
        "availableReplicas": sum(1 for pod in pods if is_available(pod, min_ready, now)),
        "observedGeneration": int(meta(rs).get("generation") or 0),
    }
    kept = {key: value for key, value in counts.items() if value}
    conditions = status(rs).get("conditions")
    found = {"replicas": len(pods), **kept, "terminatingReplicas": terminating}
    return found | ({"conditions": conditions} if conditions else {})


def _next_available(rs: JSONObject, pods: Sequence[JSONObject], now: float) -> float | None:
    min_ready = min_ready_seconds(rs)
    if not min_ready:
        return None
    pending = [
        since + min_ready + _AFTER_MIN_READY
        for pod in pods
        if (since := ready_since(pod)) is not None and not is_available(pod, min_ready, now)
    ]
    return earliest(*pending)


def _own(rs: JSONObject) -> Nudge:
    return Nudge(meta(rs).get("namespace"), name(rs))


def controller_of(kind: str) -> Route:
    """A route from an object to its controller of ``kind`` (``None``: controlled by another kind)."""

    def route(obj: JSONObject) -> Nudge | None:
        for reference in meta(obj).get("ownerReferences") or []:
            if reference.get("controller") and reference.get("kind") == kind:
                return Nudge(meta(obj).get("namespace"), str(reference.get("name")))
        return None

    return route
