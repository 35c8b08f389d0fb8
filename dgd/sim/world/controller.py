"""The shape every world model shares: a level-triggered controller actor fed by list+watch.

A world controller reconciles *roots* (a PodCliqueSet, a DCD, a checkpoint, or the one pod pool),
one at a time, each from a fresh read of the cluster: it never trusts a cache, so a restart loses
nothing (its watchers re-list and nudge every root again). Its children are one :class:`Watcher` per
watched resource, which turns every listed or changed object into a :class:`Nudge` of its root.
Nudges for one root coalesce in the mailbox, so a burst of changes costs one reconcile.

A reconcile returns the cluster time at which its root must be looked at again (a pod that becomes
ready later, a checkpoint job that finishes), or ``None``; the controller keeps one timer per root.
An API error is not a crash: the root is retried after ``retry_delay``. Anything else crashes the
controller, and its supervisor restarts it with fresh state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import msgspec

from dgd.cluster.errors import ClusterError, Forbidden, Gone, Invalid, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import Resource
from dgd.messages.meta import ObjectMeta
from dgd.messages.timestamps import Clock
from dgd.runtime import (
    Actor,
    Backoff,
    ChildSpec,
    MailboxConfig,
    Ref,
    Supervision,
    Timer,
)
from dgd.sim.world.settings import WorldSettings

logger = logging.getLogger("dgd.sim")

#: Slack when comparing cluster times: a timer that fires a hair early still counts as due.
EPSILON = 1e-6


class Nudge(msgspec.Struct, frozen=True):
    """Reconcile this root against the cluster now (``namespace`` is ``None`` when cluster-wide)."""

    namespace: str | None
    name: str


class Resync(msgspec.Struct, frozen=True):
    """The settings changed: reconcile every root again."""


WorldMessage = Nudge | Resync

#: Maps a watched object to the root it belongs to (``None``: not ours).
Route = Callable[[Any], Nudge | None]


class _Owned(Protocol):
    """A typed object: what ``WorldController.live_root`` reads of a root."""

    @property
    def metadata(self) -> ObjectMeta: ...


Root = TypeVar("Root", bound=_Owned)


class Watch(msgspec.Struct, frozen=True):
    """One resource a controller watches, optionally narrowed by labels, and how to route it."""

    resource: Resource[Any]
    route: Route
    label_selector: str | None = None


def _coalesce(message: object) -> tuple[str | None, str] | None:
    return (message.namespace, message.name) if isinstance(message, Nudge) else None


class Run(msgspec.Struct, frozen=True):
    """Start the list+watch loop (a watcher tells it to itself once)."""


class Watcher(Actor[Run]):
    """Lists and watches one resource and nudges its controller for every object it sees.

    Re-lists after ``Gone`` (and at every start), resumes a dropped watch from the last
    resourceVersion, and waits ``retry_delay`` after an API error. Its one message runs the loop until
    the watcher is stopped, so its child spec must stop it by cancelling (``shutdown=0``).
    """

    def __init__(
        self, cluster: Cluster, watch: Watch, target: Ref[WorldMessage], settings: Callable[[], WorldSettings]
    ) -> None:
        self._cluster = cluster
        self._watch = watch
        self._target = target
        self._settings = settings

    async def on_start(self) -> None:
        await self.context.ref.tell(Run())

    async def receive(self, message: Run) -> None:
        version: str | None = None
        while True:
            delivered = 0
            try:
                if version is None:
                    version = await self._list()
                async with self._cluster.watch(
                    self._watch.resource,
                    label_selector=self._watch.label_selector,
                    resource_version=version,
                    bookmarks=True,
                ) as stream:
                    async for event in stream:
                        version = event.resource_version
                        delivered += 1
                        if event.object is not None:
                            await self._nudge(event.object)
            except Gone:
                version = None
                continue
            except ClusterError as error:
                logger.debug("%s: %r; retrying", self.context.path, error)
            if not delivered:
                # A stream that ends at once, or an error: do not spin.
                await self.context.clock.sleep(max(self._settings().retry_delay, EPSILON))

    async def _list(self) -> str:
        listed = await self._cluster.list(self._watch.resource, label_selector=self._watch.label_selector)
        for obj in listed.items:
            await self._nudge(obj)
        return listed.resource_version

    async def _nudge(self, obj: Any) -> None:
        nudge = self._watch.route(obj)
        if nudge is not None:
            await self._target.tell(nudge)


class WorldController(Actor[WorldMessage]):
    """The base of every world model (see the module): subclasses say what they watch (``watches``,
    their roots' own kind first), which roots there are (``roots``, if not every object of that kind)
    and how to ``reconcile`` one root."""

    mailbox = MailboxConfig(capacity=100_000, coalesce=_coalesce)
    supervision = Supervision(intensity=20, period=60.0, backoff=Backoff(initial=0.5, maximum=5.0))

    def __init__(self, cluster: Cluster, settings: Callable[[], WorldSettings], clock: Clock) -> None:
        self.cluster = cluster
        self._settings = settings
        self.clock = clock
        self._timers: dict[tuple[str | None, str], Timer] = {}

    @property
    def settings(self) -> WorldSettings:
        """The settings in force now."""
        return self._settings()

    def watches(self) -> Sequence[Watch]:
        """The resources to list and watch, each routed to a root."""
        raise NotImplementedError

    async def roots(self) -> list[Nudge]:
        """Every root there is now (what ``Resync`` reconciles): by default every object of the first
        resource ``watches`` names (the roots' own kind), routed as that watch routes it."""
        own = self.watches()[0]
        listed = (await self.cluster.list(own.resource, label_selector=own.label_selector)).items
        return [nudge for nudge in map(own.route, listed) if nudge is not None]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        """Bring one root's world up to date; return when to look again (cluster time) or ``None``."""
        raise NotImplementedError

    def children(self) -> Sequence[ChildSpec[Any]]:
        return [self._watcher(watch) for watch in self.watches()]

    async def live_root(
        self, resource: Resource[Root], namespace: str, name: str, finalizer: str
    ) -> Root | None:
        """The root ``namespace/name`` of ``resource``, holding ``finalizer`` (added if missing); ``None``
        when it is gone, or being deleted: then ``finalizer`` is released at once, as the cleanup it
        guards is instant here (the root's children go by garbage collection)."""
        try:
            root = await self.cluster.get(resource.key(namespace, name))
        except NotFound:
            return None
        if root.metadata.deletion_timestamp:
            await self._finalizer(resource, root, finalizer, keep=False)
            return None
        return await self._finalizer(resource, root, finalizer, keep=True)

    async def _finalizer(self, resource: Resource[Root], root: Root, finalizer: str, *, keep: bool) -> Root:
        finalizers = list(root.metadata.finalizers or [])
        if (finalizer in finalizers) == keep:
            return root
        finalizers = [*finalizers, finalizer] if keep else [f for f in finalizers if f != finalizer]
        key = resource.key(root.metadata.namespace, root.metadata.name or "")
        return await self.cluster.patch(key, {"metadata": {"finalizers": finalizers or None}})

    def _watcher(self, watch: Watch) -> ChildSpec[Any]:
        # A watcher's loop never returns to its mailbox: it is stopped by cancelling it.
        target: Ref[WorldMessage] = self.context.ref
        return ChildSpec(
            f"watch-{watch.resource.plural}",
            lambda: Watcher(self.cluster, watch, target, self._settings),
            shutdown=0,
        )

    async def on_stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    async def receive(self, message: WorldMessage) -> None:
        match message:
            case Nudge(namespace=namespace, name=name):
                await self._reconcile(namespace, name)
            case Resync():
                for nudge in await self.roots():
                    await self.context.ref.tell(nudge)

    async def _reconcile(self, namespace: str | None, name: str) -> None:
        key = (namespace, name)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        try:
            due = await self.reconcile(namespace, name)
        except ClusterError as error:
            # Conflicts, vanished objects and transient answers are normal here: look again from fresh
            # state. A refusal (a pod a real API server rejects, a missing permission) is the user's to see.
            level = logging.WARNING if isinstance(error, (Forbidden, Invalid)) else logging.DEBUG
            logger.log(level, "%s: %s/%s: %s; retrying", self.context.path, namespace, name, error)
            due = self.clock() + self.settings.retry_delay
        if due is not None:
            self._wake(key, due)

    def _wake(self, key: tuple[str | None, str], due: float) -> None:
        ref = self.context.ref
        nudge = Nudge(*key)
        delay = max(due - self.clock(), 0.0)
        self._timers[key] = self.context.clock.call_later(delay, lambda: ref.tell_nowait(nudge))


def earliest(*times: float | None) -> float | None:
    """The earliest of some optional times (``None`` if there is none)."""
    known = [time for time in times if time is not None]
    return min(known) if known else None


def parse_time(text: str | None) -> float | None:
    """A ``metav1.Time`` (``YYYY-MM-DDTHH:MM:SSZ``) as seconds since the Unix epoch."""
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
