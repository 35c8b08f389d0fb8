"""What one run of a workload program produces (dgd-domain §6.1), shared by both programs.

The result is meaningful even when the run failed: it carries the partial progress (checkpoint
statuses, component statuses observed before the failure) that the DGD actor persists with the
failed status.
"""

from __future__ import annotations

import logging
from typing import Protocol

from dgd.actors.runtime import ActorError
from dgd.domain.events import EventRecord
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure, fail, starting_status
from dgd.domain.render.errors import RenderError
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment

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


class ProgramResult:
    """The DGD as last written, the complete desired status, the status-transition events queued
    with it (emitted only once that status is written), and the failure that ended the run."""

    def __init__(self, dgd: DynamoGraphDeployment) -> None:
        self.dgd = dgd
        self.status: DGDStatus = starting_status(dgd.status)
        self.events: list[EventRecord] = []
        self.failure: Failure | None = None
        #: Seconds after which the DGD must be reconciled again even if nothing changes (a deadline).
        self.wake: float | None = None

    def queue(self, event: EventRecord) -> None:
        self.events.append(event)

    def fail(self, failure: Failure, *, now: str) -> None:
        """§6.2: the run ended with ``failure``; the status says so and keeps what was observed."""
        self.failure = failure
        self.status = fail(
            self.status,
            generation=self.dgd.metadata.generation,
            reason=failure.reason,
            message=failure.message,
            now=now,
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
