"""Reconciling actors: the shape they share, what they report about each reconcile (for metrics, in
controller-runtime's names), and the workers that bound them.

``Reconciler`` is the base of the DGD actor and the DGDSA controller's adapter actors: a
level-triggered actor (it reconciles at every start) with a coalescing mailbox of ``Nudge`` s, one
timer for a retry with backoff or a planned wake-up, and a ``reporting`` block around each reconcile.

The DGD actor and the DGDSA controller's adapter actors call ``reconcile_started`` when a reconcile
begins and ``reconcile_finished`` when it ends, with its result: ``success`` (converged, waiting for the
next event), ``requeue_after`` (converged, woken at a set time), ``requeue`` (failed in a way a retry may
heal: retried after a backoff) or ``error`` (failed terminally, or crashed). The daemon's metrics
implement the protocol; the simulation passes nothing.

``Workers`` bounds how many DGD reconciles run at once (controller-runtime's
``MaxConcurrentReconciles``): every DGD has its own actor, so without a bound a cold start with
many DGDs begins all their reconciles together and, sharing the client's rate limit, finishes them
all together at the very end. With a bound they finish in turn, first come first served.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import ClassVar, Literal, Protocol

import anyio
import msgspec

from dgd.actors.runtime import Actor, Backoff, MailboxConfig, Timer

Result = Literal["success", "requeue_after", "requeue", "error"]

#: How many DGD reconciles run at once unless configured (``dgd-operator run --max-concurrent-reconciles``).
DEFAULT_WORKERS = 10

DGD_CONTROLLER = "dynamographdeployment"
ADAPTER_CONTROLLER = "dynamographdeploymentscalingadapter"


class ReconcileObserver(Protocol):
    """Receives one ``started`` and one ``finished`` per reconcile."""

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        """A reconcile of ``namespace/name`` began."""

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        """It ended ``seconds`` later with ``result`` (see the module)."""


class Nudge(msgspec.Struct, frozen=True):
    """Reconcile soon. Any number of nudges waiting in the mailbox are one reconcile."""


#: The backoff between reconciles of an object that keep failing.
RETRY_BACKOFF = Backoff(initial=0.5, maximum=300.0, multiplier=2.0, jitter=0.1)


class Report(msgspec.Struct):
    """The result a reconcile reports when its ``reporting`` block ends (``error`` unless set)."""

    result: Result = "error"


class Reconciler(Actor[Nudge]):
    """The reconciling actor of the object ``namespace/name`` (see the module); subclasses name their
    ``controller`` and handle ``Nudge``."""

    mailbox = MailboxConfig(capacity=4, coalesce=lambda message: "reconcile")
    controller: ClassVar[str]

    def __init__(
        self, namespace: str, name: str, *, retry: Backoff, reconciles: ReconcileObserver | None
    ) -> None:
        self._namespace = namespace
        self._name = name
        self._retry = retry
        self._reconciles = reconciles
        self._failures = 0
        self._timer: Timer | None = None

    async def on_start(self) -> None:
        # Level-triggered: every incarnation starts with a reconcile from the cluster's state.
        self.context.ref.tell_nowait(Nudge())

    async def on_stop(self) -> None:
        self._cancel_timer()

    @contextmanager
    def _reporting(self) -> Iterator[Report]:
        """Report the reconcile the block runs: started now, finished with the ``Report`` 's result."""
        report = Report()
        started = self.context.clock.now()
        if self._reconciles is not None:
            self._reconciles.reconcile_started(self.controller, self._namespace, self._name)
        try:
            yield report
        finally:
            if self._reconciles is not None:
                elapsed = self.context.clock.now() - started
                self._reconciles.reconcile_finished(
                    self.controller, self._namespace, self._name, report.result, elapsed
                )

    def _succeeded(self) -> None:
        self._failures = 0

    def _schedule_retry(self) -> None:
        """Reconcile again after the backoff of one more failure in a row."""
        self._schedule_wake(self._retry.delay(self._failures, self.context.random))
        self._failures += 1

    def _schedule_wake(self, delay: float) -> None:
        ref = self.context.ref
        self._timer = self.context.clock.call_later(delay, lambda: ref.tell_nowait(Nudge()))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


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
