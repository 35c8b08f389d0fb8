"""Watches on the memory API server: fan-out of store changes to many watchers, without blocking writers.

Each open watch has a bounded buffer. A write appends its change to the buffer of every watch it
concerns, synchronously and in resourceVersion order, and never waits for a reader. A watch whose
buffer is full is *dropped*, as the API server drops an unresponsive watcher: it stops receiving
changes, its reader still gets everything buffered, and then the iteration ends. The reader resumes
by watching from the last resourceVersion it saw (``Gone`` if that has left the history by then).

(The buffer is a deque plus a wake-up future rather than a memory object stream so that a
bookmark timeout can never cancel a receive that already took an item; the bookmark timeout is a
timer that wakes the reader, not a cancel scope: a cheap wait, as every watch waits between bursts.)

Selector semantics follow the watch cache: an object that starts matching arrives as ``ADDED``,
one that stops matching as ``DELETED`` (its previous state, at the change's resourceVersion).
Bookmarks: when bookmarks are asked for and a watch has been idle for ``bookmark_interval`` seconds
of event-loop time, it yields a ``BOOKMARK`` at the server's current resourceVersion (everything up
to it has been delivered).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Self, TypeVar

from dgd.cluster.errors import Gone, Invalid, Timeout
from dgd.cluster.memory.selectors import Selector, parse
from dgd.cluster.memory.store import Change, ChangeType, Store, Stored
from dgd.cluster.protocol import Watch, WatchEvent
from dgd.cluster.resources import Rejected, Resource

if TYPE_CHECKING:
    from dgd.cluster.memory.faults import Decision

T = TypeVar("T")

#: One delivery: what happened and the object state to show, at a resourceVersion.
Delivery = tuple[ChangeType, Stored, int]


def translate(change: Change, namespace: str | None, selector: Selector) -> Delivery | None:
    """What a watch on ``namespace``/``selector`` sees of ``change`` (``None``: nothing)."""
    if namespace is not None and change.key[1] != namespace:
        return None
    if selector.empty:
        return (change.type, change.obj, change.rv)
    now = change.type != "DELETED" and selector.matches(change.obj.labels)
    before = change.prev is not None and selector.matches(change.prev.labels)
    if now:
        return ("MODIFIED" if before else "ADDED", change.obj, change.rv)
    if before:
        shown = change.obj if change.type == "DELETED" else change.prev_at_rv()
        return ("DELETED", shown, change.rv)
    return None


class Subscription:
    """The server side of one watch: its filter and its bounded buffer."""

    __slots__ = ("buffer", "capacity", "dropped", "namespace", "selector", "wake")

    def __init__(self, namespace: str | None, selector: Selector, capacity: int) -> None:
        self.namespace = namespace
        self.selector = selector
        self.capacity = capacity
        self.buffer: deque[Delivery] = deque()
        self.dropped = False
        self.wake: asyncio.Future[None] | None = None

    def offer(self, change: Change) -> bool:
        """Buffer the change if it concerns this watch; ``False`` once the buffer overflowed."""
        delivery = translate(change, self.namespace, self.selector)
        if delivery is None:
            return True
        if len(self.buffer) >= self.capacity:
            self.dropped = True
        else:
            self.buffer.append(delivery)
        if self.wake is not None:
            _wake(self.wake)
            self.wake = None
        return not self.dropped


class WatchHub:
    """Every open watch, by resource; the store's listener that fans each change out."""

    def __init__(self, store: Store) -> None:
        self._subscriptions: dict[str, dict[Subscription, None]] = {}
        store.listeners.append(self.publish)

    def publish(self, change: Change) -> None:
        subscriptions = self._subscriptions.get(change.key[0])
        if not subscriptions:
            return
        dropped = [subscription for subscription in subscriptions if not subscription.offer(change)]
        for subscription in dropped:
            del subscriptions[subscription]

    def subscribe(self, rid: str, subscription: Subscription) -> None:
        self._subscriptions.setdefault(rid, {})[subscription] = None

    def unsubscribe(self, rid: str, subscription: Subscription) -> None:
        self._subscriptions.get(rid, {}).pop(subscription, None)

    def count(self) -> int:
        return sum(len(subscriptions) for subscriptions in self._subscriptions.values())


