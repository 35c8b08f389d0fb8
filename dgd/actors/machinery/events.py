"""Events about DGDs, DCDs and adapters, posted by an actor of their own (``events.k8s.io/v1``).

``Recorder.emit`` never waits for the API server: it builds the Event and tells the ``EventPoster``
actor, which posts events in the order they were told, one at a time, off every reconcile's path —
a slow or refusing API server holds no reconcile worker. An event is best effort, as Kubernetes
treats them: one the API refuses, or one told while the poster's mailbox is full, is dropped and
counted (``dropped``), never raised. When to emit is the caller's rule (``dgd.domain.events``): a
status-transition event is told only after its status was written, so it is posted after it too.

Repeats are aggregated as client-go's event recorder does: an event like one posted less than
``SERIES_WINDOW`` seconds ago (same object, type, reason, action and note) is not posted again; the
first one becomes a series whose ``count`` and ``lastObservedTime`` are updated, at most every
``SERIES_FLUSH`` seconds.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

import msgspec

from dgd.actors.machinery.owners import Owner, kind_of
from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import EVENT
from dgd.domain.events import EventRecord
from dgd.messages.meta import Event, EventSeries, ObjectMeta, ObjectReference
from dgd.messages.timestamps import rfc3339_micro
from dgd.runtime import Actor, MailboxConfig, MailboxFull, Overflow, Ref

logger = logging.getLogger("dgd.events")

#: The ``reportingController`` of every event the operator records.
CONTROLLER = "nvidia.com/dgd-operator"
#: Seconds within which a repeat of an event joins its series instead of being posted again.
SERIES_WINDOW = 360.0
#: Seconds between two updates of one series.
SERIES_FLUSH = 30.0
#: Events waiting to be posted; beyond, new ones are dropped (and counted).
QUEUE = 10_000


def reference(owner: Owner) -> ObjectReference:
    """The ``regarding`` reference of an event about ``owner``."""
    meta = owner.metadata
    kind = kind_of(owner)
    return ObjectReference(
        api_version=kind.API_VERSION, kind=kind.KIND, name=meta.name, namespace=meta.namespace, uid=meta.uid
    )


class PostEvent(msgspec.Struct, frozen=True):
    """Post ``event`` (or add it to the series of the same event)."""

    event: Event


class _Series(msgspec.Struct):
    """One posted event (what its series updates and a warning need of it) and the repeats counted
    since: not the Event itself, which a thousand DGDs' six events each would keep for minutes."""

    namespace: str | None
    name: str
    reason: str | None
    regarding: ObjectReference | None
    first_seen: float
    count: int = 1
    flushed_at: float = 0.0

    @classmethod
    def of(cls, posted: Event, now: float) -> _Series:
        meta = posted.metadata
        return cls(meta.namespace, meta.name or "", posted.reason, posted.regarding, now, flushed_at=now)

    def event(self) -> Event:
        """The posted event as far as it is kept (its name, reason and object)."""
        return Event(
            api_version="events.k8s.io/v1",
            metadata=ObjectMeta(namespace=self.namespace, name=self.name),
            reason=self.reason,
            regarding=self.regarding,
        )


def _identity(event: Event) -> int:
    """What makes two events the same (object, type, reason, action, note), as a 64-bit hash: the
    series table keeps no note (two different events sharing one hash is a chance of about 2**-64)."""
    regarding = event.regarding
    where = (regarding.namespace, regarding.kind, regarding.name, regarding.uid) if regarding else None
    return hash((event.metadata.namespace, where, event.type, event.reason, event.action, event.note))


