"""The router: every watch event becomes a nudge to the actor of the DGD it concerns (dgd-domain §16).

It owns the lifecycle of DGD actors under the ``dgds`` dynamic supervisor: started on first sight of
a DGD, stopped when the DGD is gone. Nothing is started until every informer finished its first
list (as controller-runtime waits for its caches), so no DGD actor ever reconciles against a
half-filled cache. After a restart the router rebuilds from the cache: it ensures an actor for
every DGD there, stops actors of DGDs that are gone, and nudges them all.

Which events nudge (the watch predicates):

* DGD: first sight; a ``generation`` change or a newly set deletionTimestamp (status and metadata
  edits do not); deletion stops its actor.
* PodCliqueSet, Service and every other kind the DGD controls (owner reference with
  ``controller: true``): updates and deletions, not creations (the DGD actor made them).
* PodClique: updates that change what readiness reads; mapped through the
  ``nvidia.com/dynamo-graph-deployment-name`` label.
* PodCliqueScalingGroup: the same, mapped through its PodCliqueSet to the DGD that controls it.
* Pod (only the managed worker pods of DCDs are watched): creation, deletion, and an update that
  changes its membership labels or whether it has ended; mapped through its DGD-name label.
* Anything a re-list found changed (the informer missed events while it was not watching).

A periodic resync (``resync`` seconds, default 10 minutes) nudges every DGD, so drift in children
nobody watches is repaired too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from typing import Any

import msgspec

from dgd.actors.cache import Cache
from dgd.actors.dgd import Nudge
from dgd.actors.informer import Observed, Synced
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
from dgd.cluster.resources import DGD, PCLQ, PCS, PCSG, POD
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

#: Builds the DGD actor of ``namespace/name``.
Spawn = Callable[[str, str], ChildSpec[Any]]


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
}
OWNED = Route(_changed_or_deleted, _controlling_dgd)


def _dgd_nudges(event_type: str, old: Any, new: Any) -> bool:
    if event_type == "ADDED" or old is None:
        return True
    return bool(
        old.metadata.generation != new.metadata.generation
        or (new.metadata.deletion_timestamp and not old.metadata.deletion_timestamp)
    )


class Router(Actor[RouterMessage]):
    """Maps watch events to DGD actors; starts and stops those actors."""

    mailbox = MailboxConfig(capacity=10_000)

    def __init__(
        self,
        *,
        cache: Cache,
        dgds: str,
        spawn: Spawn,
        informers: Set[str],
        resync: float | None = DEFAULT_RESYNC,
    ) -> None:
        self._cache = cache
        self._dgds_path = dgds
        self._spawn = spawn
        self._informers = frozenset(informers)
        self._resync = resync
        self._live = False
        self._actors: set[str] = set()
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
                for actor_id in sorted(self._actors):
                    self._nudge(actor_id)

    def _all_synced(self) -> bool:
        return all(self._cache.synced_id(rid) for rid in self._informers)

    async def _go_live(self) -> None:
        # Level-triggered: an actor for every DGD in the cache, none for DGDs that are gone.
        self._live = True
        dgds: Ref[Any] = Ref(self.context.system, self._dgds_path)
        wanted = {f"{d.metadata.namespace}/{d.metadata.name}": d for d in self._cache.list(DGD)}
        running: ChildIds = await dgds.ask(WhichChildren())
        for actor_id in running.ids:
            if actor_id not in wanted:
                await dgds.ask(StopChild(actor_id))
        self._actors = set()
        for actor_id in sorted(wanted):
            if not await self._ensure(actor_id):
                self._nudge(actor_id)  # it was running already (a new actor reconciles as it starts)

    async def _route(self, resource: str, event_type: str, old: Any, new: Any, relisted: bool) -> None:
        if resource == str(DGD):
            actor_id = f"{new.metadata.namespace}/{new.metadata.name}"
            if event_type == "DELETED":
                await self._stop(actor_id)
            elif actor_id not in self._actors:
                if not await self._ensure(actor_id):
                    self._nudge(actor_id)
            elif _dgd_nudges(event_type, old, new):
                self._nudge(actor_id)
            return
        route = ROUTES.get(resource, OWNED)
        # A change found by a re-list hides the events before it: it always nudges.
        if not relisted and not route.nudges(event_type, old, new):
            return
        owner = route.owner(new if new is not None else old, self._cache)
        if owner is not None:
            actor_id = f"{owner[0]}/{owner[1]}"
            if actor_id in self._actors:
                self._nudge(actor_id)

    async def _ensure(self, actor_id: str) -> bool:
        """Make sure the DGD's actor runs; ``True`` if it was started now (it then reconciles by itself)."""
        namespace, _, name = actor_id.partition("/")
        dgds: Ref[Any] = Ref(self.context.system, self._dgds_path)
        answer = await dgds.ask(StartChild(self._spawn(namespace, name)))
        if isinstance(answer, StartRefused):
            logger.error("could not start the actor of DGD %s: %s", actor_id, answer.reason)
            return False
        self._actors.add(actor_id)
        return answer.created

    async def _stop(self, actor_id: str) -> None:
        self._actors.discard(actor_id)
        dgds: Ref[Any] = Ref(self.context.system, self._dgds_path)
        await dgds.ask(StopChild(actor_id))

    def _nudge(self, actor_id: str) -> None:
        actor: Ref[Nudge] = Ref(self.context.system, f"{self._dgds_path}/{actor_id}")
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
