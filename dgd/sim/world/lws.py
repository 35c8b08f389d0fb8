"""The LeaderWorkerSet controller, simulated: LeaderWorkerSet -> groups of pods, and its status.

For each LeaderWorkerSet (one root) a pass keeps ``spec.replicas`` groups of
``leaderWorkerTemplate.size`` pods: group ``i`` is a leader pod ``<lws>-<i>`` from the leader template
(the worker template when there is none) and workers ``<lws>-<i>-<j>`` (``j`` from 1) from the worker
template, each labelled as LeaderWorkerSet's pod webhook labels them (``leaderworkerset.sigs.k8s.io/
name``, ``group-index``, ``worker-index``, ``template-revision-hash``) and owned by the set. A group
whose pods were made from another revision of the templates is replaced, one group at a time while
any other group is not ready (``maxUnavailable`` 1, LeaderWorkerSet's default); groups beyond the
replicas are deleted. The status: ``replicas`` (groups with a pod), ``readyReplicas`` (groups whose
every pod is ready), ``updatedReplicas`` (groups at the current revision) and the ``Available``
condition (every wanted group ready).

Not modelled: the leader and worker StatefulSets the real controller makes, its Service, the
``LWS_*`` environment of its pod webhook, exclusive placement, rolling surge and partitions.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Sequence

import msgspec

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.resources import LWS, POD
from dgd.messages.base import JSONObject
from dgd.messages.meta import OwnerReference
from dgd.sim.world.controller import Nudge, Watch, WorldController
from dgd.sim.world.deployment_plan import meta, spec
from dgd.sim.world.pods import is_active, is_ready, labels, owned_by, pod_manifest
from dgd.sim.world.replicaset import controller_of

GROUP = "leaderworkerset.x-k8s.io"
#: The labels LeaderWorkerSet's pod webhook puts on each pod of a group.
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
REVISION = "leaderworkerset.sigs.k8s.io/template-revision-hash"


def _template(lws: JSONObject) -> JSONObject:
    template: JSONObject = spec(lws).get("leaderWorkerTemplate") or {}
    return template


def revision(lws: JSONObject) -> str:
    """The hash of the leader and worker templates and the group size."""
    template = _template(lws)
    wanted = [template.get("leaderTemplate"), template.get("workerTemplate"), template.get("size")]
    return hashlib.sha256(msgspec.json.encode(wanted, order="sorted")).hexdigest()[:10]


def _size(lws: JSONObject) -> int:
    return int(_template(lws).get("size") or 1)


def _replicas(lws: JSONObject) -> int:
    replicas = spec(lws).get("replicas")
    return 1 if replicas is None else int(replicas)


class LeaderWorkerSetController(WorldController):
    """The LeaderWorkerSet controller for every LeaderWorkerSet of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(LWS, route=_own), Watch(POD, route=controller_of("LeaderWorkerSet"))]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        assert namespace is not None
        try:
            lws = await self.cluster.get(LWS.key(namespace, name))
        except NotFound:
            return None
        if meta(lws).get("deletionTimestamp"):
            return None  # its pods go by garbage collection
        current = revision(lws)
        groups = _groups(await self._pods(lws))
        wanted = _replicas(lws)
        changed = False
        for index in sorted(groups):
            if index >= wanted:
                await self._delete(namespace, groups.pop(index))
                changed = True
        stale = [i for i in sorted(groups) if any(labels(p).get(REVISION) != current for p in groups[i])]
        unready = [i for i in groups if not _ready(groups[i], _size(lws))]
        if stale and not [i for i in unready if i not in stale[:1]]:
            await self._delete(namespace, groups.pop(stale[0]))
            changed = True
        for index in range(wanted):
            if index not in groups or not [p for p in groups[index] if is_active(p)]:
                for pod in _group_pods(lws, index, current):
                    with contextlib.suppress(AlreadyExists):  # the old one still terminates
                        await self.cluster.create(POD, pod)
                changed = True
        if changed:
            groups = _groups(await self._pods(lws))
        status = _status(lws, groups, current)
        if status != lws.get("status"):
            await self.cluster.replace_status(LWS, {**lws, "status": status})
        return None

    async def _pods(self, lws: JSONObject) -> list[JSONObject]:
        selector = f"{NAME_LABEL}={meta(lws).get('name')}"
        listed = await self.cluster.list(POD, namespace=meta(lws).get("namespace"), label_selector=selector)
        return [pod for pod in listed.items if owned_by(pod, meta(lws).get("uid"))]

    async def _delete(self, namespace: str, pods: Sequence[JSONObject]) -> None:
        for pod in pods:
            with contextlib.suppress(NotFound):
                await self.cluster.delete(POD.key(namespace, str(meta(pod).get("name"))))


def _groups(pods: Sequence[JSONObject]) -> dict[int, list[JSONObject]]:
    out: dict[int, list[JSONObject]] = {}
    for pod in pods:
        if not is_active(pod):
            continue
        out.setdefault(int(labels(pod).get(GROUP_INDEX) or 0), []).append(pod)
    return out


def _ready(pods: Sequence[JSONObject], size: int) -> bool:
    return len(pods) >= size and all(is_ready(pod) for pod in pods)


def _group_pods(lws: JSONObject, index: int, current: str) -> list[JSONObject]:
    template = _template(lws)
    worker = template.get("workerTemplate") or {}
    leader = template.get("leaderTemplate") or worker
    name = str(meta(lws).get("name"))
    owner = OwnerReference(f"{GROUP}/v1", "LeaderWorkerSet", name, str(meta(lws).get("uid")))
    pods = []
    for worker_index in range(_size(lws)):
        chosen = leader if worker_index == 0 else worker
        chosen_meta = chosen.get("metadata") or {}
        pod_labels = dict(chosen_meta.get("labels") or {})
        pod_labels |= {
            NAME_LABEL: name,
            GROUP_INDEX: str(index),
            WORKER_INDEX: str(worker_index),
            REVISION: current,
        }
        pod = pod_manifest(
            namespace=str(meta(lws).get("namespace")),
            generate_name=f"{name}-{index}-",
            labels=pod_labels,
            annotations=chosen_meta.get("annotations") or None,
            spec=chosen.get("spec") or {},
            owner=owner,
        )
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = f"{name}-{index}" if worker_index == 0 else f"{name}-{index}-{worker_index}"
        pods.append(pod)
    return pods


def _status(lws: JSONObject, groups: dict[int, list[JSONObject]], current: str) -> JSONObject:
    size, wanted = _size(lws), _replicas(lws)
    ready = sum(1 for pods in groups.values() if _ready(pods, size))
    updated = sum(1 for pods in groups.values() if all(labels(p).get(REVISION) == current for p in pods))
    available = "True" if ready >= wanted else "False"
    reason = "AllGroupsReady" if available == "True" else "GroupsNotReady"
    conditions = [{"type": "Available", "status": available, "reason": reason}]
    return {
        "replicas": len(groups),
        "readyReplicas": ready,
        "updatedReplicas": updated,
        "conditions": conditions,
    }


def _own(lws: JSONObject) -> Nudge:
    return Nudge(meta(lws).get("namespace"), str(meta(lws).get("name")))
