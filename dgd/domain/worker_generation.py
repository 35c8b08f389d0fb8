"""Worker-hash bookkeeping on pathways without a managed rollout: Grove (dgd-domain §12.1, §12.7).

The DGD records the worker generation it runs in two controller-owned annotations:
``nvidia.com/current-worker-hash-v2`` (the v2 hash) and the legacy ``nvidia.com/current-worker-hash``.
On Grove the plan is computed before rendering (a changed generation turns on the worker-hash
suffix of the PodCliqueSet) and committed only after the PodCliqueSet write succeeded. A DGD that
records nothing yet gets its first v2 hash with its finalizer, in the one metadata write of its
creation (``initial_worker_hash``); until its PodCliqueSet exists, that hash names no running
generation, so a different one replaces it as a new initialization, not as a changed generation.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from dgd.domain.events import EventRecord

CURRENT_WORKER_HASH = "nvidia.com/current-worker-hash"
CURRENT_WORKER_HASH_V2 = "nvidia.com/current-worker-hash-v2"
LEGACY = "legacy"


class WorkerHashPlan(msgspec.Struct, frozen=True):
    """The annotations to write (a merge patch: ``None`` removes; empty: nothing to write), and whether
    the worker generation changed (which Grove rolls natively, with a ``RollingUpdateNotSupported``
    warning)."""

    annotations: dict[str, str | None]
    changed: bool = False


def migration(annotations: Mapping[str, str], desired: str) -> dict[str, str | None]:
    """§12.1 migration: a v1-only DGD (not ``legacy``) records v2 = the desired hash, keeping v1."""
    v1, v2 = annotations.get(CURRENT_WORKER_HASH), annotations.get(CURRENT_WORKER_HASH_V2)
    if v1 and not v2 and v1 != LEGACY:
        return {CURRENT_WORKER_HASH_V2: desired}
    return {}


def _matches(annotations: Mapping[str, str], desired: str) -> bool:
    v1, v2 = annotations.get(CURRENT_WORKER_HASH), annotations.get(CURRENT_WORKER_HASH_V2)
    if v2:
        return v2 == desired
    desired_v1 = desired if v1 == LEGACY else v1
    return v1 == desired_v1


def initial_worker_hash(annotations: Mapping[str, str], desired: str) -> dict[str, str]:
    """The annotations a DGD that records no worker hash yet is created with: v2 = ``desired``."""
    v1, v2 = annotations.get(CURRENT_WORKER_HASH), annotations.get(CURRENT_WORKER_HASH_V2)
    return {} if v1 or v2 else {CURRENT_WORKER_HASH_V2: desired}


def plan_unmanaged(annotations: Mapping[str, str], desired: str, *, running: bool = True) -> WorkerHashPlan:
    """§12.7 plan: initialize when nothing is recorded; a completed generation when it changed.

    ``running``: whether the workload (the PodCliqueSet) exists. A v2-only hash recorded before the
    workload was first written (``initial_worker_hash``) names no generation that ran: it is
    initialized again, never counted as a changed generation."""
    v1, v2 = annotations.get(CURRENT_WORKER_HASH), annotations.get(CURRENT_WORKER_HASH_V2)
    if not v1 and not v2:
        return WorkerHashPlan({CURRENT_WORKER_HASH_V2: desired})
    if not v1 and not running:
        return WorkerHashPlan({} if v2 == desired else {CURRENT_WORKER_HASH_V2: desired})
    if _matches(annotations, desired):
        return WorkerHashPlan({})
    # A completed generation on v2: the legacy v1 name is dropped.
    return WorkerHashPlan({CURRENT_WORKER_HASH_V2: desired, CURRENT_WORKER_HASH: None}, changed=True)


def migrated_event(desired: str) -> EventRecord:
    """The Normal event of a migration: the v2 hash recorded without a rolling update (§14.2)."""
    return EventRecord(
        "Normal", "WorkerHashMigrated", "Update", f"Recorded worker hash {desired} without a rolling update"
    )


#: The Warning of a worker generation that changed where no managed rollout runs (Grove, multinode).
ROLLING_UPDATE_NOT_SUPPORTED = EventRecord(
    "Warning",
    "RollingUpdateNotSupported",
    "Update",
    "Worker spec changed but custom rolling updates are not supported for Grove/multinode deployments",
)
