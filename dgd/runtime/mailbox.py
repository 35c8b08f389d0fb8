"""A bounded mailbox with one reader (its actor), an overflow policy and optional coalescing.

Guarantees:

* FIFO: envelopes leave in the order they were accepted, so two messages from one sender arrive
  in the order they were sent. Senders blocked on a full mailbox are admitted in the order they
  blocked, and a newcomer never overtakes them.
* Bounded: never more than ``capacity`` envelopes are queued. When full, ``BLOCK`` makes the sender
  wait (up to ``block_timeout``) and ``FAIL`` refuses at once; either way the sender gets
  :class:`MailboxFull` and the message is not enqueued.
* Coalescing (when ``coalesce`` is set): a told message whose key equals the key of a message still
  queued replaces that message's content in place, keeping its position, and takes no room (a
  deduplicating work queue). Asks are never coalesced, and ``None`` as a key means "do not coalesce".
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

import msgspec

from dgd.runtime.clock import Clock
from dgd.runtime.errors import MailboxFull
from dgd.runtime.message import Envelope


class Overflow(enum.Enum):
    """What a full mailbox does to a sender."""

    BLOCK = "block"  #: wait for room up to ``block_timeout``, then raise MailboxFull
    FAIL = "fail"  #: raise MailboxFull at once


class MailboxConfig(msgspec.Struct, frozen=True):
    """The mailbox an actor asks for (class attribute ``Actor.mailbox``)."""

    capacity: int = 1000
    overflow: Overflow = Overflow.BLOCK
    block_timeout: float = 5.0
    #: the coalescing key of a told message, or ``None`` when it must not be coalesced
    coalesce: Callable[[Any], Hashable | None] | None = None

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"mailbox capacity must be at least 1, got {self.capacity}")
        if self.block_timeout < 0:
            raise ValueError(f"block_timeout must not be negative, got {self.block_timeout}")


class Offer(enum.IntEnum):
    """The outcome of offering an envelope without waiting."""

    QUEUED = 0
    COALESCED = 1
    FULL = 2
    CLOSED = 3


class Mailbox:
    """The queue of one actor incarnation; closed once the incarnation ends.

    An empty mailbox holds no buffer (idle actors are many: one per DGD and per child).
    """

    __slots__ = ("_blocked", "_capacity", "_coalesce", "_keys", "_open", "_queue", "_waiter", "config")

    def __init__(self, config: MailboxConfig) -> None:
        self.config = config
        self._capacity = config.capacity
        self._coalesce = config.coalesce
        self._queue: deque[Envelope] | None = None
        self._keys: dict[Hashable, Envelope] | None = None
        self._blocked: deque[tuple[Envelope, asyncio.Future[None]]] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._open = False

    def __len__(self) -> int:
        return (len(self._queue) if self._queue else 0) + (len(self._blocked) if self._blocked else 0)

    def open(self) -> None:
        self._open = True

    def offer(self, envelope: Envelope) -> Offer:
        """Enqueue without waiting: queued, coalesced into a pending message, full, or closed."""
        if not self._open:
            return Offer.CLOSED
        if self._coalesce is not None and envelope.reply is None and self._coalesced(envelope):
            return Offer.COALESCED
        queue = self._queue
        if queue is None:
            queue = self._queue = deque()
        elif len(queue) >= self._capacity or self._blocked:
            return Offer.FULL
        queue.append(envelope)
        if envelope.key is not None:
            self._remember(envelope)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return Offer.QUEUED

    async def enter(self, envelope: Envelope, clock: Clock, path: str) -> None:
        """After :meth:`offer` said FULL: wait in line for room (``BLOCK``) or raise (``FAIL``).

        Raises :class:`MailboxFull` when the policy is ``FAIL`` or no room came within
        ``block_timeout``. Once it returns, the envelope belongs to the mailbox: it is delivered, or
        handed back by :meth:`close` (also when the mailbox closed while the sender waited).
        """
        if self.config.overflow is Overflow.FAIL or self.config.block_timeout == 0:
            raise MailboxFull(path, self._capacity)
        room: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (envelope, room)
        if self._blocked is None:
            self._blocked = deque()
        self._blocked.append(entry)
        timer = clock.call_later(self.config.block_timeout, lambda: _refuse(room, path, self._capacity))
        try:
            await room
        except BaseException:
            if entry in self._blocked:
                self._blocked.remove(entry)
            raise
        finally:
            timer.cancel()

    def pop(self) -> Envelope | None:
        """The next envelope, or ``None`` when the mailbox is empty."""
        queue = self._queue
        if not queue:
            return None
        envelope = queue.popleft()
        if envelope.key is not None:
            self._forget(envelope)
        if self._blocked:
            self._admit_blocked()
        elif not queue:
            self._queue = None
        return envelope

    def waiter(self) -> asyncio.Future[None]:
        """A future done when an envelope arrives or :meth:`wake` is called; await it after an
        empty :meth:`pop`."""
        waiter = self._waiter
        if waiter is None or waiter.done():
            waiter = self._waiter = asyncio.get_running_loop().create_future()
        return waiter

    def wake(self) -> None:
        """Wake the reader if it waits (for a stop request or a supervisor signal)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> list[Envelope]:
        """Refuse new envelopes and hand back every one still queued or waiting to enter."""
        self._open = False
        left = list(self._queue) if self._queue else []
        self._queue = None
        self._keys = None
        if self._blocked:
            for envelope, room in self._blocked:
                if not room.done():
                    left.append(envelope)
                    room.set_result(None)
            self._blocked = None
        return left

    def _coalesced(self, envelope: Envelope) -> bool:
        # Replace a pending message with the same key, or mark this one as the pending one.
        assert self._coalesce is not None
        key = self._coalesce(envelope.message)
        if key is None:
            return False
        pending = self._keys.get(key) if self._keys else None
        if pending is None:
            envelope.key = key
            return False
        pending.message = envelope.message
        pending.sender = envelope.sender
        return True

    def _remember(self, envelope: Envelope) -> None:
        if self._keys is None:
            self._keys = {}
        self._keys[envelope.key] = envelope

    def _forget(self, envelope: Envelope) -> None:
        if self._keys is not None and self._keys.get(envelope.key) is envelope:
            del self._keys[envelope.key]

    def _admit_blocked(self) -> None:
        # Move the longest-waiting senders whose waits are still live into the room just freed.
        assert self._blocked is not None and self._queue is not None
        while self._blocked and len(self._queue) < self._capacity:
            envelope, room = self._blocked.popleft()
            if room.done():
                continue
            pending = self._keys.get(envelope.key) if self._keys and envelope.key is not None else None
            if pending is not None:
                pending.message = envelope.message
                pending.sender = envelope.sender
            else:
                self._queue.append(envelope)
                if envelope.key is not None:
                    self._remember(envelope)
            room.set_result(None)
        if not self._blocked:
            self._blocked = None


def _refuse(room: asyncio.Future[None], path: str, capacity: int) -> None:
    if not room.done():
        room.set_exception(MailboxFull(path, capacity))
