"""Reconciling actors: the shape they share, and what they report about each reconcile (for metrics, in
controller-runtime's names).

``Reconciler`` is the base of the DGD actor and the DGDSA controller's adapter actors: a
level-triggered actor (it reconciles at every start) with a coalescing mailbox of ``Nudge`` s, one
timer for a retry with backoff or a planned wake-up, and a ``reporting`` block around each reconcile.
The backoff of failed reconciles is the object's entry in a ``Retries`` ledger kept outside the actor
(``dgd.actors.retries``): a restarted actor waits out the backoff its last incarnation started.

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

from dgd.actors.retries import Intent, Retries
from dgd.actors.runtime import Actor, MailboxConfig, Timer

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


class Report(msgspec.Struct):
    """The result a reconcile reports when its ``reporting`` block ends (``error`` unless set)."""

    result: Result = "error"


class Reconciler(Actor[Nudge]):
    """The reconciling actor of the object ``namespace/name`` (see the module); subclasses name their
    ``controller``, say what a reconcile is asked to do (``_intent``) and handle ``Nudge``."""

    mailbox = MailboxConfig(capacity=4, coalesce=lambda message: "reconcile")
    controller: ClassVar[str]

    def __init__(
        self, namespace: str, name: str, *, retries: Retries | None, reconciles: ReconcileObserver | None
    ) -> None:
        self._namespace = namespace
        self._name = name
        self._key = f"{namespace}/{name}"
        self._retries = retries if retries is not None else Retries()
        self._reconciles = reconciles
        self._timer: Timer | None = None

    def _intent(self) -> Intent | None:
        """What a reconcile of the object would be asked to do now; ``None`` when it is gone."""
        raise NotImplementedError

    async def on_start(self) -> None:
        # Level-triggered: every incarnation starts with a reconcile from the cluster's state.
        self.context.ref.tell_nowait(Nudge())

    async def on_stop(self) -> None:
        self._cancel_timer()
        # Stopped because its object is gone (the router stops it then): its backoff goes too, so the
        # ledger does not keep an entry for every object that was deleted while failing.
        if self._intent() is None:
            self._retries.succeeded(self._key)

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

    def _deferred(self, intent: Intent | None) -> bool:
        """``True`` when an internal error of the same ``intent`` holds nudges until its retry (which is
        then scheduled)."""
        if intent is None:
            self._retries.succeeded(self._key)
            return False
        waiting = self._retries.waiting(self._key, intent, self.context.clock.now())
        if waiting > 0:
            self._schedule_wake(waiting)
        return waiting > 0

    def _succeeded(self) -> None:
        self._retries.succeeded(self._key)

    def _schedule_retry(self, intent: Intent | None, *, hold: bool = False) -> None:
        """Reconcile again after the backoff of one more failure in a row of ``intent``; ``hold``: it
        was an internal error, and nudges wait for the retry."""
        if intent is None:
            self._schedule_wake(0.0)
            return
        context = self.context
        delay = self._retries.failed(self._key, intent, context.clock.now(), context.random, hold=hold)
        self._schedule_wake(delay)

    @property
    def failures(self) -> int:
        """How many reconciles of the object failed in a row (across restarts of this actor)."""
        return self._retries.failures(self._key)

    def _schedule_wake(self, delay: float) -> None:
        ref = self.context.ref
        self._timer = self.context.clock.call_later(delay, lambda: ref.tell_nowait(Nudge()))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
