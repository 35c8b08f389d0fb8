"""kube-controller-manager's Deployment controller, simulated: Deployment -> ReplicaSets, and status.

For each Deployment (one root) a pass does what ``syncDeployment`` does, from one read of the
Deployment and the ReplicaSets it controls (pods are the ReplicaSet controller's,
:mod:`dgd.sim.world.replicaset`):

1. A Deployment being deleted only gets its status (its ReplicaSets go by garbage collection); one
   whose selector is empty only gets ``observedGeneration``.
2. ``Progressing`` says ``DeploymentPaused`` / ``DeploymentResumed`` when ``spec.paused`` flips.
3. Paused, or resized (an active ReplicaSet was sized for other replicas), it only scales: the one
   active ReplicaSet to the replicas, or, mid-rollout, every active one in proportion (surge
   included); a paused one also drops old ReplicaSets beyond ``revisionHistoryLimit``. No new
   ReplicaSet is made, so a paused Deployment does not roll.
4. Otherwise it rolls. The new ReplicaSet (``<deployment>-<pod-template-hash>``, controlled by the
   Deployment, the hash label on it, its selector and its template) is found or created, with the
   next revision. ``RollingUpdate``: the new one scales up while the ReplicaSets' replicas stay within
   ``replicas + maxSurge``; the old ones scale down, unhealthy replicas first, while at least
   ``replicas - maxUnavailable`` stay available. ``Recreate``: every old one goes to 0, and the new
   one is made and scaled up only once no pod of theirs is left running. A complete rollout deletes
   old ReplicaSets at 0 beyond ``revisionHistoryLimit``.
5. The status (:mod:`dgd.sim.world.deployment_status`) is written when it changed; a rollout that
   stops progressing is looked at again when its ``progressDeadlineSeconds`` are up.

Each step that writes ends the pass, as each of kube-controller-manager's does: the ReplicaSets'
changes come back as nudges. Not modelled: rollbacks through ``rollbackTo``, adopting orphaned
ReplicaSets, kube-controller-manager's exact hash digits (``deployment_plan.template_hash``).

**Off by default.** The simulated DCD controller (:mod:`dgd.sim.world.dcd`) still turns each DCD
straight into pods; running this model beside it would double them once the operator renders
Deployments. ``SimulatedCluster(deployments=True)`` and ``sim world --deployments`` switch it (with
the ReplicaSet controller) on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.resources import DEPLOYMENT, POD, REPLICA_SET
from dgd.messages.base import JSONObject
from dgd.sim.world.controller import Nudge, Watch, WorldController
from dgd.sim.world.deployment_plan import (
    REVISION,
    TEMPLATE_HASH,
    active,
    find_new,
    is_recreate,
    is_scaling_event,
    meta,
    min_ready_seconds,
    name,
    new_replicas,
    old_targets,
    progress_deadline,
    replicas,
    revision,
    rs_annotations,
    scale_targets,
    sized_annotations,
    spec,
    status,
    template_hash,
    to_clean,
)
from dgd.sim.world.deployment_status import (
    CREATED,
    FOUND,
    PAUSED,
    PROGRESSING,
    RESUMED,
    TIMED_OUT,
    complete,
    condition,
    deployment_status,
    new_condition,
    rollout_status,
    set_condition,
)
from dgd.sim.world.pods import is_terminal, owned_by
from dgd.sim.world.replicaset import controller_of, selector

#: A Deployment as last written, its new ReplicaSet (if any) and its old ones.
Sets = tuple[JSONObject, JSONObject | None, list[JSONObject]]


class DeploymentController(WorldController):
    """The Deployment controller for every Deployment of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [
            Watch(DEPLOYMENT, route=_own),
            Watch(REPLICA_SET, route=controller_of("Deployment")),
            # Pods, for Recreate's barrier: their ReplicaSet is ``<deployment>-<hash>``.
            Watch(POD, route=_deployment_of_pod, label_selector=TEMPLATE_HASH),
        ]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        assert namespace is not None
        try:
            deployment = await self.cluster.get(DEPLOYMENT.key(namespace, name))
        except NotFound:
            return None
        # Only what its selector selects (a ReplicaSet's labels are its template's): the rest of the
        # namespace is not read.
        listed = await self.cluster.list(
            REPLICA_SET, namespace=namespace, label_selector=selector(deployment)
        )
        rss = [rs for rs in listed.items if owned_by(rs, meta(deployment).get("uid"))]
        if meta(deployment).get("deletionTimestamp"):
            deployment, new, olds = await self._sets(deployment, rss, create=False)
            await self._write(deployment, deployment_status(deployment, _all(new, olds), new, self.clock()))
            return None
        if not (spec(deployment).get("selector") or {}):
            generation = meta(deployment).get("generation")
            if status(deployment).get("observedGeneration") != generation:
                await self._write(deployment, {**status(deployment), "observedGeneration": generation})
            return None
        deployment = await self._paused_condition(deployment)
        if spec(deployment).get("paused") or is_scaling_event(deployment, rss):
            return await self._scale_only(deployment, rss)
        if is_recreate(deployment):
            return await self._recreate(deployment, rss)
        return await self._rolling(deployment, rss)

    # The strategies.

    async def _rolling(self, deployment: JSONObject, rss: list[JSONObject]) -> float | None:
        deployment, new, olds = await self._sets(deployment, rss, create=True)
        if new is None:
            return self.clock() + self.settings.retry_delay  # a hash collision: the next name
        desired = replicas(deployment)
        if replicas(new) != desired:
            target = desired if replicas(new) > desired else new_replicas(deployment, [*olds, new], new)
            new, scaled = await self._scale(deployment, new, target)
            if scaled:
                return await self._progress(deployment, new, olds)
        targets = old_targets(deployment, olds, new)
        if targets:
            olds = [await self._scaled(deployment, rs, targets.get(name(rs))) for rs in olds]
            return await self._progress(deployment, new, olds)
        if complete(deployment, status(deployment)):
            await self._clean(deployment, olds)
        return await self._progress(deployment, new, olds)

    async def _recreate(self, deployment: JSONObject, rss: list[JSONObject]) -> float | None:
        deployment, new, olds = await self._sets(deployment, rss, create=False)
        running = active(olds)
        if running:
            olds = [await self._scaled(deployment, rs, 0 if rs in running else None) for rs in olds]
            return await self._progress(deployment, new, olds)
        if await self._old_pods_running(deployment, new, olds):
            return await self._progress(deployment, new, olds)
        if new is None:
            deployment, new, olds = await self._sets(deployment, olds, create=True)
            if new is None:
                return self.clock() + self.settings.retry_delay
        new, _ = await self._scale(deployment, new, replicas(deployment))
        if complete(deployment, status(deployment)):
            await self._clean(deployment, olds)
        return await self._progress(deployment, new, olds)

    async def _scale_only(self, deployment: JSONObject, rss: list[JSONObject]) -> float | None:
        deployment, new, olds = await self._sets(deployment, rss, create=False)
        targets = scale_targets(deployment, new, olds)
        olds = [await self._scaled(deployment, rs, targets.get(name(rs))) for rs in olds]
        if new is not None:
            new = await self._scaled(deployment, new, targets.get(name(new)))
        if spec(deployment).get("paused"):
            await self._clean(deployment, olds)
        await self._write(deployment, deployment_status(deployment, _all(new, olds), new, self.clock()))
        return None

    # ReplicaSets.

    async def _sets(self, deployment: JSONObject, rss: list[JSONObject], *, create: bool) -> Sets:
        """The Deployment, its new ReplicaSet (created if ``create``; ``None`` if missing or its name
        collided) and the old ones, with the revision synced (``getAllReplicaSetsAndSyncRevision``)."""
        new = find_new(deployment, rss)
        olds = [rs for rs in rss if rs is not new]
        next_revision = max((revision(rs) for rs in olds), default=0) + 1
        if new is None:
            if not create:
                return deployment, None, olds
            return await self._create(deployment, olds, next_revision)
        current = meta(new).get("annotations") or {}
        annotations = rs_annotations(deployment, current, next_revision)
        min_ready = min_ready_seconds(deployment)
        if annotations != current or min_ready_seconds(new) != min_ready:
            updated = {
                **new,
                "metadata": {**meta(new), "annotations": annotations},
                "spec": {**spec(new), "minReadySeconds": min_ready},
            }
            return deployment, await self.cluster.replace(REPLICA_SET, updated), olds
        deployment = await self._revision(deployment, annotations.get(REVISION))
        if progress_deadline(deployment) is not None and _progressing(deployment) is None:
            found = new_condition(
                PROGRESSING, "True", FOUND, f'Found new replica set "{name(new)}"', self.clock()
            )
            deployment = await self._condition(deployment, found)
        return deployment, new, olds

    async def _create(self, deployment: JSONObject, olds: list[JSONObject], next_revision: int) -> Sets:
        rs = _new_replica_set(deployment)
        rs["spec"]["replicas"] = new_replicas(deployment, [*olds, rs], rs)
        annotations = rs_annotations(deployment, {}, next_revision)
        rs["metadata"]["annotations"] = sized_annotations(deployment, annotations)
        try:
            created = await self.cluster.create(REPLICA_SET, rs)
        except AlreadyExists:
            existing = await self.cluster.get(REPLICA_SET.key(meta(rs)["namespace"], name(rs)))
            if owned_by(existing, meta(deployment).get("uid")) and find_new(deployment, [existing]):
                return deployment, existing, olds
            # Another object has the name: count the collision, which changes the next hash.
            collisions = int(status(deployment).get("collisionCount") or 0) + 1
            await self._write(deployment, {**status(deployment), "collisionCount": collisions})
            return deployment, None, olds
        deployment = await self._revision(deployment, str(next_revision))
        if progress_deadline(deployment) is not None:
            message = f'Created new replica set "{name(created)}"'
            made = new_condition(PROGRESSING, "True", CREATED, message, self.clock())
            deployment = await self._condition(deployment, made)
        return deployment, created, olds

    async def _scale(self, deployment: JSONObject, rs: JSONObject, target: int) -> tuple[JSONObject, bool]:
        """``rs`` at ``target`` replicas, sized for the Deployment; whether its size changed."""
        current = meta(rs).get("annotations") or {}
        annotations = sized_annotations(deployment, current)
        resized = replicas(rs) != target
        if not resized and annotations == current:
            return rs, False
        updated = {
            **rs,
            "metadata": {**meta(rs), "annotations": annotations},
            "spec": {**spec(rs), "replicas": target},
        }
        return await self.cluster.replace(REPLICA_SET, updated), resized

    async def _scaled(self, deployment: JSONObject, rs: JSONObject, target: int | None) -> JSONObject:
        return rs if target is None else (await self._scale(deployment, rs, target))[0]

    async def _old_pods_running(
        self, deployment: JSONObject, new: JSONObject | None, olds: Sequence[JSONObject]
    ) -> bool:
        """Whether an old ReplicaSet still reports replicas or has a pod not yet terminated."""
        if sum(int(status(rs).get("replicas") or 0) for rs in olds) > 0:
            return True
        old_uids = {meta(rs).get("uid") for rs in olds}
        namespace = meta(deployment).get("namespace")
        pods = await self.cluster.list(POD, namespace=namespace, label_selector=selector(deployment))
        return any(
            not is_terminal(pod) and any(owned_by(pod, uid) for uid in old_uids)
            for pod in pods.items
            if new is None or not owned_by(pod, meta(new).get("uid"))
        )

    async def _clean(self, deployment: JSONObject, olds: Sequence[JSONObject]) -> None:
        for rs in to_clean(deployment, olds):
            with contextlib.suppress(NotFound):
                await self.cluster.delete(REPLICA_SET.key(meta(rs).get("namespace"), name(rs)))

    # The Deployment.

    async def _paused_condition(self, deployment: JSONObject) -> JSONObject:
        """``Progressing`` as ``checkPausedConditions`` sets it when ``spec.paused`` flips."""
        progressing = _progressing(deployment) or {}
        if progress_deadline(deployment) is None or progressing.get("reason") == TIMED_OUT:
            return deployment
        paused, was = bool(spec(deployment).get("paused")), progressing.get("reason") == PAUSED
        if paused == was:
            return deployment
        reason, message = (PAUSED, "Deployment is paused") if paused else (RESUMED, "Deployment is resumed")
        return await self._condition(
            deployment, new_condition(PROGRESSING, "Unknown", reason, message, self.clock())
        )

    async def _revision(self, deployment: JSONObject, value: str | None) -> JSONObject:
        """The Deployment annotated with its new ReplicaSet's revision (``SetDeploymentRevision``)."""
        annotations = meta(deployment).get("annotations") or {}
        if value is None or annotations.get(REVISION) == value:
            return deployment
        key = DEPLOYMENT.key(meta(deployment).get("namespace"), name(deployment))
        return await self.cluster.patch(key, {"metadata": {"annotations": {REVISION: value}}})

    async def _condition(self, deployment: JSONObject, new: JSONObject) -> JSONObject:
        conditions = set_condition(status(deployment).get("conditions"), new)
        return await self._write(deployment, {**status(deployment), "conditions": conditions})

    async def _progress(
        self, deployment: JSONObject, new: JSONObject | None, olds: Sequence[JSONObject]
    ) -> float | None:
        found, due = rollout_status(deployment, _all(new, olds), new, self.clock())
        await self._write(deployment, found)
        return due

    async def _write(self, deployment: JSONObject, found: JSONObject) -> JSONObject:
        if found == status(deployment):
            return deployment
        return await self.cluster.replace_status(DEPLOYMENT, {**deployment, "status": found})


