"""Which watch events nudge which actor: the router's predicates and owner mappings (dgd-domain §16, §13.3).

Each function here is pure over the event's objects (and, for a scaling group, one cache read); the
router (``dgd.actors.machinery.router``) applies them and owns the actors.

Which events nudge a DGD actor (the watch predicates):

* DGD: first sight; a ``generation`` change or a newly set deletionTimestamp (status and metadata
  edits do not); deletion stops its actor.
* DynamoGraphDeploymentScalingAdapter: deletion only, mapped to the DGD that controls it.
* DynamoCheckpoint: updates and deletions (not creations) of checkpoints annotated
  ``nvidia.com/dynamo-auto-checkpoint: "true"``, mapped through their
  ``nvidia.com/dynamo-graph-deployment-name`` label (how ``WaitForCheckpoint`` learns a checkpoint
  became Ready).
* PodCliqueSet, Service and every other kind the DGD controls (owner reference with
  ``controller: true``): updates and deletions, not creations (the DGD actor made them).
* DynamoComponentDeployment: the same, except updates that change nothing the DGD reads (a finalizer
  added or removed by the DCD controller).
* PodClique: updates that change what readiness reads; mapped through the
  ``nvidia.com/dynamo-graph-deployment-name`` label.
* PodCliqueScalingGroup: the same, mapped through its PodCliqueSet to the DGD that controls it.
* Pod (only the managed worker pods of DCDs are watched): creation, deletion, and an update that
  changes its membership labels or whether it has ended; mapped through its DGD-name label.
* Anything a re-list found changed (the informer missed events while it was not watching).

Which events nudge a DCD actor (the DCD controller's predicates, dcd-controller §2.8):

* DynamoComponentDeployment: first sight; a ``generation`` change or a newly set deletionTimestamp;
  deletion stops its actor.
* Deployment it controls (and, with the LWS gate, LeaderWorkerSet and PodGroup): updates and
  deletions, not creations.
* Service and Ingress it controls: creations, deletions, and ``generation`` changes.

Which events nudge an adapter actor:

* DynamoGraphDeploymentScalingAdapter: first sight (which starts it) and a ``generation`` change
  (a new ``spec.replicas``; its own status writes do not); deletion stops its actor.
* DGD: creation, deletion, and an update whose components differ in names or replicas; every
  adapter whose ``spec.dgdRef.name`` is that DGD is nudged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from dgd.actors.machinery.cache import Cache
from dgd.cluster.resources import (
    CHECKPOINT,
    DCD,
    DEPLOYMENT,
    INGRESS,
    LWS,
    PCLQ,
    PCS,
    PCSG,
    POD,
    POD_GROUP,
    SERVICE,
)
from dgd.domain.checkpoint import AUTO as AUTO_CHECKPOINT
from dgd.domain.metadata_keys import GRAPH_NAME, SELECTOR
from dgd.messages import dcd as dcd_messages
from dgd.messages import dgd as dgd_messages
from dgd.messages import grove
from dgd.messages.meta import controller_of, identity, labels_of


def _controller(obj: Any, kind: str, group: str) -> tuple[str, str] | None:
    namespace = identity(obj)[0]
    owner = controller_of(obj)
    if owner is None or owner.kind != kind or owner.api_version.split("/")[0] != group or not namespace:
        return None
    return namespace, owner.name


def controlling_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    return _controller(obj, dgd_messages.KIND, dgd_messages.GROUP)


def controlling_dcd(obj: Any) -> tuple[str, str] | None:
    return _controller(obj, dcd_messages.KIND, dcd_messages.GROUP)


def _labelled_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    namespace, name = identity(obj)[0], labels_of(obj).get(GRAPH_NAME)
    return (namespace, name) if namespace and name else None


def _scaling_group_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    # PCSG -> its PodCliqueSet -> the DGD that controls it (PCS names may be shortened; labels are not used).
    owner = _controller(obj, grove.PCS_KIND, grove.GROUP)
    if owner is None or not cache.caches(PCS):
        return None
    pcs = cache.get(PCS, *owner)
    return controlling_dgd(pcs, cache) if pcs is not None else None


def _auto_checkpoint_dgd(obj: Any, cache: Cache) -> tuple[str, str] | None:
    # Only the checkpoints a DGD made for itself wake it (dgd-domain §10.3 "Re-triggering").
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return _labelled_dgd(obj, cache) if annotations.get(AUTO_CHECKPOINT) == "true" else None


def _changed_or_deleted(event_type: str, old: Any, new: Any) -> bool:
    return event_type in ("MODIFIED", "DELETED")


def _pod_view(pod: Any) -> Any:
    """What the rollout reads of a managed worker pod: its membership labels and whether it ended."""
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    phase = (pod.get("status") or {}).get("phase")
    return labels.get(GRAPH_NAME), labels.get(SELECTOR), phase in ("Succeeded", "Failed")


def _pod_changed(event_type: str, old: Any, new: Any) -> bool:
    if event_type != "MODIFIED" or old is None:
        return True
    return bool(_pod_view(old) != _pod_view(new))


def _dcd_view(dcd: Any) -> Any:
    """What the DGD reads of a DCD: its generation and metadata (drift), replicas, and its status."""
    meta = dcd.metadata
    return (
        meta.generation,
        meta.labels,
        meta.annotations,
        meta.deletion_timestamp,
        dcd.spec.replicas,
        dcd.status,
    )


def _dcd_changed(event_type: str, old: Any, new: Any) -> bool:
    """A DCD update nudges its DGD unless only what the DGD does not read changed (its finalizers, a
    resourceVersion)."""
    if event_type != "MODIFIED" or old is None:
        return event_type in ("MODIFIED", "DELETED")
    return bool(_dcd_view(old) != _dcd_view(new))


def _readiness_view(obj: Any) -> Any:
    """What readiness reads of a PodClique or PodCliqueScalingGroup (§9.8)."""
    status = obj.status
    conditions = tuple(
        (c.type, c.status, c.reason)
        for c in (status.conditions if status else None) or ()
        if c.type in ("PodCliqueScheduled", "MinAvailableBreached")
    )
    if status is None:
        return (obj.spec.replicas, None)
    progress = status.update_progress
    return (
        obj.spec.replicas,
        status.replicas,
        status.updated_replicas,
        getattr(status, "ready_replicas", None),
        getattr(status, "available_replicas", None),
        status.scheduled_replicas,
        getattr(status, "schedule_gated_replicas", None),
        status.observed_generation,
        status.current_pod_clique_set_generation_hash,
        progress is not None and progress.update_ended_at is not None,
        conditions,
    )


def _readiness_changed(event_type: str, old: Any, new: Any) -> bool:
    return event_type == "MODIFIED" and old is not None and _readiness_view(old) != _readiness_view(new)


class Route(msgspec.Struct, frozen=True):
    """Which events of a kind nudge, and the DGD (namespace, name) an object belongs to."""

    nudges: Callable[[str, Any, Any], bool]
    owner: Callable[[Any, Cache], tuple[str, str] | None]


#: Routes of the kinds with a rule of their own; every other watched kind is "owned by a DGD".
ROUTES: dict[str, Route] = {
    str(PCLQ): Route(_readiness_changed, _labelled_dgd),
    str(PCSG): Route(_readiness_changed, _scaling_group_dgd),
    str(POD): Route(_pod_changed, _labelled_dgd),
    str(DCD): Route(_dcd_changed, controlling_dgd),
    str(CHECKPOINT): Route(_changed_or_deleted, _auto_checkpoint_dgd),
}
OWNED = Route(_changed_or_deleted, controlling_dgd)


def dgd_nudges(event_type: str, old: Any, new: Any) -> bool:
    if event_type == "ADDED" or old is None:
        return True
    return bool(
        old.metadata.generation != new.metadata.generation
        or (new.metadata.deletion_timestamp and not old.metadata.deletion_timestamp)
    )


def _replica_view(dgd: Any) -> tuple[tuple[str, int | None], ...]:
    """What the scaling adapters of a DGD read of it: its components' names and replicas."""
    return tuple((c.name, c.replicas) for c in dgd.spec.components or ())


def adapters_concerned(event_type: str, old: Any, new: Any) -> bool:
    if event_type != "MODIFIED" or old is None:
        return True
    return _replica_view(old) != _replica_view(new)


def adapter_nudges(old: Any, new: Any) -> bool:
    return old is None or bool(old.metadata.generation != new.metadata.generation)


def object_key(obj: Any) -> str:
    namespace, name, _ = identity(obj)
    return f"{namespace}/{name}"


def _generation_changed(event_type: str, old: Any, new: Any) -> bool:
    """controller-runtime's ``GenerationChangedPredicate`` over raw objects."""
    if event_type != "MODIFIED" or old is None:
        return True
    return bool(
        (old.get("metadata") or {}).get("generation") != (new.get("metadata") or {}).get("generation")
    )


#: The DCD controller's watches of the children a DCD controls: which events nudge it.
DCD_CHILD_ROUTES: dict[str, Callable[[str, Any, Any], bool]] = {
    str(DEPLOYMENT): _changed_or_deleted,
    str(LWS): _changed_or_deleted,
    str(POD_GROUP): _changed_or_deleted,
    str(SERVICE): _generation_changed,
    str(INGRESS): _generation_changed,
}
