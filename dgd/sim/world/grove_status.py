"""What Grove reports: PodClique, PodCliqueScalingGroup and PodCliqueSet status, from pods up.

Pure functions of the objects, their pods and the time. Counts follow Grove: ``replicas`` counts
the pods that are neither terminating nor terminated, ``scheduledReplicas`` those bound to a node,
``scheduleGatedReplicas`` those still gated, ``updatedReplicas`` those at the clique's current template
hash. A scaling-group replica is scheduled (available) when each member clique has at least its
``minAvailable`` pods scheduled (ready). Conditions carry Grove's reasons, including its polarity
quirk: ``MinAvailableBreached`` stays ``False`` while too few pods are *scheduled* (dgd-domain §9.6).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from dgd.messages.base import JSONObject
from dgd.messages.grove import PodCliqueSet, PodCliqueSetStatus, PodCliqueSetUpdateProgress
from dgd.messages.grove_children import (
    PodClique,
    PodCliqueScalingGroup,
    PodCliqueScalingGroupStatus,
    PodCliqueScalingGroupUpdateProgress,
    PodCliqueStatus,
    PodCliqueUpdateProgress,
)
from dgd.messages.meta import Condition, ConditionStatus
from dgd.sim.world.conditions import set_condition, without_condition
from dgd.sim.world.grove_children import PART_OF, POD_TEMPLATE_HASH, SCALING_GROUP_REPLICA, SET_REPLICA
from dgd.sim.world.pods import is_active, is_bound, is_gated, is_ready, labels
from dgd.sim.world.settings import WorldSettings

SCHEDULED = "PodCliqueScheduled"
BREACHED = "MinAvailableBreached"
TOPOLOGY = "TopologyLevelsUnavailable"


def clique_status(clique: PodClique, pods: Sequence[JSONObject], set_hash: str, now: str) -> PodCliqueStatus:
    """A PodClique's status from its pods; ``set_hash`` is its PodCliqueSet's generation hash."""
    active = [pod for pod in pods if is_active(pod)]
    current = (clique.metadata.labels or {}).get(POD_TEMPLATE_HASH)
    outdated = any(labels(pod).get(POD_TEMPLATE_HASH) != current for pod in active)
    scheduled = sum(1 for pod in active if is_bound(pod))
    ready = sum(1 for pod in active if is_ready(pod))
    floor = clique.spec.min_available if clique.spec.min_available is not None else clique.spec.replicas
    previous = clique.status or PodCliqueStatus(0, 0, 0, 0)
    generation = clique.metadata.generation

    # An update runs while pods of an older template remain; it ends when the last one is gone.
    progress = previous.update_progress
    if outdated and (progress is None or progress.pod_template_hash != current or progress.update_ended_at):
        progress = PodCliqueUpdateProgress(set_hash, current or "", update_started_at=now)
    elif not outdated and progress is not None and progress.update_ended_at is None:
        progress = msgspec.structs.replace(progress, update_ended_at=now)

    conditions = previous.conditions
    if scheduled < floor:
        message = f"Insufficient scheduled pods. expected at least: {floor}, found: {scheduled}"
        conditions = set_condition(
            conditions, SCHEDULED, "False", "InsufficientScheduledPods", message, now=now
        )
        conditions = set_condition(
            conditions, BREACHED, "False", "InsufficientScheduledPods", message, now=now
        )
    else:
        message = f"Sufficient scheduled pods found. expected at least: {floor}, found: {scheduled}"
        conditions = set_condition(conditions, SCHEDULED, "True", "SufficientScheduledPods", message, now=now)
        if ready < floor:
            message = f"Insufficient ready pods. expected at least: {floor}, found: {ready}"
            conditions = set_condition(
                conditions, BREACHED, "True", "InsufficientReadyPods", message, now=now
            )
        else:
            message = f"Sufficient ready pods found. expected at least: {floor}, found: {ready}"
            conditions = set_condition(conditions, BREACHED, "False", "SufficientReadyPods", message, now=now)
    conditions = [msgspec.structs.replace(c, observed_generation=generation) for c in conditions]

    return PodCliqueStatus(
        ready_replicas=ready,
        schedule_gated_replicas=sum(1 for pod in active if is_gated(pod)),
        scheduled_replicas=scheduled,
        updated_replicas=sum(1 for pod in active if labels(pod).get(POD_TEMPLATE_HASH) == current),
        replicas=len(active),
        observed_generation=generation,
        conditions=conditions,
        current_pod_clique_set_generation_hash=(
            previous.current_pod_clique_set_generation_hash if outdated else set_hash
        ),
        current_pod_template_hash=previous.current_pod_template_hash if outdated else current,
        hpa_pod_selector=f"grove.io/podclique={clique.metadata.name}",
        update_progress=progress,
    )


def group_status(
    group: PodCliqueScalingGroup, members: Sequence[PodClique], set_hash: str, now: str
) -> PodCliqueScalingGroupStatus:
    """A scaling group's status from its member cliques (with their new status)."""
    by_replica: dict[int, list[PodClique]] = {}
    for member in members:
        by_replica.setdefault(int((member.metadata.labels or {}).get(SCALING_GROUP_REPLICA, "0")), []).append(
            member
        )
    expected = len(group.spec.clique_names)
    replicas = [by_replica.get(index, []) for index in range(group.spec.replicas)]
    complete = [cliques for cliques in replicas if len(cliques) == expected]
    scheduled = sum(1 for cliques in complete if all(_scheduled(c) for c in cliques))
    available = sum(1 for cliques in complete if all(_available(c) for c in cliques))
    updated = sum(1 for cliques in complete if all(_updated(c, set_hash) for c in cliques))
    floor = group.spec.min_available or 1
    previous = group.status or PodCliqueScalingGroupStatus(0, 0, 0)

    done = updated == group.spec.replicas
    progress = previous.update_progress
    if not done and (progress is None or progress.pod_clique_set_generation_hash != set_hash):
        progress = PodCliqueScalingGroupUpdateProgress(set_hash, update_started_at=now)
    elif done and progress is not None and progress.update_ended_at is None:
        progress = msgspec.structs.replace(progress, update_ended_at=now)

    conditions = previous.conditions
    if scheduled < floor:
        message = f"Insufficient scheduled replicas. expected at least: {floor}, found: {scheduled}"
        reason = "InsufficientScheduledPodCliqueScalingGroupReplicas"
        conditions = set_condition(conditions, BREACHED, "False", reason, message, now=now)
    elif available < floor:
        message = f"Insufficient available replicas. expected at least: {floor}, found: {available}"
        reason = "InsufficientAvailablePodCliqueScalingGroupReplicas"
        conditions = set_condition(conditions, BREACHED, "True", reason, message, now=now)
    else:
        message = f"Sufficient available replicas. expected at least: {floor}, found: {available}"
        reason = "SufficientAvailablePodCliqueScalingGroupReplicas"
        conditions = set_condition(conditions, BREACHED, "False", reason, message, now=now)

    return PodCliqueScalingGroupStatus(
        available_replicas=available,
        scheduled_replicas=scheduled,
        updated_replicas=updated,
        replicas=sum(1 for cliques in replicas if cliques),
        observed_generation=group.metadata.generation,
        conditions=conditions,
        current_pod_clique_set_generation_hash=(
            set_hash if done else previous.current_pod_clique_set_generation_hash
        ),
        selector=f"grove.io/podcliquescalinggroup={group.metadata.name}",
        update_progress=progress,
    )


