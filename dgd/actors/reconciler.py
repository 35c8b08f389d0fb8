"""Reconciling actors: the shape they share, and what they report about each reconcile (for metrics, in
controller-runtime's names).

``Reconciler`` is the base of the DGD actor and the DGDSA controller's adapter actors: a
level-triggered actor (it reconciles at every start) with a coalescing mailbox of ``Nudge`` s, one
timer for a retry with backoff or a planned wake-up, and a ``reporting`` block around each reconcile.

The DGD actor and the DGDSA controller's adapter actors call ``reconcile_started`` when a reconcile
begins and ``reconcile_finished`` when it ends, with its result: ``success`` (converged, waiting for the
next event), ``requeue_after`` (converged, woken at a set time), ``requeue`` (failed in a way a retry may
heal: retried after a backoff) or ``error`` (failed terminally, or crashed). The daemon's metrics
implement the protocol; the simulation passes nothing.

"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Literal, Protocol

import msgspec

from dgd.actors.runtime import Actor, Backoff, MailboxConfig, Timer

Result = Literal["success", "requeue_after", "requeue", "error"]

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
