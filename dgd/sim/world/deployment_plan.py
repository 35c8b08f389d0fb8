"""The arithmetic of kube-controller-manager's Deployment controller, as pure functions on raw JSON.

Deployments and ReplicaSets travel as raw JSON (``apps/v1``); the API server's defaults (1 replica,
``RollingUpdate`` at 25%/25%, 10 revisions kept, a 600-second progress deadline) are applied here on
reading, as the memory API server does not default built-in kinds. What is here:

* the spec's knobs read with their defaults (``replicas``, ``max_surge``, ``max_unavailable``, ...);
* which ReplicaSet is the new one (``find_new``: its template, but for ``pod-template-hash``, is the
  Deployment's), and the template hash that names a new one (``template_hash``);
* the rolling update's replica targets (``new_replicas``, ``old_targets``) and the proportional
  scaling of a resize in mid-rollout (``proportional``);
* which old ReplicaSets the revision history limit lets go (``to_clean``).

Status and conditions are in :mod:`dgd.sim.world.deployment_status`; the reads and writes in
:mod:`dgd.sim.world.deployment`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from dgd.domain.rollout_replicas import MAX_SURGE, MAX_UNAVAILABLE, _bound
from dgd.messages.base import JSONObject

#: The label (on a ReplicaSet, its selector and its pods) naming the template they were made from.
TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
#: Deployment annotations not copied to its ReplicaSets (``deploymentutil.skipCopyAnnotation``).
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
#: How long the revision history annotation may grow (``maxRevHistoryLengthInChars``).
_HISTORY_CHARS = 2000
_NOT_COPIED = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
}
#: ``progressDeadlineSeconds`` meaning "no deadline" (``math.MaxInt32``).
NO_DEADLINE = 2**31 - 1
#: The alphabet of ``rand.SafeEncodeString``: no vowels, no look-alikes.
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


# The spec, with the API server's defaults.


def spec(obj: JSONObject) -> JSONObject:
    return obj.get("spec") or {}


def status(obj: JSONObject) -> JSONObject:
    return obj.get("status") or {}


def meta(obj: JSONObject) -> JSONObject:
    return obj.get("metadata") or {}


def name(obj: JSONObject) -> str:
    return str(meta(obj).get("name"))


def replicas(obj: JSONObject) -> int:
    """``spec.replicas`` of a Deployment or ReplicaSet (default 1)."""
    value = spec(obj).get("replicas")
    return 1 if value is None else int(value)


def is_recreate(deployment: JSONObject) -> bool:
    return (spec(deployment).get("strategy") or {}).get("type") == "Recreate"


def _fenceposts(deployment: JSONObject) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` resolved against the replicas: surge rounds up, unavailable
    down, and both 0 means 1 unavailable (``deploymentutil.ResolveFenceposts``)."""
    rolling = (spec(deployment).get("strategy") or {}).get("rollingUpdate") or {}
    desired = replicas(deployment)
    bounds = {key: str(rolling[field]) for key, field in _FIELDS.items() if rolling.get(field) is not None}
    surge = _bound(bounds, MAX_SURGE, desired, round_up=True)
    unavailable = _bound(bounds, MAX_UNAVAILABLE, desired, round_up=False)
    return (surge, 1) if surge == 0 and unavailable == 0 else (surge, unavailable)


_FIELDS = {MAX_SURGE: "maxSurge", MAX_UNAVAILABLE: "maxUnavailable"}


def max_surge(deployment: JSONObject) -> int:
    return 0 if is_recreate(deployment) else _fenceposts(deployment)[0]


def max_unavailable(deployment: JSONObject) -> int:
    desired = replicas(deployment)
    if is_recreate(deployment) or desired == 0:
        return 0
    return min(_fenceposts(deployment)[1], desired)


def min_ready_seconds(obj: JSONObject) -> int:
    return int(spec(obj).get("minReadySeconds") or 0)


def history_limit(deployment: JSONObject) -> int:
    value = spec(deployment).get("revisionHistoryLimit")
    return 10 if value is None else int(value)


def progress_deadline(deployment: JSONObject) -> int | None:
    """Seconds a rollout may go without progress, ``None`` when there is no deadline."""
    value = spec(deployment).get("progressDeadlineSeconds")
    value = 600 if value is None else int(value)
    return None if value == NO_DEADLINE else value


# ReplicaSets.


def counted(rss: Sequence[JSONObject | None], field: str) -> int:
    """The sum of a status field (``replicas``, ``availableReplicas``, ...) over some ReplicaSets."""
    return sum(int(status(rs).get(field) or 0) for rs in rss if rs is not None)


