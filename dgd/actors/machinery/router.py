"""The router: every watch event becomes a nudge to the actor it concerns (dgd-domain §16, §13.3).

It owns the lifecycle of two families of per-object actors, each under its dynamic supervisor: DGD
actors (``dgds``) and scaling-adapter actors (``adapters``, the DGDSA controller). An actor is
started on first sight of its object and stopped when the object is gone. Nothing is started until
every informer finished its first list (as controller-runtime waits for its caches), so no actor
ever reconciles against a half-filled cache. After a restart the router rebuilds from the cache: it
ensures an actor for every DGD and adapter there, stops actors of objects that are gone, and nudges
them all. Which events nudge which actor (the watch predicates) is ``dgd.actors.machinery.routes``.

A periodic resync (``resync`` seconds, default 10 minutes) nudges every DGD and every adapter, so
drift in children nobody watches is repaired too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from typing import Any

import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.informer import Observed, Synced
from dgd.actors.machinery.loop import Nudge
from dgd.actors.machinery.notices import WriteNotices
from dgd.actors.machinery.routes import (
    DCD_CHILD_ROUTES,
    OWNED,
    ROUTES,
    adapter_nudges,
    adapters_concerned,
    controlling_dcd,
    controlling_dgd,
    dgd_nudges,
    object_key,
)
from dgd.cluster.resources import DCD, DGD, DGDSA
from dgd.runtime import (
    Actor,
    ChildIds,
    ChildSpec,
    MailboxConfig,
    MailboxFull,
    Ref,
    RestartChildNow,
    StartChild,
    StopChild,
    Timer,
    WhichChildren,
)

logger = logging.getLogger("dgd.router")

#: Seconds between two nudges of every DGD, when not configured otherwise.
DEFAULT_RESYNC = 600.0


class Resync(msgspec.Struct, frozen=True):
    """Nudge every DGD (sent by the router to itself every resync period)."""


class Written(msgspec.Struct, frozen=True):
    """The operator wrote this object (``WriteNotices``): its watch event will look like no change."""

    resource: str
    namespace: str | None
    name: str


RouterMessage = Observed | Synced | Resync | Written

#: Builds the actor of the object ``namespace/name`` (a DGD, or a scaling adapter).
Spawn = Callable[[str, str], ChildSpec[Any]]


class ObjectActors:
    """Per-object actors under one dynamic supervisor: its path, how to build one, and which run."""

    def __init__(self, path: str, spawn: Spawn) -> None:
        self.path = path
        self.spawn = spawn
        self.running: set[str] = set()


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
        dcds: str | None = None,
        spawn_dcd: Spawn | None = None,
        notices: WriteNotices | None = None,
    ) -> None:
        self._cache = cache
        self._dgds = ObjectActors(dgds, spawn)
        self._adapters = ObjectActors(adapters, spawn_adapter)
        #: The DCD controller's actors, when this operator runs it.
        self._dcds = ObjectActors(dcds, spawn_dcd) if dcds is not None and spawn_dcd is not None else None
        self._informers = frozenset(informers)
        self._resync = resync
        self._notices = notices
        self._live = False
        self._timer: Timer | None = None

    async def on_start(self) -> None:
        if self._notices is not None and self._dcds is not None:
            ref = self.context.ref

            def heard(resource: str, namespace: str | None, name: str) -> None:
                try:
                    ref.tell_nowait(Written(resource, namespace, name))
                except MailboxFull:
                    logger.warning(
                        "router mailbox full: a write of %s %s/%s not routed", resource, namespace, name
                    )

            self._notices.attach(heard)
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
            case Written(resource=resource, namespace=namespace, name=name):
                # A DCD the DGD controller wrote: its spec may have changed, which the DCD actor must see.
                if self._live and self._dcds is not None and resource == str(DCD):
                    self._nudge_if_running(self._dcds, f"{namespace}/{name}")
            case Resync():
                self._schedule_resync()
                for family in self._families():
                    for actor_id in sorted(family.running):
                        self._nudge(family, actor_id)

    def _families(self) -> list[ObjectActors]:
        return [self._dgds, self._adapters, *([self._dcds] if self._dcds is not None else [])]

    def _all_synced(self) -> bool:
        return all(self._cache.synced_id(rid) for rid in self._informers)

    async def _go_live(self) -> None:
        # Level-triggered: an actor for every object in the cache, none for objects that are gone.
        self._live = True
        await self._rebuild(self._dgds, {object_key(d) for d in self._cache.list(DGD)})
        adapters = self._cache.list(DGDSA) if self._cache.caches(DGDSA) else []
        await self._rebuild(self._adapters, {object_key(a) for a in adapters})
        if self._dcds is not None:
            await self._rebuild(self._dcds, {object_key(d) for d in self._cache.list(DCD)})

    async def _rebuild(self, family: ObjectActors, wanted: set[str]) -> None:
        running: ChildIds = await self._supervisor(family).ask(WhichChildren())
        for actor_id in running.ids:
            if actor_id not in wanted:
                await self._stop(family, actor_id)
        family.running = set()
        for actor_id in sorted(wanted):
            await self._ensure(family, actor_id)

    async def _route(self, resource: str, event_type: str, old: Any, new: Any, relisted: bool) -> None:
        # A deletion a re-list found has no new version: the last one seen stands for it.
        new = new if new is not None else old
        if resource == str(DGD):
            await self._route_dgd(event_type, old, new)
            return
        if resource == str(DGDSA):
            await self._route_adapter(event_type, old, new, relisted)
            return
        if self._dcds is not None:
            await self._route_to_dcd(self._dcds, resource, event_type, old, new, relisted)
        route = ROUTES.get(resource, OWNED)
        # A change found by a re-list hides the events before it: it always nudges.
        if not relisted and not route.nudges(event_type, old, new):
            return
        owner = route.owner(new, self._cache)
        if owner is not None:
            self._nudge_if_running(self._dgds, f"{owner[0]}/{owner[1]}")

    async def _route_dgd(self, event_type: str, old: Any, new: Any) -> None:
        actor_id = object_key(new)
        if event_type == "DELETED":
            await self._stop(self._dgds, actor_id)
        elif actor_id not in self._dgds.running:
            await self._ensure(self._dgds, actor_id)
        elif dgd_nudges(event_type, old, new):
            self._nudge(self._dgds, actor_id)
            await self._resume_if_respecified(self._dgds, actor_id, old, new)
        # The adapters that drive this DGD's replicas see every change of them.
        if self._cache.caches(DGDSA) and adapters_concerned(event_type, old, new):
            for adapter in self._cache.referring(DGDSA, new.metadata.namespace, new.metadata.name):
                self._nudge_if_running(self._adapters, object_key(adapter))

    async def _route_to_dcd(
        self, dcds: ObjectActors, resource: str, event_type: str, old: Any, new: Any, relisted: bool
    ) -> None:
        """The DCD controller's share of an event: a DCD's own, or one of a child a DCD controls."""
        if resource == str(DCD):
            actor_id = object_key(new)
            if event_type == "DELETED":
                await self._stop(dcds, actor_id)
            elif actor_id not in dcds.running:
                await self._ensure(dcds, actor_id)
            elif relisted or dgd_nudges(event_type, old, new):
                self._nudge(dcds, actor_id)
                await self._resume_if_respecified(dcds, actor_id, old, new)
            return
        nudges = DCD_CHILD_ROUTES.get(resource)
        if nudges is None or not (relisted or nudges(event_type, old, new)):
            return
        owner = controlling_dcd(new)
        if owner is not None:
            self._nudge_if_running(dcds, f"{owner[0]}/{owner[1]}")

    async def _route_adapter(self, event_type: str, old: Any, new: Any, relisted: bool) -> None:
        actor_id = object_key(new)
        if event_type == "DELETED":
            await self._stop(self._adapters, actor_id)
            # The DGD that controls it recreates it if it still wants it.
            owner = controlling_dgd(new, self._cache)
            if owner is not None:
                self._nudge_if_running(self._dgds, f"{owner[0]}/{owner[1]}")
        elif actor_id not in self._adapters.running:
            await self._ensure(self._adapters, actor_id)
        elif relisted or adapter_nudges(old, new):
            self._nudge(self._adapters, actor_id)
            await self._resume_if_respecified(self._adapters, actor_id, old, new)

    # The router tells its supervisors and never waits for them: a stop may take an actor's whole
    # shutdown timeout, and events for every other object keep flowing meanwhile.

    async def _ensure(self, family: ObjectActors, actor_id: str) -> None:
        """Have the object's actor run: started (it then reconciles by itself), or nudged if it runs."""
        namespace, _, name = actor_id.partition("/")
        await self._supervisor(family).tell(StartChild(family.spawn(namespace, name), if_running=Nudge()))
        family.running.add(actor_id)

    async def _stop(self, family: ObjectActors, actor_id: str) -> None:
        family.running.discard(actor_id)
        await self._supervisor(family).tell(StopChild(actor_id))

    async def _resume_if_respecified(self, family: ObjectActors, actor_id: str, old: Any, new: Any) -> None:
        """A new spec ends the wait of a parked actor (``Supervision.park``; its stand-in said why, see
        ``Reconciler.on_start``)."""
        if old is not None and old.metadata.generation != new.metadata.generation:
            await self._supervisor(family).tell(RestartChildNow(actor_id))

    def _supervisor(self, family: ObjectActors) -> Ref[Any]:
        return Ref(self.context.system, family.path)

    def _nudge_if_running(self, family: ObjectActors, actor_id: str) -> None:
        if actor_id in family.running:
            self._nudge(family, actor_id)

    def _nudge(self, family: ObjectActors, actor_id: str) -> None:
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