def set_status(
    pcs: PodCliqueSet,
    cliques: Sequence[PodClique],
    groups: Sequence[PodCliqueScalingGroup],
    set_hash: str,
    settings: WorldSettings,
    now: str,
) -> PodCliqueSetStatus:
    """A PodCliqueSet's status from its standalone cliques and scaling groups (with new status)."""
    count = 1 if pcs.spec.replicas is None else pcs.spec.replicas
    available = updated = 0
    for index in range(count):
        mine_c = [c for c in cliques if (c.metadata.labels or {}).get(SET_REPLICA) == str(index)]
        mine_g = [g for g in groups if (g.metadata.labels or {}).get(SET_REPLICA) == str(index)]
        if all(_available(c) for c in mine_c) and all(_group_available(g) for g in mine_g):
            available += 1
        if all(_updated(c, set_hash) for c in mine_c) and all(_group_updated(g, set_hash) for g in mine_g):
            updated += 1
    previous = pcs.status or PodCliqueSetStatus(0, 0)

    progress = previous.update_progress
    if previous.current_generation_hash not in (None, set_hash):
        progress = PodCliqueSetUpdateProgress(update_started_at=now)
    if updated == count and progress is not None and progress.update_ended_at is None:
        progress = msgspec.structs.replace(progress, update_ended_at=now)

    topology = topology_condition(pcs, settings, previous.conditions, now)
    conditions = without_condition(previous.conditions, TOPOLOGY)
    if topology is not None:
        conditions = sorted([*(conditions or []), topology], key=lambda c: c.type)
    return PodCliqueSetStatus(
        available_replicas=available,
        updated_replicas=updated,
        replicas=count,
        observed_generation=pcs.metadata.generation,
        conditions=conditions,
        current_generation_hash=set_hash,
        hpa_pod_selector=f"{PART_OF}={pcs.metadata.name}",
        update_progress=progress,
    )