def specified(rss: Sequence[JSONObject | None]) -> int:
    """The sum of their ``spec.replicas``."""
    return sum(replicas(rs) for rs in rss if rs is not None)


def active(rss: Sequence[JSONObject]) -> list[JSONObject]:
    """The ReplicaSets that should have pods (``controller.FilterActiveReplicaSets``)."""
    return [rs for rs in rss if replicas(rs) > 0]


def oldest_first(rss: Sequence[JSONObject]) -> list[JSONObject]:
    return sorted(rss, key=lambda rs: (str(meta(rs).get("creationTimestamp")), name(rs)))


def revision(rs: JSONObject) -> int:
    return revision_of(meta(rs).get("annotations") or {})


def revision_of(annotations: Mapping[str, str]) -> int:
    text = annotations.get(REVISION, "0")
    return int(text) if text.isdigit() else 0


def _without_hash(template: Any) -> Any:
    template = msgspec.to_builtins(template or {})
    found = dict((template.get("metadata") or {}).get("labels") or {})
    found.pop(TEMPLATE_HASH, None)
    return {**template, "metadata": {**(template.get("metadata") or {}), "labels": found or None}}


def find_new(deployment: JSONObject, rss: Sequence[JSONObject]) -> JSONObject | None:
    """The oldest ReplicaSet whose template is the Deployment's, but for its hash label
    (``deploymentutil.FindNewReplicaSet``)."""
    wanted = _without_hash(spec(deployment).get("template"))
    return next((rs for rs in oldest_first(rss) if _without_hash(spec(rs).get("template")) == wanted), None)


def template_hash(template: Any, collisions: int) -> str:
    """The name suffix of a new ReplicaSet: a 32-bit FNV-1a hash of the template (and the collision
    count) spelled in ``rand.SafeEncodeString``'s alphabet, as ``controller.ComputeHash`` spells it
    (of our canonical JSON, not of Go's object dump: the digits differ from kube-controller-manager's)."""
    value = 0x811C9DC5
    data = msgspec.json.encode(template, order="sorted") + (
        collisions.to_bytes(4, "little") if collisions else b""
    )
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(char) % len(_SAFE)] for char in str(value))


def rs_annotations(deployment: JSONObject, current: Mapping[str, str], new_revision: int) -> dict[str, str]:
    """The new ReplicaSet's annotations as the Deployment sets them: the Deployment's own (but for the
    controller's) and the revision, never lowered (``SetNewReplicaSetAnnotations``)."""
    out = dict(current)
    out |= {k: v for k, v in (meta(deployment).get("annotations") or {}).items() if k not in _NOT_COPIED}
    if revision_of(out) < new_revision:
        if REVISION in current:
            # A template rolled back to: the revisions it had are kept, as long as they fit.
            out |= _history(current.get(REVISION_HISTORY, ""), current[REVISION])
        out[REVISION] = str(new_revision)
    return out


def _history(before: str, revision: str) -> dict[str, str]:
    kept = [old for old in before.split(",") if old]
    while kept and len(",".join([*kept, revision])) > _HISTORY_CHARS:
        kept.pop(0)
    joined = ",".join([*kept, revision])
    return {REVISION_HISTORY: joined} if len(joined) <= _HISTORY_CHARS else {}


def sized_annotations(deployment: JSONObject, current: Mapping[str, str]) -> dict[str, str]:
    """``current`` with the replicas a ReplicaSet was sized for: the Deployment's, and its maximum
    with the surge (``SetReplicasAnnotations``)."""
    desired = replicas(deployment)
    return {**current, DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(desired + max_surge(deployment))}


# Rolling update arithmetic.


def new_replicas(deployment: JSONObject, rss: Sequence[JSONObject], new: JSONObject) -> int:
    """What the new ReplicaSet may scale up to now (``deploymentutil.NewRSNewReplicas``)."""
    desired = replicas(deployment)
    if is_recreate(deployment):
        return desired
    room = desired + max_surge(deployment) - specified(rss)
    if room <= 0:
        return replicas(new)
    return replicas(new) + min(room, desired - replicas(new))


