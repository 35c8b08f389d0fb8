"""What a workload program may write to its DGD: controller-owned annotations, and nothing else.

The worker hash is recorded by the programs themselves at the points the contract orders (dgd-domain
§12.1 first, §12.3 once a rollout completes, §12.7 after the PodCliqueSet sync: a write barrier), so
they are handed this narrow capability of the DGD actor's writer: annotations, never the finalizer and
never the status (the DGD actor writes those, once per reconcile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from dgd.actors.machinery.events import Recorder
from dgd.domain.worker_generation import (
    ROLLING_UPDATE_NOT_SUPPORTED,
    WorkerHashPlan,
    migrated_event,
    migration,
)
from dgd.messages.dgd import DynamoGraphDeployment


class DGDAnnotator(Protocol):
    """Writes controller-owned annotations of a DGD, at the resourceVersion the caller holds."""

    async def annotate(
        self, dgd: DynamoGraphDeployment, changes: Mapping[str, str | None]
    ) -> DynamoGraphDeployment:
        """Set (``None``: remove) annotations; no write when they already are so. Returns the DGD as
        stored after the write; a DGD changed meanwhile is a ``Conflict``."""
        ...


async def migrate_worker_hash(
    writer: DGDAnnotator, recorder: Recorder, dgd: DynamoGraphDeployment, desired: str
) -> DynamoGraphDeployment:
    """§12.1 migration, as both programs run it first: a v1-only DGD records its v2 hash, then the
    ``WorkerHashMigrated`` event is emitted. Raises the port's error when the write fails."""
    changes = migration(dgd.metadata.annotations or {}, desired)
    if not changes:
        return dgd
    written = await writer.annotate(dgd, changes)
    await recorder.emit(written, migrated_event(desired))
    return written


async def commit_unmanaged(
    writer: DGDAnnotator, recorder: Recorder, dgd: DynamoGraphDeployment, plan: WorkerHashPlan
) -> DynamoGraphDeployment:
    """§12.7 commit where no managed rollout runs (Grove, multinode): the planned annotations, then a
    ``RollingUpdateNotSupported`` warning when the generation changed. Raises the port's error."""
    if not plan.annotations:
        return dgd
    written = await writer.annotate(dgd, plan.annotations)
    if plan.changed:
        await recorder.emit(written, ROLLING_UPDATE_NOT_SUPPORTED)
    return written
