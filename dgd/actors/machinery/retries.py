"""Each object's reconcile backoff, kept outside its actor so that a restart of the actor does not reset
it (controller-runtime keeps it in its work queue's rate limiter, beside the reconciler, for the same
reason).

One backoff serves every failed reconcile of an object, whatever failed (an API error, a step that
failed, an exception): 0.5 s doubling to 1,000 s. It is reset by a successful reconcile, or by a change
of what the reconcile is asked to do (a new generation, or the deletion beginning).

A nudge (a watch event, a resync) during the backoff reconciles at once, as controller-runtime's work
queue does: the event may be what heals the failure (the DGD an adapter waits for appears, a child
turns ready). After an internal error (an exception) it does not: a bug does not heal because a child
changed, so the retry waits for its time, and an object that always crashes reconciles at most
⌈log2(T / 0.5 s)⌉ + T / 1,000 s + 1 times in T seconds, however busy its children are.

Only the object's own actor reads and writes its entry, so the ledger needs no lock.
"""

from __future__ import annotations

import random

import msgspec

from dgd.runtime import Backoff

#: The backoff between reconciles of an object that keep failing; each delay is shortened by up to a
#: tenth of itself at random, so objects that failed together do not retry together (the bound above
#: still holds: the delays add up to at least 0.45 s · (2ⁿ − 1) after n failures).
RETRY_BACKOFF = Backoff(initial=0.5, maximum=1000.0, multiplier=2.0, jitter=0.1)

#: What a reconcile is asked to do: the object's generation, and whether its deletion has begun.
Intent = tuple[int | None, bool]


class _Entry(msgspec.Struct):
    intent: Intent
    failures: int
    due: float
    #: The last failure was an internal error: nudges wait for the retry.
    hold: bool


class Retries:
    """The failed-reconcile backoff of every object of one kind, by ``namespace/name``."""

    def __init__(self, backoff: Backoff = RETRY_BACKOFF) -> None:
        self._backoff = backoff
        self._entries: dict[str, _Entry] = {}

    def failed(
        self, key: str, intent: Intent, now: float, rng: random.Random, *, hold: bool = False
    ) -> float:
        """Count one more failure of ``key`` reconciling ``intent`` at ``now``; the seconds to wait.
        ``hold``: it was an internal error, and nudges wait for the retry."""
        entry = self._entries.get(key)
        failures = entry.failures if entry is not None and entry.intent == intent else 0
        delay = self._backoff.delay(failures, rng)
        self._entries[key] = _Entry(intent, failures + 1, now + delay, hold)
        return delay

    def waiting(self, key: str, intent: Intent, now: float) -> float:
        """Seconds a nudge of ``key`` for ``intent`` waits before it reconciles: 0 unless an internal
        error holds it (and the intent is the one that failed: a change retries at once)."""
        entry = self._entries.get(key)
        if entry is None or not entry.hold or entry.intent != intent:
            return 0.0
        return max(0.0, entry.due - now)

    def failures(self, key: str) -> int:
        """How many reconciles of ``key`` failed in a row."""
        entry = self._entries.get(key)
        return entry.failures if entry is not None else 0

    def succeeded(self, key: str) -> None:
        """A reconcile of ``key`` succeeded (or ``key`` is gone): its backoff starts again."""
        self._entries.pop(key, None)
