"""The writes the operator makes to a DGD itself: controller-owned annotations, its finalizer, status.

Every write carries the resourceVersion the caller holds (optimistic concurrency): a DGD changed
meanwhile is a ``Conflict``, and the reconcile starts again from fresh state rather than overwrite
what it did not see. Each returns the DGD as stored after the write (its new resourceVersion is what
the next write must carry) and records it in the cache.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from dgd.actors.cache import Cache
from dgd.actors.recorder import Recorder
from dgd.cluster import merge_patch
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DGD
from dgd.domain.worker_generation import (
    ROLLING_UPDATE_NOT_SUPPORTED,
    WorkerHashPlan,
    migrated_event,
    migration,
)
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment

FINALIZER = "nvidia.com/finalizer"


class DGDWriter:
    """Writes one DGD's annotations, finalizers and status (only the DGD actor and its program hold one)."""

    def __init__(self, cluster: Cluster, cache: Cache) -> None:
        self._cluster = cluster
        self._cache = cache

    async def annotate(
        self, dgd: DynamoGraphDeployment, changes: Mapping[str, str | None]
    ) -> DynamoGraphDeployment:
        """Set (or, for ``None``, remove) annotations; no write when they already are so."""
        current = dgd.metadata.annotations or {}
        effective = {key: value for key, value in changes.items() if current.get(key) != value}
        if not effective:
            return dgd
        return await self._patch(dgd, {"annotations": effective})

    async def record(
        self,
        dgd: DynamoGraphDeployment,
        annotations: Mapping[str, str | None],
        finalizers: list[str] | None = None,
    ) -> DynamoGraphDeployment:
        """Set (``None``: remove) annotations and, if given, replace the finalizer list, in one merge
        patch; no write when nothing changes."""
        current = dgd.metadata.annotations or {}
        metadata: dict[str, object] = {}
        effective = {key: value for key, value in annotations.items() if current.get(key) != value}
        if effective:
            metadata["annotations"] = effective
        if finalizers is not None and finalizers != (dgd.metadata.finalizers or []):
            metadata["finalizers"] = finalizers or None
        if not metadata:
            return dgd
        return await self._patch(dgd, metadata)

    async def set_finalizers(
        self, dgd: DynamoGraphDeployment, finalizers: list[str]
    ) -> DynamoGraphDeployment:
        """Replace the finalizer list (``[]`` removes every finalizer)."""
        return await self._patch(dgd, {"finalizers": finalizers or None})

    async def write_status(self, dgd: DynamoGraphDeployment, status: DGDStatus) -> DynamoGraphDeployment:
        """Write ``status`` as a merge patch of what changed since ``dgd.status``, at ``dgd``'s
        resourceVersion: status fields this operator does not model (another writer's, a newer
        operator's) are left as they are stored."""
        before = msgspec.to_builtins(dgd.status) if dgd.status is not None else {}
        change = merge_patch.diff(before, msgspec.to_builtins(status))
        key = DGD.key(dgd.metadata.namespace, dgd.metadata.name or "")
        written = await self._cluster.patch_status(
            key, {"status": change}, resource_version=dgd.metadata.resource_version
        )
        self._cache.observe(DGD, written)
        return written

    async def _patch(self, dgd: DynamoGraphDeployment, metadata: dict[str, object]) -> DynamoGraphDeployment:
        key = DGD.key(dgd.metadata.namespace, dgd.metadata.name or "")
        written = await self._cluster.patch(
            key, {"metadata": metadata}, resource_version=dgd.metadata.resource_version
        )
        self._cache.observe(DGD, written)
        return written


async def migrate_worker_hash(
    writer: DGDWriter, recorder: Recorder, dgd: DynamoGraphDeployment, desired: str
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
    writer: DGDWriter, recorder: Recorder, dgd: DynamoGraphDeployment, plan: WorkerHashPlan
) -> DynamoGraphDeployment:
    """§12.7 commit where no managed rollout runs (Grove, multinode): the planned annotations, then a
    ``RollingUpdateNotSupported`` warning when the generation changed. Raises the port's error."""
    if not plan.annotations:
        return dgd
    written = await writer.annotate(dgd, plan.annotations)
    if plan.changed:
        await recorder.emit(written, ROLLING_UPDATE_NOT_SUPPORTED)
    return written
