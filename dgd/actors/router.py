"""The router: every watch event becomes a nudge to the actor it concerns (dgd-domain §16, §13.3).

It owns the lifecycle of two families of per-object actors, each under its dynamic supervisor: DGD
actors (``dgds``) and scaling-adapter actors (``adapters``, the DGDSA controller). An actor is
started on first sight of its object and stopped when the object is gone. Nothing is started until
every informer finished its first list (as controller-runtime waits for its caches), so no actor
ever reconciles against a half-filled cache. After a restart the router rebuilds from the cache: it
ensures an actor for every DGD and adapter there, stops actors of objects that are gone, and nudges
them all.

Which events nudge a DGD actor (the watch predicates):

* DGD: first sight; a ``generation`` change or a newly set deletionTimestamp (status and metadata
  edits do not); deletion stops its actor.
* DynamoGraphDeploymentScalingAdapter: deletion only, mapped to the DGD that controls it.
* DynamoCheckpoint: updates and deletions (not creations) of checkpoints annotated
  ``nvidia.com/dynamo-auto-checkpoint: "true"``, mapped through their
  ``nvidia.com/dynamo-graph-deployment-name`` label (how ``WaitForCheckpoint`` learns a checkpoint
  became Ready).
* PodCliqueSet, Service and every other kind the DGD controls (owner reference with
  ``controller: true``): updates and deletions, not creations (the DGD actor made them).
* DynamoComponentDeployment: the same, except updates that change nothing the DGD reads (a finalizer
  added or removed by the DCD controller).
* PodClique: updates that change what readiness reads; mapped through the
  ``nvidia.com/dynamo-graph-deployment-name`` label.
* PodCliqueScalingGroup: the same, mapped through its PodCliqueSet to the DGD that controls it.
* Pod (only the managed worker pods of DCDs are watched): creation, deletion, and an update that
  changes its membership labels or whether it has ended; mapped through its DGD-name label.
* Anything a re-list found changed (the informer missed events while it was not watching).

Which events nudge an adapter actor:

* DynamoGraphDeploymentScalingAdapter: first sight (which starts it) and a ``generation`` change
  (a new ``spec.replicas``; its own status writes do not); deletion stops its actor.
* DGD: creation, deletion, and an update whose components differ in names or replicas; every
  adapter whose ``spec.dgdRef.name`` is that DGD is nudged.

A periodic resync (``resync`` seconds, default 10 minutes) nudges every DGD and every adapter, so
drift in children nobody watches is repaired too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from typing import Any

import msgspec

from dgd.actors.cache import Cache
from dgd.actors.informer import Observed, Synced
from dgd.actors.reconciles import Nudge
from dgd.actors.runtime import (
    Actor,
    ChildIds,
    ChildSpec,
    MailboxConfig,
    MailboxFull,
    Ref,
    StartChild,
    StartRefused,
    StopChild,
    Timer,
    WhichChildren,
)
from dgd.cluster.resources import CHECKPOINT, DCD, DGD, DGDSA, PCLQ, PCS, PCSG, POD
from dgd.domain.checkpoint import AUTO as AUTO_CHECKPOINT
from dgd.domain.metadata_keys import GRAPH_NAME, SELECTOR
from dgd.messages import dgd as dgd_messages
from dgd.messages import grove
from dgd.messages.meta import OwnerReference

logger = logging.getLogger("dgd.router")

#: Seconds between two nudges of every DGD, when not configured otherwise.
DEFAULT_RESYNC = 600.0


class Resync(msgspec.Struct, frozen=True):
    """Nudge every DGD (sent by the router to itself every resync period)."""


RouterMessage = Observed | Synced | Resync

#: Builds the actor of the object ``namespace/name`` (a DGD, or a scaling adapter).
Spawn = Callable[[str, str], ChildSpec[Any]]


class Family:
    """Per-object actors under one dynamic supervisor: its path, how to build one, and which run."""

    def __init__(self, path: str, spawn: Spawn) -> None:
        self.path = path
        self.spawn = spawn
        self.running: set[str] = set()


def _meta(obj: Any) -> tuple[str | None, dict[str, str], list[Any]]:
    """Namespace, labels and owner references of a Struct or raw JSON object."""
    if isinstance(obj, dict):
        metadata = obj.get("metadata") or {}
        owners = [msgspec.convert(o, OwnerReference) for o in metadata.get("ownerReferences") or ()]
        return metadata.get("namespace"), metadata.get("labels") or {}, owners
    meta = obj.metadata
    return meta.namespace, meta.labels or {}, list(meta.owner_references or ())


def _controller(obj: Any, kind: str, group: str) -> tuple[str, str] | None:
    namespace, _, owners = _meta(obj)
    for owner in owners:
        if owner.controller and owner.kind == kind and owner.api_version.split("/")[0] == group and namespace:
            return namespace, owner.name
    return None


def _controlling_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    return _controller(obj, dgd_messages.KIND, dgd_messages.GROUP)


def _labelled_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    namespace, labels, _ = _meta(obj)
    name = labels.get(GRAPH_NAME)
    return (namespace, name) if namespace and name else None


def _scaling_group_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    # PCSG -> its PodCliqueSet -> the DGD that controls it (PCS names may be shortened; labels are not used).
    owner = _controller(obj, grove.PCS_KIND, grove.GROUP)
    if owner is None or not cache.caches(PCS):
        return None
    pcs = cache.get(PCS, *owner)
    return _controlling_dgd(pcs, cache) if pcs is not None else None


def _auto_checkpoint_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    # Only the checkpoints a DGD made for itself wake it (dgd-domain §10.3 "Re-triggering").
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return _labelled_dgd(obj, cache) if annotations.get(AUTO_CHECKPOINT) == "true" else None


def _changed_or_deleted(event_type: str, old: Any, new: Any) -> bool:
    return event_type in ("MODIFIED", "DELETED")


def _pod_view(pod: Any) -> Any:
    """What the rollout reads of a managed worker pod: its membership labels and whether it ended."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    phase = (pod.get("status") or {}).get("phase")
    return labels.get(GRAPH_NAME), labels.get(SELECTOR), phase in ("Succeeded", "Failed")


