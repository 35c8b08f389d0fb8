"""Shared resources and checkpoints, the first workload step of both programs (dgd-domain §7).

``Provisioning`` asks the DGD actor's shared-resources and checkpoint-storage children, in the order
the contract gives: RBAC, claims and discovery; then the checkpoints (whose statuses the program
publishes even if a later step fails); then, in ``finish``, the endpoint picker's objects, the
wait-for-leader script and the MPI keys. A child's refusal is raised as the run's ``Failure``.
"""

from __future__ import annotations

from collections.abc import Mapping

from dgd.actors.dgd.children.checkpoint_storage import FinalizeCheckpoints, ResolveCheckpoints
from dgd.actors.dgd.children.shared_resources import EnsureShared, EnsureSharedAfterCheckpoints
from dgd.actors.dgd.children.step_failed import StepFailed
from dgd.domain.checkpoint import CheckpointInfo
from dgd.domain.projection import FAILED_TO_RECONCILE, Failure
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import Ref


class Provisioning:
    """Asks ``shared_resources`` and ``checkpoints`` (the DGD actor's children) for §7's objects."""

    def __init__(
        self,
        shared_resources: Ref[EnsureShared | EnsureSharedAfterCheckpoints],
        checkpoints: Ref[ResolveCheckpoints | FinalizeCheckpoints],
    ) -> None:
        self._shared_resources = shared_resources
        self._checkpoints = checkpoints

    async def ensure(
        self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment, worker_hash: str
    ) -> Mapping[str, CheckpointInfo]:
        """RBAC, claims and discovery before any pod exists that needs them, then each checkpointed
        component's checkpoint, resolved for ``worker_hash``."""
        shared = await self._shared_resources.ask(EnsureShared(dgd, owner))
        if isinstance(shared, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, shared.message)
        resolved = await self._checkpoints.ask(
            ResolveCheckpoints(dgd=dgd, owner=owner, worker_hash=worker_hash)
        )
        if isinstance(resolved, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, resolved.message)
        return resolved.infos

    async def finish(self, dgd: DynamoGraphDeployment, owner: DynamoGraphDeployment) -> None:
        """What comes after the checkpoints: the endpoint picker's objects, the wait-for-leader script,
        the MPI keys."""
        after = await self._shared_resources.ask(EnsureSharedAfterCheckpoints(dgd, owner))
        if isinstance(after, StepFailed):
            raise Failure(FAILED_TO_RECONCILE, after.message)