def _new_replica_set(deployment: JSONObject) -> JSONObject:
    """The new ReplicaSet of the Deployment's template, at 0 replicas (``getNewReplicaSet``)."""
    template = dict(spec(deployment).get("template") or {})
    digest = template_hash(template, int(status(deployment).get("collisionCount") or 0))
    template_meta = dict(template.get("metadata") or {})
    labels = {**(template_meta.get("labels") or {}), TEMPLATE_HASH: digest}
    selector = dict(spec(deployment).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), TEMPLATE_HASH: digest}
    owner = {
        "apiVersion": DEPLOYMENT.api_version,
        "kind": DEPLOYMENT.kind,
        "name": name(deployment),
        "uid": meta(deployment).get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": REPLICA_SET.api_version,
        "kind": REPLICA_SET.kind,
        "metadata": {
            "name": f"{name(deployment)}-{digest}",
            "namespace": meta(deployment).get("namespace"),
            "labels": labels,
            "ownerReferences": [owner],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": min_ready_seconds(deployment),
            "selector": selector,
            "template": {**template, "metadata": {**template_meta, "labels": labels}},
        },
    }


def _all(new: JSONObject | None, olds: Sequence[JSONObject]) -> list[JSONObject]:
    return [*olds, *([new] if new is not None else [])]


def _progressing(deployment: JSONObject) -> JSONObject | None:
    return condition(status(deployment).get("conditions"), PROGRESSING)


def _own(deployment: JSONObject) -> Nudge:
    return Nudge(meta(deployment).get("namespace"), name(deployment))


def _deployment_of_pod(pod: JSONObject) -> Nudge | None:
    owner = controller_of("ReplicaSet")(pod)
    if owner is None or "-" not in owner.name:
        return None
    return Nudge(owner.namespace, owner.name.rpartition("-")[0])
