"""The writes the DCD controller makes to a DCD itself: its finalizer and its status.

Only the DCD actor holds a ``DCDWriter``. Every write carries the resourceVersion the caller holds:
a DCD changed meanwhile is a ``Conflict``, and the reconcile starts again from fresh state. Each
returns the DCD as stored after the write. A finalizer write is recorded in the cache; a status write
is not: its watch event must reach the router as a change, which is how the DGD that owns the DCD
learns that its component became ready (a reconcile that runs before that event reads the older
status, and its write is a ``Conflict``, retried). A status write logs one line
at info when it moves the ``Available`` condition (``Unknown -> False/DeploymentNotReady``), at
debug otherwise; a finalizer write logs one at info. The lines carry ``dcd``, ``verb``, ``object``
and ``why``.
"""

from __future__ import annotations

import logging
from typing import Protocol

import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.cluster import merge_patch
from dgd.cluster.protocol import ClusterWriter, StatusWriter
from dgd.cluster.resources import DCD
from dgd.domain.dcd_status import AVAILABLE
from dgd.messages.dcd import DCDStatus, DynamoComponentDeployment

logger = logging.getLogger("dgd.reconcile")


def where(dcd: DynamoComponentDeployment) -> str:
    return f"{dcd.metadata.namespace}/{dcd.metadata.name}"


def summary(status: DCDStatus | None) -> str:
    """The ``Available`` condition in a word: ``True/DeploymentReady``, or ``none``."""
    available = next((c for c in (status.conditions if status else None) or () if c.type == AVAILABLE), None)
    return f"{available.status}/{available.reason}" if available is not None else "none"


def _fields(dcd: DynamoComponentDeployment, why: str) -> dict[str, str]:
    return {
        "dcd": where(dcd),
        "verb": "update",
        "object": f"DynamoComponentDeployment {where(dcd)}",
        "why": why,
    }


class _Port(ClusterWriter, StatusWriter, Protocol):
    """The writes a ``DCDWriter`` makes: metadata patches and status patches."""


class DCDWriter:
    """Writes DCDs' finalizers and status (the DCD actor alone holds one; see the module)."""

    def __init__(self, cluster: _Port, cache: Cache) -> None:
        self._cluster = cluster
        self._cache = cache

    async def set_finalizers(
        self, dcd: DynamoComponentDeployment, finalizers: list[str], why: str
    ) -> DynamoComponentDeployment:
        """Replace the finalizer list (``[]`` removes every one) at ``dcd``'s resourceVersion."""
        key = DCD.key(dcd.metadata.namespace, dcd.metadata.name or "")
        written = await self._cluster.patch(
            key,
            {"metadata": {"finalizers": finalizers or None}},
            resource_version=dcd.metadata.resource_version,
        )
        self._cache.observe(DCD, written)
        logger.info("Updated DynamoComponentDeployment %s: %s", where(dcd), why, extra=_fields(dcd, why))
        return written

    async def write_status(
        self, dcd: DynamoComponentDeployment, status: DCDStatus
    ) -> DynamoComponentDeployment:
        """Write ``status`` as a merge patch of what changed since ``dcd.status``, at ``dcd``'s
        resourceVersion; no write when nothing changed."""
        before = msgspec.to_builtins(dcd.status) if dcd.status is not None else {}
        change = merge_patch.diff(before, msgspec.to_builtins(status))
        if not change:
            return dcd
        key = DCD.key(dcd.metadata.namespace, dcd.metadata.name or "")
        written = await self._cluster.patch_status(
            key, {"status": change}, resource_version=dcd.metadata.resource_version
        )
        was, now = summary(dcd.status), summary(status)
        if was != now:
            why = f"Available {was} -> {now}"
            logger.info(
                "status of DynamoComponentDeployment %s: %s", where(dcd), why, extra=_fields(dcd, why)
            )
        else:
            logger.debug("status of DynamoComponentDeployment %s written (%s)", where(dcd), now)
        return written
