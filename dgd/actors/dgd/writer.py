"""The writes the operator makes to a DGD itself: controller-owned annotations, its finalizer, status.

Only the DGD actor holds a ``DGDWriter`` (an import-linter contract keeps ``children/`` and
``programs/`` from importing this module): it writes the finalizer and the status, and hands its
programs the annotation writes alone, as a ``dgd.actors.dgd.annotator.DGDAnnotator``.

Every write carries the resourceVersion the caller holds (optimistic concurrency): a DGD changed
meanwhile is a ``Conflict``, and the reconcile starts again from fresh state rather than overwrite
what it did not see. Each returns the DGD as stored after the write (its new resourceVersion is what
the next write must carry) and records it in the cache.

Each metadata write logs one line at info (which annotations were set or removed, which finalizers
added or removed); a status write logs one at info only when it moves the DGD's state, its Ready
reason or its rollout phase (``pending/pods_not_ready -> successful/all_resources_are_ready``), and
at debug otherwise. The lines carry the fields ``dgd``, ``verb``, ``object`` and ``why``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.cluster import merge_patch
from dgd.cluster.protocol import ClusterWriter, StatusWriter
from dgd.cluster.resources import DGD
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment

FINALIZER = "nvidia.com/finalizer"

logger = logging.getLogger("dgd.reconcile")


def where(dgd: DynamoGraphDeployment) -> str:
    """``namespace/name`` of ``dgd``."""
    return f"{dgd.metadata.namespace}/{dgd.metadata.name}"


def summary(status: DGDStatus | None) -> str:
    """A status in one word or three: ``state``, ``/Ready reason`` and ``, rollout <phase>``."""
    if status is None:
        return "none"
    ready = next((c for c in status.conditions or () if c.type == "Ready"), None)
    text = status.state + (f"/{ready.reason}" if ready is not None else "")
    phase = status.rolling_update.phase if status.rolling_update is not None else None
    return text + (f", rollout {phase}" if phase else "")


def metadata_change(dgd: DynamoGraphDeployment, metadata: Mapping[str, Any]) -> str:
    """What a metadata patch of ``dgd`` changes, in words (annotation keys, never their values)."""
    parts: list[str] = []
    annotations: Mapping[str, str | None] = metadata.get("annotations") or {}
    if set_keys := [key for key, value in annotations.items() if value is not None]:
        parts.append(f"set annotations {', '.join(set_keys)}")
    if removed_keys := [key for key, value in annotations.items() if value is None]:
        parts.append(f"removed annotations {', '.join(removed_keys)}")
    if "finalizers" in metadata:
        before, after = dgd.metadata.finalizers or [], metadata["finalizers"] or []
        if added := [f for f in after if f not in before]:
            parts.append(f"added finalizer {', '.join(added)}")
        if dropped := [f for f in before if f not in after]:
            parts.append(f"removed finalizer {', '.join(dropped)}")
    return "; ".join(parts)


def _fields(dgd: DynamoGraphDeployment, why: str) -> dict[str, str]:
    return {"dgd": where(dgd), "verb": "update", "object": f"DynamoGraphDeployment {where(dgd)}", "why": why}


class _Port(ClusterWriter, StatusWriter, Protocol):
    """The writes a ``DGDWriter`` makes: metadata patches and status patches."""


class DGDWriter:
    """Writes DGDs' annotations, finalizers and status (the DGD actor alone holds one; see the module)."""

    def __init__(self, cluster: _Port, cache: Cache) -> None:
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
        before, after = summary(dgd.status), summary(status)
        if before != after:
            why = f"{before} -> {after}"
            logger.info("status of DynamoGraphDeployment %s: %s", where(dgd), why, extra=_fields(dgd, why))
        else:
            logger.debug("status of DynamoGraphDeployment %s written (%s)", where(dgd), after)
        return written

    async def _patch(self, dgd: DynamoGraphDeployment, metadata: dict[str, object]) -> DynamoGraphDeployment:
        key = DGD.key(dgd.metadata.namespace, dgd.metadata.name or "")
        written = await self._cluster.patch(
            key, {"metadata": metadata}, resource_version=dgd.metadata.resource_version
        )
        self._cache.observe(DGD, written)
        why = metadata_change(dgd, metadata)
        logger.info("Updated DynamoGraphDeployment %s: %s", where(dgd), why, extra=_fields(dgd, why))
        return written
