"""The DynamoCheckpoint controller, simulated: phases ``Pending -> Creating -> Ready`` (or ``Failed``).

For each DynamoCheckpoint (one root): a new one gets its checkpoint ID (``status.checkpointID`` and
the deprecated ``identityHash``) and phase ``Pending``; then its job "starts" (phase ``Creating``,
``jobName`` ``checkpoint-job-<id>-<artifactVersion>``, condition ``JobCreated``), and
``checkpoint_delay`` later it ends ``Ready`` (``createdAt``, condition ``JobCompleted``) or, with
``checkpoint_outcome: Failed``, ``Failed`` (supplement §5.3). Checkpoints the DGD created
(``nvidia.com/dynamo-auto-checkpoint: "true"``) carry the finalizer ``nvidia.com/finalizer``, which is
released at once on deletion (the artifact-cleanup job is not modelled, nor are the Job and
PodSnapshot objects, nor the checkpoint gate: the world runs checkpoints whatever the operator's
configuration says).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import msgspec

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import CHECKPOINT
from dgd.domain.checkpoint import ARTIFACT_VERSION, AUTO, CHECKPOINT_ID, FINALIZER
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import rfc3339
from dgd.sim.world.controller import EPSILON, Nudge, Watch, WorldController, parse_time


class CheckpointController(WorldController):
    """The DynamoCheckpoint controller for every checkpoint of the cluster (see the module)."""

    def watches(self) -> Sequence[Watch]:
        return [Watch(CHECKPOINT, route=_own)]

    async def reconcile(self, namespace: str | None, name: str) -> float | None:
        key = CHECKPOINT.key(namespace, name)
        try:
            checkpoint = await self.cluster.get(key)
        except NotFound:
            return None
        meta = checkpoint.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        # Deleting: the cleanup is instant here, so the finalizer goes at once.
        if meta.get("deletionTimestamp"):
            if FINALIZER in finalizers:
                rest = [f for f in finalizers if f != FINALIZER]
                await self.cluster.patch(key, {"metadata": {"finalizers": rest or None}})
            return None
        if (meta.get("annotations") or {}).get(AUTO) == "true" and FINALIZER not in finalizers:
            await self.cluster.patch(key, {"metadata": {"finalizers": [*finalizers, FINALIZER]}})

        status = checkpoint.get("status") or {}
        phase, now = status.get("phase"), self.clock()
        stamp = rfc3339(now)
        identity = checkpoint_id(checkpoint)
        if phase not in ("Pending", "Creating", "Ready", "Failed"):
            status = {"phase": "Pending", "checkpointID": identity, "identityHash": identity}
            await self.cluster.patch_status(key, {"status": status})
            phase = "Pending"
        if phase == "Pending":
            version = (meta.get("annotations") or {}).get(ARTIFACT_VERSION, "1")
            created = _condition("JobCreated", "True", "JobCreated", "Checkpoint job created", stamp)
            creating = {"phase": "Creating", "jobName": f"checkpoint-job-{identity}-{version}"}
            await self.cluster.patch_status(key, {"status": creating | {"conditions": [created]}})
            return now + self.settings.checkpoint_delay
        if phase != "Creating":
            return None
        started: JSONObject = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "JobCreated"), {}
        )
        done_at = (parse_time(started.get("lastTransitionTime")) or now) + self.settings.checkpoint_delay
        if now + EPSILON < done_at:
            return done_at
        await self.cluster.patch_status(
            key, {"status": finished(status, self.settings.checkpoint_outcome, stamp)}
        )
        return None


def finished(status: JSONObject, outcome: Literal["Ready", "Failed"], stamp: str) -> JSONObject:
    """The status patch that ends a ``Creating`` checkpoint's job at ``stamp`` with ``outcome`` (the
    controller writes it ``checkpoint_delay`` after the job started; a trace's ``checkpoint_ready``
    world event writes it when the trace says)."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "JobCompleted"]
    ending: JSONObject
    if outcome == "Ready":
        completed = _condition("JobCompleted", "True", "PodSnapshotAndJobReady", "Checkpoint is ready", stamp)
        ending = {"phase": "Ready", "createdAt": stamp, "message": "Checkpoint is ready"}
    else:
        completed = _condition("JobCompleted", "False", "JobFailed", "Checkpoint job failed", stamp)
        ending = {"phase": "Failed", "message": "Checkpoint job failed"}
    return ending | {"conditions": [*conditions, completed]}


def checkpoint_id(checkpoint: JSONObject) -> str:
    """The checkpoint ID, first hit wins: status, the ID label, else a hash of ``spec.identity``."""
    status = checkpoint.get("status") or {}
    found = status.get("checkpointID") or status.get("identityHash")
    found = found or ((checkpoint.get("metadata") or {}).get("labels") or {}).get(CHECKPOINT_ID)
    if found:
        return str(found)
    identity = (checkpoint.get("spec") or {}).get("identity") or {}
    return hashlib.sha256(msgspec.json.encode(identity, order="sorted")).hexdigest()[:32]


def _condition(type: str, status: str, reason: str, message: str, stamp: str) -> JSONObject:
    return {"type": type, "status": status, "reason": reason, "message": message, "lastTransitionTime": stamp}


def _own(checkpoint: JSONObject) -> Nudge:
    meta = checkpoint.get("metadata") or {}
    return Nudge(meta.get("namespace"), str(meta.get("name")))