def topology_condition(
    pcs: PodCliqueSet, settings: WorldSettings, previous: list[Condition] | None, now: str
) -> Condition | None:
    """Grove's ``TopologyLevelsUnavailable``; ``None`` when the set has no topology constraint."""
    template = pcs.spec.template
    constraints = [template.topology_constraint]
    constraints += [clique.topology_constraint for clique in template.cliques]
    constraints += [group.topology_constraint for group in template.pod_clique_scaling_groups or []]
    present = [c for c in constraints if c is not None]
    domains = sorted(
        {
            d
            for c in present
            for d in (c.pack_domain, c.pack and c.pack.required, c.pack and c.pack.preferred)
            if d
        }
    )
    names = [c.topology_name for c in present if c.topology_name]
    if not domains and not names:
        return None
    generation = pcs.metadata.generation
    if not names:
        message = "Topology constraints name no ClusterTopology"
        return _set(previous, "Unknown", "TopologyNameMissing", message, now, generation)
    topology = settings.topology(names[0])
    if topology is None:
        message = f"ClusterTopology {names[0]} not found"
        return _set(previous, "True", "ClusterTopologyNotFound", message, now, generation)
    missing = [domain for domain in domains if domain not in topology.levels]
    if missing:
        message = f"Unavailable topology domains: [{' '.join(missing)}]"
        return _set(previous, "True", "ClusterTopologyLevelsUnavailable", message, now, generation)
    message = "All topology levels are available"
    return _set(previous, "False", "AllClusterTopologyLevelsAvailable", message, now, generation)


def _set(
    previous: list[Condition] | None,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> Condition:
    conditions = set_condition(previous, TOPOLOGY, status, reason, message, now=now)
    condition = next(c for c in conditions if c.type == TOPOLOGY)
    return msgspec.structs.replace(condition, observed_generation=generation)


def _floor(clique: PodClique) -> int:
    return clique.spec.min_available if clique.spec.min_available is not None else clique.spec.replicas


def _scheduled(clique: PodClique) -> bool:
    return clique.status is not None and clique.status.scheduled_replicas >= _floor(clique)


def _available(clique: PodClique) -> bool:
    return clique.status is not None and clique.status.ready_replicas >= _floor(clique)


def _updated(clique: PodClique, set_hash: str) -> bool:
    status = clique.status
    return (
        status is not None
        and status.current_pod_clique_set_generation_hash == set_hash
        and status.updated_replicas == status.replicas == clique.spec.replicas
    )


def _group_available(group: PodCliqueScalingGroup) -> bool:
    return group.status is not None and group.status.available_replicas >= (group.spec.min_available or 1)


def _group_updated(group: PodCliqueScalingGroup, set_hash: str) -> bool:
    status = group.status
    return status is not None and status.current_pod_clique_set_generation_hash == set_hash