def _pod_changed(event_type: str, old: Any, new: Any) -> bool:
    if event_type != "MODIFIED" or old is None:
        return True
    return bool(_pod_view(old) != _pod_view(new))


def _dcd_view(dcd: Any) -> Any:
    """What the DGD reads of a DCD: its generation and metadata (drift), replicas, and its status."""
    meta = dcd.metadata
    return (
        meta.generation,
        meta.labels,
        meta.annotations,
        meta.deletion_timestamp,
        dcd.spec.replicas,
        dcd.status,
    )


def _dcd_changed(event_type: str, old: Any, new: Any) -> bool:
    """A DCD update nudges its DGD unless only what the DGD does not read changed (its finalizers, a
    resourceVersion)."""
    if event_type != "MODIFIED" or old is None:
        return event_type in ("MODIFIED", "DELETED")
    return bool(_dcd_view(old) != _dcd_view(new))


def _readiness_view(obj: Any) -> Any:
    """What readiness reads of a PodClique or PodCliqueScalingGroup (§9.8)."""
    status = obj.status
    conditions = tuple(
        (c.type, c.status, c.reason)
        for c in (status.conditions if status else None) or ()
        if c.type in ("PodCliqueScheduled", "MinAvailableBreached")
    )
    if status is None:
        return (obj.spec.replicas, None)
    progress = status.update_progress
    return (
        obj.spec.replicas,
        status.replicas,
        status.updated_replicas,
        getattr(status, "ready_replicas", None),
        getattr(status, "available_replicas", None),
        status.scheduled_replicas,
        getattr(status, "schedule_gated_replicas", None),
        status.observed_generation,
        status.current_pod_clique_set_generation_hash,
        progress is not None and progress.update_ended_at is not None,
        conditions,
    )