class EventPoster(Actor[PostEvent]):
    """Posts the events told to it (see the module); the only writer of Events."""

    mailbox = MailboxConfig(capacity=QUEUE, overflow=Overflow.FAIL)

    def __init__(self, cluster: Cluster, recorder: Recorder) -> None:
        self._cluster = cluster
        self._recorder = recorder
        self._series: dict[int, _Series] = {}

    async def on_start(self) -> None:
        self._recorder.attach(self.context.ref)

    async def receive(self, message: PostEvent) -> None:
        event, now = message.event, self._recorder.now()
        key = _identity(event)
        series = self._series.get(key)
        if series is not None and now - series.first_seen < SERIES_WINDOW:
            series.count += 1
            if now - series.flushed_at >= SERIES_FLUSH:
                await self._flush(series, now)
            return
        self._forget_old(now)
        try:
            posted = await self._cluster.emit(event)
        except ClusterError as error:
            self._recorder.dropped_one(event, str(error))
            return
        self._series[key] = _Series.of(posted, now)

    async def _flush(self, series: _Series, now: float) -> None:
        """Write the series' count and last observation onto its posted event."""
        patch = {
            "series": msgspec.to_builtins(
                EventSeries(count=series.count, last_observed_time=rfc3339_micro(now))
            )
        }
        try:
            await self._cluster.patch(EVENT.as_raw().key(series.namespace, series.name), patch)
        except ClusterError as error:
            self._recorder.dropped_one(series.event(), f"series update: {error}")
        series.flushed_at = now

    def _forget_old(self, now: float) -> None:
        if len(self._series) > 4 * QUEUE:
            self._series = {k: s for k, s in self._series.items() if now - s.first_seen < SERIES_WINDOW}


class Recorder:
    """Builds Events about DGDs and adapters and tells them to the ``EventPoster`` (see the module);
    ``now()`` gives seconds since the epoch."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        instance: str,
        now: Callable[[], float],
        on_dropped: Callable[[str], None] | None = None,
    ) -> None:
        self._cluster = cluster
        self.now = now
        self._instance = instance
        self._poster: Ref[PostEvent] | None = None
        self._on_dropped = on_dropped
        #: Events dropped, by why (``refused``: the API said no; ``full``: the queue was full).
        self.dropped: Counter[str] = Counter()

    def attach(self, poster: Ref[PostEvent]) -> None:
        """The poster that posts what ``emit`` tells (it attaches itself as it starts)."""
        self._poster = poster

    def poster(self) -> EventPoster:
        """The actor that posts this recorder's events (for the operator tree)."""
        return EventPoster(self._cluster, self)

    async def emit(self, owner: Owner, record: EventRecord) -> None:
        """Tell the poster one event about ``owner`` (a DGD or a DCD; returns at once)."""
        self.emit_regarding(owner.metadata.namespace, reference(owner), record)

    def emit_regarding(self, namespace: str | None, regarding: ObjectReference, record: EventRecord) -> None:
        """Tell the poster one event about the object ``regarding`` names (returns at once)."""
        event = self.event(namespace, regarding, record)
        if self._poster is None:
            self.dropped_one(event, "the event poster is not running")
            return
        try:
            self._poster.tell_nowait(PostEvent(event))
        except MailboxFull:
            self.dropped_one(event, f"more than {QUEUE} events wait to be posted", why="full")

    def event(self, namespace: str | None, regarding: ObjectReference, record: EventRecord) -> Event:
        """The Event this recorder posts for ``record`` about ``regarding``, stamped now."""
        return Event(
            api_version="events.k8s.io/v1",
            # The port names the event (``<object>.<unique suffix>``).
            metadata=ObjectMeta(namespace=namespace),
            event_time=rfc3339_micro(self.now()),
            reporting_controller=CONTROLLER,
            reporting_instance=self._instance,
            action=record.action,
            reason=record.reason,
            regarding=regarding,
            related=record.related,
            note=record.note[:1024],
            type=record.type,
        )

    def dropped_one(self, event: Event, reason: str, *, why: str = "refused") -> None:
        self.dropped[why] += 1
        if self._on_dropped is not None:
            self._on_dropped(why)
        regarding = event.regarding
        logger.warning(
            "event %s on %s %s/%s dropped: %s",
            event.reason,
            regarding.kind if regarding else "?",
            event.metadata.namespace,
            regarding.name if regarding else "?",
            reason,
        )