class MemoryWatch(Watch[T]):
    """The client side of one watch (the port's ``Watch``). Use once: enter, iterate, leave."""

    def __init__(
        self,
        *,
        store: Store,
        hub: WatchHub,
        rid: str,
        resource: Resource[T],
        namespace: str | None,
        label_selector: str | None,
        resource_version: str | None,
        bookmarks: bool,
        bookmark_interval: float,
        capacity: int,
        request: Callable[[], Awaitable[Decision]],
    ) -> None:
        self._store, self._hub, self._rid, self._resource = store, hub, rid, resource
        self._namespace, self._label_selector = namespace, label_selector
        self._resource_version, self._bookmarks = resource_version, bookmarks
        self._interval, self._capacity, self._request = bookmark_interval, capacity, request
        self._replay: deque[Delivery] = deque()
        self._subscription: Subscription | None = None
        self._error: Exception | None = None
        self._delivered = 0
        self._drop_after: int | None = None
        self._expire_after: int | None = None
        self._closed = False
        self._ending: Exception | None = None

    @property
    def rid(self) -> str:
        """The resource watched (``plural.group``)."""
        return self._rid

    @property
    def closed(self) -> bool:
        """Whether the watch has ended (or failed to open)."""
        return self._closed

    def end(self, error: Exception | None = None) -> bool:
        """End the stream from the server's side now (an injected fault): the reader gets what is
        already buffered, then the end of the stream, or ``error``. ``False`` if it was not open."""
        subscription = self._subscription
        if subscription is None or self._closed or subscription.dropped:
            return False
        self._hub.unsubscribe(self._rid, subscription)
        subscription.dropped = True
        self._ending = error
        if subscription.wake is not None:
            _wake(subscription.wake)
            subscription.wake = None
        return True

    async def __aenter__(self) -> Self:
        try:
            await self._open()
        except BaseException:
            self._closed = True
            raise
        return self

    async def _open(self) -> None:
        # The request: faults and latency first, then everything else happens atomically.
        decision = await self._request()
        self._drop_after, self._expire_after = decision.drop_after, decision.expire_after
        selector = parse(self._label_selector)
        start = self._start_version()
        if start is None:
            items = self._store.items(self._rid, self._namespace)
            self._replay.extend(
                ("ADDED", stored, stored.rv) for stored in items if selector.matches(stored.labels)
            )
        else:
            try:
                self._replay.extend(self._since(start, selector))
            except Gone as error:
                self._error = error
        self._subscription = Subscription(self._namespace, selector, self._capacity)
        if self._error is None:
            self._hub.subscribe(self._rid, self._subscription)

    async def __anext__(self) -> WatchEvent[T]:
        if self._subscription is None:
            raise RuntimeError("enter the watch (async with) before iterating it")
        if self._error is not None:
            error, self._error = self._error, None
            await self.aclose()
            raise error
        # Injected faults end the stream after a number of events.
        if self._expire_after is not None and self._delivered >= self._expire_after:
            await self.aclose()
            raise Gone(f"watch of {self._resource} expired (injected fault)")
        if self._drop_after is not None and self._delivered >= self._drop_after:
            await self.aclose()
        if self._closed:
            raise StopAsyncIteration
        delivery = await self._next()
        if delivery is None:
            return WatchEvent("BOOKMARK", None, str(self._store.rv))
        kind, stored, rv = delivery
        self._delivered += 1
        obj = self._resource.decode_or_reject(stored.blob)
        if isinstance(obj, Rejected):
            return WatchEvent(kind, None, str(rv), obj)
        return WatchEvent(kind, obj, str(rv))

    async def aclose(self) -> None:
        """Stop the watch; an iteration waiting in another task ends too."""
        self._closed = True
        subscription = self._subscription
        if subscription is not None:
            self._hub.unsubscribe(self._rid, subscription)
            if subscription.wake is not None:
                _wake(subscription.wake)

    async def _next(self) -> Delivery | None:
        """The next delivery; ``None`` for a bookmark; ends the iteration once the stream ends."""
        subscription = self._subscription
        assert subscription is not None
        if self._replay:
            await asyncio.sleep(0)  # one turn of the loop per event, as a stream from a server takes
            return self._replay.popleft()
        while not subscription.buffer:
            if self._closed:
                raise StopAsyncIteration
            if subscription.dropped:
                await self.aclose()
                if self._ending is not None:
                    raise self._ending
                raise StopAsyncIteration
            loop = asyncio.get_running_loop()
            subscription.wake = wake = loop.create_future()
            if not self._bookmarks:
                await wake
                continue
            # Idle for the bookmark interval: the same future wakes the reader, empty-handed.
            timer = loop.call_later(self._interval, _wake, wake) if self._interval != math.inf else None
            try:
                await wake
            finally:
                if timer is not None:
                    timer.cancel()
            if not subscription.buffer and not subscription.dropped and not self._closed:
                subscription.wake = None
                return None
        await asyncio.sleep(0)
        return subscription.buffer.popleft()

    def _start_version(self) -> int | None:
        """The resourceVersion to replay from; ``None``: start with the current state."""
        if self._resource_version in (None, "", "0"):
            return None
        try:
            start = int(str(self._resource_version))
        except ValueError:
            raise Invalid(f"invalid resource version {self._resource_version!r}", bad_request=True) from None
        if start > self._store.rv:
            raise Timeout(f"Too large resource version: {start}, current: {self._store.rv}")
        return start

    def _since(self, start: int, selector: Selector) -> list[Delivery]:
        history = self._store.histories[self._rid]
        deliveries = (translate(change, self._namespace, selector) for change in history.since(start))
        return [delivery for delivery in deliveries if delivery is not None]


def _wake(future: asyncio.Future[None]) -> None:
    """Wake the reader waiting on ``future`` (if it still waits: it may have been cancelled)."""
    if not future.done():
        future.set_result(None)
