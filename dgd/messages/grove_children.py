"""What Grove makes of a PodCliqueSet: its PodCliques and PodCliqueScalingGroups (``grove.io/v1alpha1``).

Grove creates a PodClique from each clique template and a PodCliqueScalingGroup from each
scaling-group config of the PodCliqueSet the operator renders (``dgd.messages.grove``); the operator
scales them (domain spec §9.4) and reads their status to observe readiness (§9.6). A PodClique's
spec is its template's ``PodCliqueSpec``, and both kinds report the status counters and
``LastError`` of the PodCliqueSet's module. Every field their CRDs declare is modelled; fields the
CRDs default stay ``None`` when absent, as there, so a decoded object encodes back unchanged.
"""

from __future__ import annotations

from dgd.messages.base import Model
from dgd.messages.grove import Count, CountDefaultOne, LastError, PodCliqueSpec
from dgd.messages.meta import Condition, Object

PCLQ_KIND = "PodClique"
PCLQ_PLURAL = "podcliques"
PCSG_KIND = "PodCliqueScalingGroup"
PCSG_PLURAL = "podcliquescalinggroups"


# PodClique: created by Grove from a clique template; the operator scales and observes it.


class PodsSelectedToUpdate(Model, frozen=True):
    """Ready pods picked for replacement: the one being replaced and those already done."""

    current: str
    """The pod being replaced now."""
    completed: list[str] | None = None
    """The pods already replaced."""


class PodCliqueUpdateProgress(Model, frozen=True):
    """Progress of a PodClique update toward a new template hash."""

    pod_clique_set_generation_hash: str
    """The PodCliqueSet spec hash the clique is updating to."""
    pod_template_hash: str
    """The pod template hash the clique's pods are updating to."""
    update_started_at: str | None = None
    """When the update started (RFC 3339)."""
    update_ended_at: str | None = None
    """When Grove had nothing left to do for the update (RFC 3339); unset while it runs."""
    ready_pods_selected_to_update: PodsSelectedToUpdate | None = None
    """Ready pods picked for replacement (not with the `OnDelete` strategy)."""


class PodCliqueStatus(Model, frozen=True):
    """What Grove observed of a PodClique's pods; ``hpa_pod_selector`` backs its scale subresource."""

    ready_replicas: Count
    """Pods that are ready."""
    schedule_gated_replicas: Count
    """Pods created with a scheduling gate still set."""
    scheduled_replicas: Count
    """Pods the scheduler has placed."""
    updated_replicas: Count
    """Pods at the current pod template."""
    replicas: int | None = None
    """Pods that are not terminated."""
    observed_generation: int | None = None
    """The `metadata.generation` Grove last acted on."""
    conditions: list[Condition] | None = None
    """The clique's conditions, such as `MinAvailableBreached`."""
    current_pod_clique_set_generation_hash: str | None = None
    """The PodCliqueSet spec hash the clique fully runs."""
    current_pod_template_hash: str | None = None
    """The pod template hash the clique's pods fully run."""
    hpa_pod_selector: str | None = None
    """The label selector of the clique's pods, which the scale subresource reports."""
    last_errors: list[LastError] | None = None
    """The errors Grove met when it last reconciled the clique."""
    update_progress: PodCliqueUpdateProgress | None = None
    """The progress of the latest update."""


class PodClique(Object[PodCliqueSpec, PodCliqueStatus], frozen=True, tag_field="kind", tag=PCLQ_KIND):
    """A set of pods of one role, owned by a PodCliqueSet (or one of its scaling groups)."""


# PodCliqueScalingGroup: created by Grove from a scaling-group config; scaled and observed.


class ReplicaIndicesSelectedToUpdate(Model, frozen=True):
    """Ready scaling-group replicas picked for replacement, by index."""

    current: int
    """The index of the replica being replaced now."""
    completed: list[int] | None = None
    """The indices of the replicas already replaced."""


class PodCliqueScalingGroupUpdateProgress(Model, frozen=True):
    """Progress of a scaling-group update, in cliques updated."""

    pod_clique_set_generation_hash: str
    """The PodCliqueSet spec hash the group is updating to."""
    update_started_at: str
    """When the update started (RFC 3339)."""
    update_ended_at: str | None = None
    """When Grove had nothing left to do for the update (RFC 3339); unset while it runs."""
    ready_replica_indices_selected_to_update: ReplicaIndicesSelectedToUpdate | None = None
    """Ready replicas picked for replacement; replicas that are not ready are replaced without waiting."""
    total_pod_cliques_count: Count | None = None
    """How many PodCliques the group's current spec asks for."""
    updated_pod_cliques_count: Count | None = None
    """How many of the group's PodCliques are at the current spec."""


class PodCliqueScalingGroupSpec(Model, frozen=True):
    """The desired scaling group: ``replicas`` copies of the named cliques."""

    clique_names: list[str]
    """The cliques that scale together in this group."""
    replicas: CountDefaultOne
    """How many copies of the group to run; default 1."""
    min_available: CountDefaultOne | None = None
    """How many replicas of the group must be available for it to count as running; default 1."""


class PodCliqueScalingGroupStatus(Model, frozen=True):
    """What Grove observed of a scaling group; ``selector`` backs its scale subresource."""

    available_replicas: Count
    """Replicas whose cliques all have their minimum of ready pods."""
    scheduled_replicas: Count
    """Replicas whose cliques all have their minimum of pods scheduled."""
    updated_replicas: Count
    """Replicas at the current PodCliqueSet spec."""
    replicas: int | None = None
    """Replicas observed."""
    observed_generation: int | None = None
    """The `metadata.generation` Grove last acted on."""
    conditions: list[Condition] | None = None
    """The group's conditions, such as `MinAvailableBreached`."""
    current_pod_clique_set_generation_hash: str | None = None
    """The PodCliqueSet spec hash the group fully runs."""
    last_errors: list[LastError] | None = None
    """The errors Grove met when it last reconciled the group."""
    selector: str | None = None
    """The label selector of the group's pods, which the scale subresource reports."""
    update_progress: PodCliqueScalingGroupUpdateProgress | None = None
    """The progress of the latest update."""


class PodCliqueScalingGroup(
    Object[PodCliqueScalingGroupSpec, PodCliqueScalingGroupStatus],
    frozen=True,
    tag_field="kind",
    tag=PCSG_KIND,
):
    """Cliques of one PodCliqueSet replica that Grove scales together."""
