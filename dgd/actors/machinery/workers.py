"""``Workers``: how many DGD reconciles run at once (controller-runtime's ``MaxConcurrentReconciles``).

Every DGD has its own actor, so without a bound a cold start with many DGDs begins all their
reconciles together and, sharing the client's rate limit, finishes them all together at the very end.
With a bound they finish in turn.

**Follow-ups first.** A DGD's first reconcile creates its children; the one after it usually sees
them ready and says `successful`. Served in arrival order, that second reconcile would queue behind
the first reconciles of every DGD created meanwhile (a thousand created at once: each waits for the
thousand), so nearly every DGD would turn `successful` at the very end. A reconcile of a DGD this
operator has reconciled before is served ahead of first reconciles — but never more than
``FOLLOW_UPS_PER_FIRST`` of them in a row while a first one waits, so a stream of follow-ups (a
large fleet's status churn) cannot starve a new DGD.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

#: How many DGD reconciles run at once unless configured (``dgd-operator run --max-concurrent-reconciles``).
DEFAULT_WORKERS = 32
#: Follow-up reconciles served in a row, at most, while a first reconcile waits.
FOLLOW_UPS_PER_FIRST = 3


class _Waiter:
    """One reconcile waiting for a worker; ``granted`` once a freed worker is handed to it."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.ready = anyio.Event()
        self.granted = False


class Workers:
    """At most ``limit`` reconciles at once; the others wait their turn (follow-ups first, see the
    module; in arrival order otherwise). ``close`` (a drain) sends every waiting reconcile away, and
    any later one, while those already running finish."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the number of reconcile workers must be at least 1, not {limit}")
        self.limit = limit
        self._busy = 0
        self._firsts: deque[_Waiter] = deque()
        self._follow_ups: deque[_Waiter] = deque()
        self._in_a_row = 0
        self._queues: set[anyio.CancelScope] = set()
        self._closed = False

    @asynccontextmanager
    async def slot(self, key: str, *, first: bool = False) -> AsyncIterator[bool]:
        """Hold one worker for the block, waiting for one to be free first (meanwhile ``key``, the
        ``namespace/name`` reconciled, is among ``queued``); ``first``: the DGD's first reconcile in
        this operator. Yields ``False``, holding nothing, when the workers are closed before one is
        free: the block must then not reconcile."""
        if self._closed:
            yield False
            return
        if self._busy < self.limit and not self._firsts and not self._follow_ups:
            self._busy += 1
        elif not await self._wait(_Waiter(key), self._firsts if first else self._follow_ups):
            yield False
            return
        try:
            yield True
        finally:
            self._release()

    async def _wait(self, waiter: _Waiter, line: deque[_Waiter]) -> bool:
        """Wait in ``line`` until a worker is handed over (``True``) or the workers close (``False``)."""
        line.append(waiter)
        with anyio.CancelScope() as queue:
            self._queues.add(queue)
            try:
                await waiter.ready.wait()
            except BaseException:
                if waiter.granted:  # handed a worker just as it was sent away or cancelled: pass it on
                    self._release()
                raise
            finally:
                self._queues.discard(queue)
                if not waiter.granted:
                    line.remove(waiter)
        return not queue.cancelled_caught

    def _release(self) -> None:
        """A worker is free: hand it to the next waiting reconcile, or let it go."""
        waiter = self._next()
        if waiter is None:
            self._busy -= 1
            return
        waiter.granted = True
        waiter.ready.set()

    def _next(self) -> _Waiter | None:
        follow_up_turn = self._follow_ups and (not self._firsts or self._in_a_row < FOLLOW_UPS_PER_FIRST)
        if follow_up_turn:
            self._in_a_row += 1
            return self._follow_ups.popleft()
        self._in_a_row = 0
        return self._firsts.popleft() if self._firsts else None

    def close(self) -> None:
        """Take no more work: the reconciles waiting for a worker, and any asking later, get none."""
        self._closed = True
        for queue in list(self._queues):
            queue.cancel()

    @property
    def queued(self) -> frozenset[str]:
        """The keys waiting for a worker now."""
        return frozenset(w.key for w in (*self._follow_ups, *self._firsts))

    @property
    def busy(self) -> int:
        """Workers held now."""
        return self._busy

    @property
    def waiting(self) -> int:
        """Reconciles waiting for a worker."""
        return len(self._follow_ups) + len(self._firsts)