def _readiness_changed(event_type: str, old: Any, new: Any) -> bool:
    return event_type == "MODIFIED" and old is not None and _readiness_view(old) != _readiness_view(new)


class Route(msgspec.Struct, frozen=True):
    """Which events of a kind nudge, and the DGD (namespace, name) an object belongs to."""

    nudges: Callable[[str, Any, Any], bool]
    owner: Callable[[Any, Cache], tuple[str, str] | None]


#: Routes of the kinds with a rule of their own; every other watched kind is "owned by a DGD".
ROUTES: dict[str, Route] = {
    str(PCLQ): Route(_readiness_changed, _labelled_dgd),
    str(PCSG): Route(_readiness_changed, _scaling_group_dgd),
    str(POD): Route(_pod_changed, _labelled_dgd),
    str(DCD): Route(_dcd_changed, _controlling_dgd),
    str(CHECKPOINT): Route(_changed_or_deleted, _auto_checkpoint_dgd),
}
OWNED = Route(_changed_or_deleted, _controlling_dgd)


def _dgd_nudges(event_type: str, old: Any, new: Any) -> bool:
    if event_type == "ADDED" or old is None:
        return True
    return bool(
        old.metadata.generation != new.metadata.generation
        or (new.metadata.deletion_timestamp and not old.metadata.deletion_timestamp)
    )


def _replica_view(dgd: Any) -> tuple[tuple[str, int | None], ...]:
    """What the scaling adapters of a DGD read of it: its components' names and replicas."""
    return tuple((c.name, c.replicas) for c in dgd.spec.components or ())


def _adapters_concerned(event_type: str, old: Any, new: Any) -> bool:
    if event_type != "MODIFIED" or old is None:
        return True
    return _replica_view(old) != _replica_view(new)


def _adapter_nudges(old: Any, new: Any) -> bool:
    return old is None or bool(old.metadata.generation != new.metadata.generation)


def _key(obj: Any) -> str:
    return f"{obj.metadata.namespace}/{obj.metadata.name}"


