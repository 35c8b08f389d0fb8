"""``Workers``: how many DGD reconciles run at once (controller-runtime's ``MaxConcurrentReconciles``).

Every DGD has its own actor, so without a bound a cold start with many DGDs begins all their
reconciles together and, sharing the client's rate limit, finishes them all together at the very end.
With a bound they finish in turn, first come first served.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

#: How many DGD reconciles run at once unless configured (``dgd-operator run --max-concurrent-reconciles``).
DEFAULT_WORKERS = 10


class Workers:
    """At most ``limit`` reconciles at once; the others wait their turn in arrival order. Made outside
    an event loop, it takes its limiter from the loop of the first reconcile. ``close`` (a drain) sends
    every waiting reconcile away, and any later one, while those already running finish."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the number of reconcile workers must be at least 1, not {limit}")
        self.limit = limit
        self._limiter: anyio.CapacityLimiter | None = None
        self._waiting: set[str] = set()
        self._queues: set[anyio.CancelScope] = set()
        self._closed = False

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[bool]:
        """Hold one worker for the block, waiting for one to be free first (meanwhile ``key``, the
        ``namespace/name`` reconciled, is among ``queued``). Yields ``False``, holding nothing, when
        the workers are closed before one is free: the block must then not reconcile."""
        if self._closed:
            yield False
            return
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.limit)
        self._waiting.add(key)
        with anyio.CancelScope() as queue:
            self._queues.add(queue)
            try:
                await self._limiter.acquire()
            finally:
                self._waiting.discard(key)
                self._queues.discard(queue)
        if queue.cancelled_caught:
            yield False
            return
        try:
            yield True
        finally:
            self._limiter.release()

    def close(self) -> None:
        """Take no more work: the reconciles waiting for a worker, and any asking later, get none."""
        self._closed = True
        for queue in list(self._queues):
            queue.cancel()

    @property
    def queued(self) -> frozenset[str]:
        """The keys waiting for a worker now."""
        return frozenset(self._waiting)

    @property
    def busy(self) -> int:
        """Workers held now."""
        return 0 if self._limiter is None else int(self._limiter.borrowed_tokens)

    @property
    def waiting(self) -> int:
        """Reconciles waiting for a worker."""
        return len(self._waiting)
