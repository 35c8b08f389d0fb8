"""The status kube-controller-manager writes on a Deployment, and its conditions, as pure functions.

``deployment_status`` is ``calculateStatus``: the counts summed over the Deployment's ReplicaSets'
own status (``updatedReplicas`` from the new one), ``unavailableReplicas`` against their spec, and
``terminatingReplicas`` summed where the ReplicaSets report it, and
``Available`` (``MinimumReplicasAvailable`` while at least ``replicas - maxUnavailable`` are
available, else ``MinimumReplicasUnavailable``). ``rollout_status`` adds what ``syncRolloutStatus``
says of progress under a deadline: ``Progressing`` becomes ``NewReplicaSetAvailable`` once the
rollout is complete, ``ReplicaSetUpdated`` (its update time moved) whenever replicas move forward, and
``ProgressDeadlineExceeded`` once ``progressDeadlineSeconds`` pass without that; it also says when
to look again to notice the deadline. Zero counts are left out, as the API's ``omitempty`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from dgd.messages.base import JSONObject
from dgd.messages.timestamps import rfc3339
from dgd.sim.world.controller import parse_time
from dgd.sim.world.deployment_plan import (
    counted,
    max_unavailable,
    meta,
    name,
    progress_deadline,
    replicas,
    specified,
    status,
)

PROGRESSING, AVAILABLE = "Progressing", "Available"
AVAILABLE_REASON, UNAVAILABLE_REASON = "MinimumReplicasAvailable", "MinimumReplicasUnavailable"
CREATED, FOUND, UPDATED = "NewReplicaSetCreated", "FoundNewReplicaSet", "ReplicaSetUpdated"
COMPLETE, TIMED_OUT = "NewReplicaSetAvailable", "ProgressDeadlineExceeded"
PAUSED, RESUMED = "DeploymentPaused", "DeploymentResumed"
#: kube-controller-manager looks at a stuck rollout again a second after its deadline at the latest.
_RECHECK = 1.0


def condition(conditions: Sequence[JSONObject] | None, type: str) -> JSONObject | None:
    return next((c for c in conditions or () if c.get("type") == type), None)


def new_condition(type: str, value: str, reason: str, message: str, now: float) -> JSONObject:
    stamp = rfc3339(now)
    return {
        "type": type,
        "status": value,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def set_condition(conditions: Sequence[JSONObject] | None, new: JSONObject) -> list[JSONObject]:
    """``deploymentutil.SetDeploymentCondition``: unchanged when status and reason are; the
    transition time kept when the status is; the condition moved to the end."""
    current = condition(conditions, new["type"])
    if current is not None and (current["status"], current.get("reason")) == (new["status"], new["reason"]):
        return list(conditions or ())
    if current is not None and current["status"] == new["status"]:
        new = {**new, "lastTransitionTime": current.get("lastTransitionTime")}
    return [*(c for c in conditions or () if c.get("type") != new["type"]), new]


def without(conditions: Sequence[JSONObject] | None, type: str) -> list[JSONObject]:
    return [c for c in conditions or () if c.get("type") != type]


def deployment_status(
    deployment: JSONObject, rss: Sequence[JSONObject], new: JSONObject | None, now: float
) -> JSONObject:
    """``status`` computed from the ReplicaSets (``rss``, the new one among them) and ``Available``."""
    available = counted(rss, "availableReplicas")
    counts = {
        "observedGeneration": int(meta(deployment).get("generation") or 0),
        "replicas": counted(rss, "replicas"),
        "updatedReplicas": counted([new], "replicas"),
        "readyReplicas": counted(rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(specified(rss) - available, 0),
        "collisionCount": int(status(deployment).get("collisionCount") or 0),
    }
    out: JSONObject = {key: value for key, value in counts.items() if value}
    if any("terminatingReplicas" in status(rs) for rs in rss):
        out["terminatingReplicas"] = counted(rss, "terminatingReplicas")
    conditions = list(status(deployment).get("conditions") or ())
    if available >= replicas(deployment) - max_unavailable(deployment):
        minimum = new_condition(
            AVAILABLE, "True", AVAILABLE_REASON, "Deployment has minimum availability.", now
        )
    else:
        why = "Deployment does not have minimum availability."
        minimum = new_condition(AVAILABLE, "False", UNAVAILABLE_REASON, why, now)
    out["conditions"] = set_condition(conditions, minimum)
    return out


def complete(deployment: JSONObject, found: JSONObject) -> bool:
    """Every replica updated and available, none else, and this generation observed."""
    desired = replicas(deployment)
    return (
        int(found.get("updatedReplicas") or 0) == desired
        and int(found.get("replicas") or 0) == desired
        and int(found.get("availableReplicas") or 0) == desired
        and int(found.get("observedGeneration") or 0) >= int(meta(deployment).get("generation") or 0)
    )


def _progressed(before: JSONObject, after: JSONObject) -> bool:
    def get(found: JSONObject, key: str) -> int:
        return int(found.get(key) or 0)

    old_before = get(before, "replicas") - get(before, "updatedReplicas")
    old_after = get(after, "replicas") - get(after, "updatedReplicas")
    return (
        get(after, "updatedReplicas") > get(before, "updatedReplicas")
        or old_after < old_before
        or get(after, "readyReplicas") > get(before, "readyReplicas")
        or get(after, "availableReplicas") > get(before, "availableReplicas")
    )


def rollout_status(
    deployment: JSONObject, rss: Sequence[JSONObject], new: JSONObject | None, now: float
) -> tuple[JSONObject, float | None]:
    """``deployment_status`` with ``Progressing`` as a rollout moves (see the module), and the time
    at which a rollout that is not progressing would pass its deadline (``None``: nothing to wait for)."""
    found = deployment_status(deployment, rss, new, now)
    deadline = progress_deadline(deployment)
    conditions = list(found["conditions"])
    if deadline is None:
        conditions = without(conditions, PROGRESSING)
    current = condition(status(deployment).get("conditions"), PROGRESSING)
    done = found.get("replicas") == found.get("updatedReplicas") and (current or {}).get("reason") == COMPLETE
    subject = f'ReplicaSet "{name(new)}"' if new is not None else f'Deployment "{name(deployment)}"'
    if deadline is not None and not done:
        if complete(deployment, found):
            message = f"{subject} has successfully progressed."
            conditions = set_condition(conditions, new_condition(PROGRESSING, "True", COMPLETE, message, now))
        elif _progressed(status(deployment), found):
            moved = new_condition(PROGRESSING, "True", UPDATED, f"{subject} is progressing.", now)
            if current is not None and current.get("status") == "True":
                moved["lastTransitionTime"] = current.get("lastTransitionTime")
            conditions = set_condition(without(conditions, PROGRESSING), moved)
        elif _timed_out(condition(conditions, PROGRESSING), deadline, now):
            message = f"{subject} has timed out progressing."
            conditions = set_condition(
                conditions, new_condition(PROGRESSING, "False", TIMED_OUT, message, now)
            )
    found["conditions"] = without(conditions, "ReplicaFailure")
    return found, _recheck(deployment, found, deadline)


def _timed_out(progressing: JSONObject | None, deadline: int, now: float) -> bool:
    if progressing is None or progressing.get("reason") == COMPLETE:
        return False
    if progressing.get("reason") == TIMED_OUT:
        return True
    since = parse_time(progressing.get("lastUpdateTime"))
    return since is not None and since + deadline < now


def _recheck(deployment: JSONObject, found: JSONObject, deadline: int | None) -> float | None:
    """When a rollout that has not progressed would be past its deadline (``requeueStuckDeployment``)."""
    progressing = condition(found.get("conditions"), PROGRESSING)
    if deadline is None or progressing is None or complete(deployment, found):
        return None
    if progressing.get("reason") in (TIMED_OUT, COMPLETE, PAUSED):
        return None
    since = parse_time(progressing.get("lastUpdateTime"))
    return None if since is None else since + deadline + _RECHECK
