"""Hooks through which the runtime reports what it does, for metrics exporters and tests.

The runtime calls these synchronously on the event loop, on its hot paths (one call per message
processed), so an implementation must be cheap and must not raise: an exception in a hook is a bug
in the hook and crashes the actor that called it.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from dgd.runtime.message import DeadLetter


class Metrics(Protocol):
    """What a metrics exporter is told. Paths are actor paths such as ``/dgds/ns/name``."""

    def message_processed(self, path: str, message_type: type) -> None:
        """An actor finished handling one message (told or asked)."""

    def message_coalesced(self, path: str, message_type: type) -> None:
        """A told message replaced a pending one with the same coalescing key."""

    def ask_completed(self, path: str, message_type: type, seconds: float, ok: bool) -> None:
        """An ask returned (``ok``) or failed, ``seconds`` after it was sent (ask latency)."""

    def mailbox_depth(self, path: str, depth: int) -> None:
        """A sample of an actor's mailbox depth, taken when it starts a batch of messages."""

    def crashed(self, path: str, reason: BaseException) -> None:
        """An actor ended abnormally (its exception, ``Killed``, or an escalation)."""

    def restarted(self, path: str, restarts: int) -> None:
        """A supervisor restarted the actor at ``path``; ``restarts`` counts its restarts so far."""

    def escalated(self, path: str) -> None:
        """The supervisor at ``path`` exceeded its restart intensity and failed to its parent."""

    def parked(self, path: str) -> None:
        """The actor at ``path`` exceeded its own restart intensity and was parked (see
        ``Supervision.park``)."""

    def dead_lettered(self, letter: DeadLetter) -> None:
        """A told message could not be delivered."""


class NullMetrics:
    """Reports nothing (the default)."""

    def message_processed(self, path: str, message_type: type) -> None:
        pass

    def message_coalesced(self, path: str, message_type: type) -> None:
        pass

    def ask_completed(self, path: str, message_type: type, seconds: float, ok: bool) -> None:
        pass

    def mailbox_depth(self, path: str, depth: int) -> None:
        pass

    def crashed(self, path: str, reason: BaseException) -> None:
        pass

    def restarted(self, path: str, restarts: int) -> None:
        pass

    def escalated(self, path: str) -> None:
        pass

    def parked(self, path: str) -> None:
        pass

    def dead_lettered(self, letter: DeadLetter) -> None:
        pass


class CountingMetrics:
    """Counts every report in memory: per path for messages, crashes, restarts, escalations and parkings.

    Useful in tests and in the simulation's reports; ``ask_seconds`` keeps every ask latency.
    """

    def __init__(self) -> None:
        self.processed: Counter[str] = Counter()
        self.coalesced: Counter[str] = Counter()
        self.crashes: Counter[str] = Counter()
        self.restarts: Counter[str] = Counter()
        self.escalations: Counter[str] = Counter()
        self.parkings: Counter[str] = Counter()
        self.dead_letters = 0
        self.asks_ok = 0
        self.asks_failed = 0
        self.ask_seconds: list[float] = []
        self.max_depth: Counter[str] = Counter()

    def message_processed(self, path: str, message_type: type) -> None:
        self.processed[path] += 1

    def message_coalesced(self, path: str, message_type: type) -> None:
        self.coalesced[path] += 1

    def ask_completed(self, path: str, message_type: type, seconds: float, ok: bool) -> None:
        if ok:
            self.asks_ok += 1
        else:
            self.asks_failed += 1
        self.ask_seconds.append(seconds)

    def mailbox_depth(self, path: str, depth: int) -> None:
        if depth > self.max_depth[path]:
            self.max_depth[path] = depth

    def crashed(self, path: str, reason: BaseException) -> None:
        self.crashes[path] += 1

    def restarted(self, path: str, restarts: int) -> None:
        self.restarts[path] += 1

    def escalated(self, path: str) -> None:
        self.escalations[path] += 1

    def parked(self, path: str) -> None:
        self.parkings[path] += 1

    def dead_lettered(self, letter: DeadLetter) -> None:
        self.dead_letters += 1
