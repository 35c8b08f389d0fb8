"""The last steps of every program run (dgd-domain §8.1 steps 6-8, §9.1 steps 7-9).

A component waiting for its checkpoint makes the graph wait; the scaling adapters are reconciled
unless it waits; then the success projection gives the status the run ends with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dgd.actors.dgd.children.scaling_adapters import ReconcileAdapters
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.domain.checkpoint import WAITING_FOR_CHECKPOINT, CheckpointInfo, waiting_overlay
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure, ReconcileResult, apply_reconcile_result
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.runtime import Ref


class Conclusion:
    """Ends a run: asks ``adapters`` (the DGD actor's scaling-adapters child) and projects the status;
    ``now()`` is the RFC 3339 time the projection stamps."""

    def __init__(self, adapters: Ref[ReconcileAdapters], now: Callable[[], str]) -> None:
        self._adapters = adapters
        self._now = now

    async def conclude(
        self,
        dgd: DynamoGraphDeployment,
        owner: DynamoGraphDeployment,
        status: DGDStatus,
        outcome: ReconcileResult,
        infos: Mapping[str, CheckpointInfo],
        *,
        rollout_failure: str | None = None,
    ) -> DGDStatus:
        """``status`` with the run's ``outcome`` projected (``owner``: the DGD as last written)."""
        outcome = waiting_overlay(outcome, infos)
        if outcome.reason != WAITING_FOR_CHECKPOINT:
            adapters = await self._adapters.ask(ReconcileAdapters(dgd=dgd, owner=owner))
            if isinstance(adapters, StepFailed):
                raise Failure(FAILED_TO_RECONCILE, adapters.message)
        return apply_reconcile_result(
            status, outcome, generation=owner.metadata.generation, now=self._now(),
            rollout_failure=rollout_failure,
        )  # fmt: skip
