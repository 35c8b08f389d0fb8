"""What one run of a workload program produces (dgd-domain §6.1), and the progress a run records.

``ProgramResult`` is a value: the program returns it whole, and the DGD actor persists its status once
and then emits its events. It is meaningful even when the run failed: it carries the partial progress
(checkpoint statuses, component statuses observed before the failure) that the DGD actor persists with
the failed status.

``Progress`` is what a program's own ``reconcile`` writes down as its steps answer, so that a step that
fails later loses nothing that came before it. Only the program's top-level function holds one: the
parts a program is composed of return values and never see it.
"""

from __future__ import annotations

import logging
from typing import Protocol

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure, fail, starting_status
from dgd.domain.render.errors import RenderError
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.runtime import ActorError

logger = logging.getLogger("dgd.reconcile")


#: What the status says when a step's actor could not answer (it crashed, is restarting, timed out):
#: the actor's path and the exception are for the operator's log, not for the user.
INTERNAL_STEP = "an internal step of the operator did not complete; it is retried"


def as_failure(error: Exception, context: str = "") -> Failure:
    """An exception as the Ready failure it projects (a render error cannot heal by retrying)."""
    if isinstance(error, Failure):
        return error
    if isinstance(error, ActorError):
        logger.warning("%s: %s", context or "a program step failed", error)
        return Failure(FAILED_TO_RECONCILE, f"{context}: {INTERNAL_STEP}" if context else INTERNAL_STEP)
    message = f"{context}: {error}" if context else str(error)
    return Failure(FAILED_TO_RECONCILE, message, terminal=isinstance(error, RenderError))


class ProgramResult(msgspec.Struct, frozen=True, kw_only=True):
    """One run's outcome: ``dgd`` as last written (its annotations may have changed), the complete
    desired ``status``, the status-transition ``events`` queued with it (emitted only once that status
    is written), the ``failure`` that ended the run, if any, and ``wake``: seconds after which the DGD
    must be reconciled again even if nothing changes (a deadline)."""

    dgd: DynamoGraphDeployment
    status: DGDStatus
    events: tuple[EventRecord, ...] = ()
    failure: Failure | None = None
    wake: float | None = None


class Progress:
    """What one program run has recorded so far (see the module): the DGD as last written, the status
    built up to now, the events queued with it, the wake-up asked for, and the failure that ended it."""

    def __init__(self, dgd: DynamoGraphDeployment) -> None:
        self.dgd = dgd
        self.status: DGDStatus = starting_status(dgd.status)
        self.events: list[EventRecord] = []
        self.wake: float | None = None
        self.failure: Failure | None = None

    def queue(self, *events: EventRecord) -> None:
        self.events.extend(events)

    def fail(self, failure: Failure, *, now: str) -> None:
        """§6.2: the run ended with ``failure``; the status says so and keeps what was observed."""
        self.failure = failure
        self.status = fail(
            self.status, generation=self.dgd.metadata.generation, reason=failure.reason,
            message=failure.message, now=now,
        )  # fmt: skip

    def result(self) -> ProgramResult:
        """The run's outcome as recorded."""
        return ProgramResult(
            dgd=self.dgd, status=self.status, events=tuple(self.events), failure=self.failure, wake=self.wake
        )


class Program(Protocol):
    """A workload program: one ordered reconcile of one DGD, run once per DGD reconcile."""

    def initial_annotations(self, dgd: DynamoGraphDeployment) -> dict[str, str]:
        """Controller-owned annotations ``dgd``, not yet finalized, is to get in the same write as its
        finalizer (pure: computed from ``dgd`` and the config)."""
        ...

    async def reconcile(self, dgd: DynamoGraphDeployment) -> ProgramResult:
        """Run every step in order; never raises for an API or child failure (see ``failure``)."""
        ...