def old_targets(deployment: JSONObject, olds: Sequence[JSONObject], new: JSONObject) -> dict[str, int]:
    """The old ReplicaSets to scale down now, and to what (``reconcileOldReplicaSets``): unhealthy
    replicas first, then available ones while more than ``replicas - maxUnavailable`` stay
    available, oldest ReplicaSet first."""
    olds = oldest_first(active(olds))
    if not olds:
        return {}
    minimum = replicas(deployment) - max_unavailable(deployment)
    new_unavailable = replicas(new) - counted([new], "availableReplicas")
    budget = specified(olds) + replicas(new) - minimum - new_unavailable
    if budget <= 0:
        return {}
    sizes = {name(rs): replicas(rs) for rs in olds}
    for rs in olds:
        unhealthy = sizes[name(rs)] - counted([rs], "availableReplicas")
        if budget <= 0 or unhealthy == 0:
            continue
        if unhealthy < 0:
            # Its status still counts pods it was scaled down from: kube-controller-manager refuses to
            # "scale down" to more replicas and skips this pass (``cleanupUnhealthyReplicas``).
            return {}
        cut = min(budget, unhealthy)
        sizes[name(rs)] -= cut
        budget -= cut
    surplus = counted([*olds, new], "availableReplicas") - minimum
    for rs in olds:
        cut = min(sizes[name(rs)], max(surplus, 0))
        sizes[name(rs)] -= cut
        surplus -= cut
    return {name(rs): sizes[name(rs)] for rs in olds if sizes[name(rs)] != replicas(rs)}


def _newest_first(rss: Sequence[JSONObject]) -> list[JSONObject]:
    return list(reversed(oldest_first(rss)))


def scale_targets(
    deployment: JSONObject, new: JSONObject | None, olds: Sequence[JSONObject]
) -> dict[str, int]:
    """What a resize (or a paused Deployment's pass) sets each ReplicaSet to (``DeploymentController.scale``):
    the one active (or latest) ReplicaSet to the replicas; the old ones to 0 once the new one is
    saturated; else, rolling, the surge-inclusive total shared in proportion to their sizes."""
    desired = replicas(deployment)
    ordered = [*_newest_first(olds)]
    running = active([*ordered, *([new] if new is not None else [])])
    if (new is not None or ordered) and len(running) <= 1:
        only = running[0] if running else (new if new is not None else ordered[0])
        return {} if replicas(only) == desired else {name(only): desired}
    if not running:
        return {}
    if new is not None and _saturated(deployment, new):
        return {name(rs): 0 for rs in active(olds)}
    if is_recreate(deployment):
        return {}
    allowed = desired + max_surge(deployment) if desired > 0 else 0
    to_add = allowed - specified(running)
    # Largest first; ties: the newer first when adding, the older first when removing.
    running = sorted(
        _newest_first(running) if to_add > 0 else oldest_first(running), key=lambda rs: -replicas(rs)
    )
    sizes: dict[str, int] = {}
    added = 0
    for rs in running:
        share = _proportion(rs, deployment, to_add, added)
        sizes[name(rs)] = replicas(rs) + share
        added += share
    if to_add:
        first = name(running[0])
        sizes[first] = max(sizes[first] + to_add - added, 0)
    return sizes


def _saturated(deployment: JSONObject, new: JSONObject) -> bool:
    desired = replicas(deployment)
    annotated = (meta(new).get("annotations") or {}).get(DESIRED_REPLICAS)
    return (
        replicas(new) == desired
        and annotated == str(desired)
        and counted([new], "availableReplicas") == desired
    )


def _proportion(rs: JSONObject, deployment: JSONObject, to_add: int, added: int) -> int:
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    desired = replicas(deployment)
    if desired == 0:
        fraction = -replicas(rs)
    else:
        text = (meta(rs).get("annotations") or {}).get(MAX_REPLICAS, "")
        before = (int(text) if text.isdigit() else 0) or int(status(deployment).get("replicas") or 0)
        total = desired + max_surge(deployment)
        fraction = int(replicas(rs) * total / before + 0.5) - replicas(rs) if before else 0
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def is_scaling_event(deployment: JSONObject, rss: Sequence[JSONObject]) -> bool:
    """Whether an active ReplicaSet was sized for other replicas than the Deployment's now."""
    desired = str(replicas(deployment))
    for rs in active(rss):
        annotated = (meta(rs).get("annotations") or {}).get(DESIRED_REPLICAS)
        if annotated is not None and annotated != desired:
            return True
    return False


def to_clean(deployment: JSONObject, olds: Sequence[JSONObject]) -> list[JSONObject]:
    """Old ReplicaSets beyond ``revisionHistoryLimit`` that may go: oldest revision first, at 0
    replicas, observed, not being deleted (``cleanupDeployment``)."""
    alive = [rs for rs in olds if not meta(rs).get("deletionTimestamp")]
    surplus = len(alive) - history_limit(deployment)
    if surplus <= 0:
        return []
    ordered = sorted(alive, key=lambda rs: (revision(rs), str(meta(rs).get("creationTimestamp")), name(rs)))
    return [
        rs
        for rs in ordered[:surplus]
        if counted([rs], "replicas") == 0
        and replicas(rs) == 0
        and int(meta(rs).get("generation") or 0) <= int(status(rs).get("observedGeneration") or 0)
    ]