class Router(Actor[RouterMessage]):
    """Maps watch events to DGD and adapter actors; starts and stops those actors."""

    mailbox = MailboxConfig(capacity=10_000)

    def __init__(
        self,
        *,
        cache: Cache,
        dgds: str,
        spawn: Spawn,
        adapters: str,
        spawn_adapter: Spawn,
        informers: Set[str],
        resync: float | None = DEFAULT_RESYNC,
    ) -> None:
        self._cache = cache
        self._dgds = Family(dgds, spawn)
        self._adapters = Family(adapters, spawn_adapter)
        self._informers = frozenset(informers)
        self._resync = resync
        self._live = False
        self._timer: Timer | None = None

    async def on_start(self) -> None:
        if self._resync:
            self._schedule_resync()
        if self._all_synced():
            await self._go_live()

    async def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def receive(self, message: RouterMessage) -> None:
        match message:
            case Synced():
                if not self._live and self._all_synced():
                    await self._go_live()
            case Observed(resource=resource, type=event_type, old=old, new=new, relisted=relisted):
                if self._live:
                    await self._route(resource, event_type, old, new, relisted)
            case Resync():
                self._schedule_resync()
                for family in (self._dgds, self._adapters):
                    for actor_id in sorted(family.running):
                        self._nudge(family, actor_id)

    def _all_synced(self) -> bool:
        return all(self._cache.synced_id(rid) for rid in self._informers)

    async def _go_live(self) -> None:
        # Level-triggered: an actor for every object in the cache, none for objects that are gone.
        self._live = True
        await self._rebuild(self._dgds, {_key(d) for d in self._cache.list(DGD)})
        adapters = self._cache.list(DGDSA) if self._cache.caches(DGDSA) else []
        await self._rebuild(self._adapters, {_key(a) for a in adapters})

    async def _rebuild(self, family: Family, wanted: set[str]) -> None:
        supervisor: Ref[Any] = Ref(self.context.system, family.path)
        running: ChildIds = await supervisor.ask(WhichChildren())
        for actor_id in running.ids:
            if actor_id not in wanted:
                await supervisor.ask(StopChild(actor_id))
        family.running = set()
        for actor_id in sorted(wanted):
            if not await self._ensure(family, actor_id):
                self._nudge(family, actor_id)  # it was running already (a new actor reconciles as it starts)

    async def _route(self, resource: str, event_type: str, old: Any, new: Any, relisted: bool) -> None:
        # A deletion a re-list found has no new version: the last one seen stands for it.
        new = new if new is not None else old
        if resource == str(DGD):
            await self._route_dgd(event_type, old, new)
            return
        if resource == str(DGDSA):
            await self._route_adapter(event_type, old, new, relisted)
            return
        route = ROUTES.get(resource, OWNED)
        # A change found by a re-list hides the events before it: it always nudges.
        if not relisted and not route.nudges(event_type, old, new):
            return
        owner = route.owner(new, self._cache)
        if owner is not None:
            self._nudge_if_running(self._dgds, f"{owner[0]}/{owner[1]}")

    async def _route_dgd(self, event_type: str, old: Any, new: Any) -> None:
        actor_id = _key(new)
        if event_type == "DELETED":
            await self._stop(self._dgds, actor_id)
        elif actor_id not in self._dgds.running:
            if not await self._ensure(self._dgds, actor_id):
                self._nudge(self._dgds, actor_id)
        elif _dgd_nudges(event_type, old, new):
            self._nudge(self._dgds, actor_id)
        # The adapters that drive this DGD's replicas see every change of them.
        if self._cache.caches(DGDSA) and _adapters_concerned(event_type, old, new):
            for adapter in self._cache.list(DGDSA, new.metadata.namespace):
                if adapter.spec.dgd_ref.name == new.metadata.name:
                    self._nudge_if_running(self._adapters, _key(adapter))

    async def _route_adapter(self, event_type: str, old: Any, new: Any, relisted: bool) -> None:
        actor_id = _key(new)
        if event_type == "DELETED":
            await self._stop(self._adapters, actor_id)
            # The DGD that controls it recreates it if it still wants it.
            owner = _controlling_dgd(new, self._cache)
            if owner is not None:
                self._nudge_if_running(self._dgds, f"{owner[0]}/{owner[1]}")
        elif actor_id not in self._adapters.running:
            if not await self._ensure(self._adapters, actor_id):
                self._nudge(self._adapters, actor_id)
        elif relisted or _adapter_nudges(old, new):
            self._nudge(self._adapters, actor_id)

    async def _ensure(self, family: Family, actor_id: str) -> bool:
        """Make sure the object's actor runs; ``True`` if started now (it then reconciles by itself)."""
        namespace, _, name = actor_id.partition("/")
        supervisor: Ref[Any] = Ref(self.context.system, family.path)
        answer = await supervisor.ask(StartChild(family.spawn(namespace, name)))
        if isinstance(answer, StartRefused):
            logger.error("could not start the actor of %s: %s", actor_id, answer.reason)
            return False
        family.running.add(actor_id)
        return answer.created

    async def _stop(self, family: Family, actor_id: str) -> None:
        family.running.discard(actor_id)
        supervisor: Ref[Any] = Ref(self.context.system, family.path)
        await supervisor.ask(StopChild(actor_id))

    def _nudge_if_running(self, family: Family, actor_id: str) -> None:
        if actor_id in family.running:
            self._nudge(family, actor_id)

    def _nudge(self, family: Family, actor_id: str) -> None:
        actor: Ref[Nudge] = Ref(self.context.system, f"{family.path}/{actor_id}")
        actor.tell_nowait(Nudge())

    def _schedule_resync(self) -> None:
        assert self._resync is not None
        ref = self.context.ref

        def due() -> None:
            try:
                ref.tell_nowait(Resync())
            except MailboxFull:
                logger.warning("router mailbox full: resync skipped")

        self._timer = self.context.clock.call_later(self._resync, due)
