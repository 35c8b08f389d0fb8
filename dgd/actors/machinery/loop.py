"""The controller loop every reconciling actor runs, and what it reports about each reconcile (for
metrics, in controller-runtime's names).

``Reconciler`` is the base of every per-object actor (the DGD actor, the DGDSA controller's adapter
actors, and the controllers to come): a level-triggered actor (it reconciles at every start) with a
coalescing mailbox of ``Nudge`` s. Its ``receive`` is the one loop they share, written once:

1. an internal error of the same intent holds nudges until its retry (``Retries``);
2. a worker of the controller's ``Workers`` pool is taken, when one is given (follow-ups first);
3. the subclass's ``reconcile`` runs inside a ``reporting`` block, and its ``Outcome`` decides what comes
   next: ``DONE`` waits for the next nudge (or the wake-up the reconcile planned), ``RETRY`` comes back
   after the object's backoff, ``TERMINAL`` waits for the object to change; an exception (a bug, or a
   shape of object nobody foresaw) is said to the user by the subclass (``report_internal_error``)
   and retried after the backoff, which then holds nudges back (a bug does not heal on an event);
4. ``after_reconcile`` lets the subclass tidy up (the DGD actor rests its children).

The backoff of failed reconciles is the object's entry in a ``Retries`` ledger kept outside the actor
(``dgd.actors.machinery.retries``): a restarted actor waits out the backoff its last incarnation started.

The DGD actor and the DGDSA controller's adapter actors call ``reconcile_started`` when a reconcile
begins and ``reconcile_finished`` when it ends, with its result: ``success`` (converged, waiting for the
next event), ``requeue_after`` (converged, woken at a set time), ``requeue`` (failed in a way a retry may
heal: retried after a backoff) or ``error`` (failed terminally, or crashed). The daemon's metrics
implement the protocol; the simulation passes nothing.

"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Protocol

import msgspec

from dgd.actors.machinery.retries import Intent, Retries
from dgd.actors.machinery.workers import Workers
from dgd.cluster.errors import Conflict
from dgd.runtime import Actor, MailboxConfig, Timer

Result = Literal["success", "requeue_after", "requeue", "error"]

DGD_CONTROLLER = "dynamographdeployment"
ADAPTER_CONTROLLER = "dynamographdeploymentscalingadapter"
DCD_CONTROLLER = "dynamocomponentdeployment"


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


class Outcome(enum.Enum):
    """How a reconcile ended, which decides when the next one happens without a nudge."""

    DONE = "done"  #: converged as far as it can now: wait for the next watch event (or the planned wake-up)
    RETRY = "retry"  #: failed in a way that may heal: again after a backoff
    TERMINAL = "terminal"  #: failed for good (the spec cannot be reconciled as it is): wait for it to change


class Report(msgspec.Struct):
    """The result a reconcile reports when its ``reporting`` block ends (``error`` unless set)."""

    result: Result = "error"


@dataclass(frozen=True)
class LoopParts:
    """What one controller's loop shares across its per-object actors: the ledger of their backoffs
    (which outlives each actor), who hears about every reconcile, and the pool of workers."""

    retries: Retries = field(default_factory=Retries)
    reconciles: ReconcileObserver | None = None
    workers: Workers | None = None


class Reconciler(Actor[Nudge]):
    """The reconciling actor of the object ``namespace/name`` (see the module); subclasses name their
    ``controller`` and ``log``, say what a reconcile is asked to do (``_intent``), and implement
    ``reconcile`` and ``report_internal_error``."""

    mailbox = MailboxConfig(capacity=4, coalesce=lambda message: "reconcile")
    controller: ClassVar[str]
    #: Where the loop says that a reconcile failed (the subclass's own logger).
    log: ClassVar[logging.Logger]
    #: Errors a retry may heal: logged in a line, and retried after the backoff.
    retriable: ClassVar[tuple[type[Exception], ...]] = ()

    def __init__(
        self,
        namespace: str,
        name: str,
        *,
        loop: LoopParts,
        parked_for: float | None = None,
    ) -> None:
        self._namespace = namespace
        self._name = name
        self._key = f"{namespace}/{name}"
        self._retries = loop.retries
        self._reconciles = loop.reconciles
        self._workers = loop.workers
        self._timer: Timer | None = None
        self._reconciled_before = False
        #: Set in the stand-in of a parked actor (see ``on_start``).
        self._parked_for = parked_for

    def _intent(self) -> Intent | None:
        """What a reconcile of the object would be asked to do now; ``None`` when it is gone."""
        raise NotImplementedError

    async def reconcile(self) -> Outcome:
        """One reconcile of the object from the cluster's state; raises only what it cannot handle."""
        raise NotImplementedError

    async def report_internal_error(self) -> None:
        """Say on the object, in words, that its reconcile failed on an internal error (best effort:
        must not raise)."""
        raise NotImplementedError

    async def report_parked(self, retry_in: float) -> None:
        """Say on the object, in words, that its actor is parked for ``retry_in`` seconds (best effort:
        must not raise)."""
        raise NotImplementedError

    async def after_reconcile(self) -> None:
        """Runs after every reconcile (or nudge held back): nothing unless the subclass says."""

    async def receive(self, message: Nudge) -> None:
        self._cancel_timer()
        intent = self._intent()
        if self._deferred(intent):
            return
        if self._workers is None:
            await self._reconcile_and_report(intent)
        else:
            # Nudges that arrive while this waits for a worker coalesce into one more reconcile; none
            # is granted once the operator drains. An object reconciled before goes ahead of first
            # reconciles (``Workers``: follow-ups first).
            async with self._workers.slot(self._key, first=not self._reconciled_before) as granted:
                if granted:
                    self._reconciled_before = True
                    await self._reconcile_and_report(intent)
        await self.after_reconcile()

    async def _reconcile_and_report(self, intent: Intent | None) -> None:
        with self._reporting() as report:
            crashed = False
            try:
                outcome = await self.reconcile()
            except self.retriable as error:
                # A conflict is routine (the retry reads fresh state): loop detail, at debug.
                level = logging.DEBUG if isinstance(error, Conflict) else logging.INFO
                self.log.log(level, "%s: reconcile failed, will retry: %s", self._key, error)
                outcome = Outcome.RETRY
            except Exception:
                # A bug (ours, or a shape of object we did not foresee) fails this object only, as
                # controller-runtime recovers a reconciler's panic: said to the user in words, retried.
                self.log.exception("%s: reconcile failed unexpectedly, will retry", self._key)
                await self.report_internal_error()
                outcome, crashed = Outcome.RETRY, True
            if outcome is Outcome.RETRY:
                self._schedule_retry(intent, hold=crashed)
                report.result = "requeue"
                return
            self._succeeded()
            woken = outcome is Outcome.DONE and self._timer is not None
            terminal = outcome is Outcome.TERMINAL
            report.result = "error" if terminal else ("requeue_after" if woken else "success")

    async def on_start(self) -> None:
        if self._parked_for is not None:
            # The stand-in of the object's parked actor (nothing of that one runs while it waits for
            # its restart): it says so through the controller's own status path, then ends.
            await self.report_parked(self._parked_for)
            self.context.stop()
            return
        # Level-triggered: every incarnation starts with a reconcile from the cluster's state.
        self.context.ref.tell_nowait(Nudge())

    async def on_stop(self) -> None:
        self._cancel_timer()
        # Stopped because its object is gone (the router stops it then): its backoff goes too, so the
        # ledger does not keep an entry for every object that was deleted while failing.
        if self._parked_for is None and self._intent() is None:
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
