"""Grove's ``grove.io/v1alpha1`` workload kinds: PodCliqueSet, PodClique and PodCliqueScalingGroup.

The operator renders the PodCliqueSet (domain spec §9.3) and reads all three to scale (§9.4) and to
observe readiness (§9.6). Every field their CRDs declare is modelled down to the pod spec, which
stays raw JSON, as do two subtrees the operator never reads or writes: the HPA metric specs of an
autoscaling config and the DRA ``ResourceClaimTemplateSpec`` of a resource claim template.

Fields the Grove CRDs default carry that default as a schema hint (``default`` in the generated
CRD); in Python they stay ``None`` when absent, so a decoded object encodes back unchanged.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import JSONObject, Model
from dgd.messages.meta import Condition, Object

GROUP = "grove.io"
API_VERSION = "grove.io/v1alpha1"

PCS_KIND = "PodCliqueSet"
PCS_PLURAL = "podcliquesets"
PCLQ_KIND = "PodClique"
PCLQ_PLURAL = "podcliques"
PCSG_KIND = "PodCliqueScalingGroup"
PCSG_PLURAL = "podcliquescalinggroups"

TOPOLOGY_DOMAIN_PATTERN = r"^[a-z][a-z0-9-]*$"

#: A topology level name (``zone``, ``rack``, ``host``…) of a ClusterTopologyBinding.
TopologyDomain = Annotated[str, msgspec.Meta(min_length=1, max_length=63, pattern=TOPOLOGY_DOMAIN_PATTERN)]

#: A count the Grove CRD defaults to 0 (status counters).
Count = Annotated[int, msgspec.Meta(extra_json_schema={"default": 0})]

#: A count the Grove CRD defaults to 1 (scaling-group replicas and minAvailable).
CountDefaultOne = Annotated[int, msgspec.Meta(extra_json_schema={"default": 1})]

CliqueStartupType = Literal[
    "CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"
]
UpdateStrategyType = Literal["RollingRecreate", "OnDelete"]
SharingScope = Literal["AllReplicas", "PerReplica"]
PodGangPhase = Literal["Pending", "Starting", "Running", "Failed", "Succeeded"]


# Placement: where the pods of one replica must (or should) land together.


class TopologyPack(Model, frozen=True):
    """Pack each replica within one domain: ``required`` is a hard constraint, ``preferred`` best effort."""

    required: TopologyDomain | None = None
    preferred: TopologyDomain | None = None


class TopologyConstraint(Model, frozen=True):
    """Topology placement of a PodCliqueSet, a clique or a scaling group.

    ``pack_domain`` is Grove's legacy form of ``pack.required``; it survives only on existing objects.
    """

    topology_name: str | None = None
    pack: TopologyPack | None = None
    pack_domain: TopologyDomain | None = None


# Resource sharing: ResourceClaims shared by the pods of a clique, a scaling group or the whole set.


class ResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of one clique, made from a named template."""

    name: str
    scope: SharingScope
    namespace: str | None = None


class ScalingGroupSharingFilter(Model, frozen=True):
    """Limits a scaling group's shared claims to some of its cliques."""

    child_clique_names: list[str] | None = None


class ScalingGroupResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of one scaling group."""

    name: str
    scope: SharingScope
    namespace: str | None = None
    filter: ScalingGroupSharingFilter | None = None


class SetSharingFilter(Model, frozen=True):
    """Limits a PodCliqueSet's shared claims to some of its cliques and scaling groups."""

    child_clique_names: list[str] | None = None
    child_scaling_group_names: list[str] | None = None


class SetResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of the whole PodCliqueSet."""

    name: str
    scope: SharingScope
    namespace: str | None = None
    filter: SetSharingFilter | None = None


class ResourceClaimTemplateConfig(Model, frozen=True):
    """A named DRA ``ResourceClaimTemplateSpec`` (raw JSON) that resource sharing refers to."""

    name: str
    template_spec: JSONObject


# Cliques and scaling groups: the units a PodCliqueSet is made of.


class AutoScalingConfig(Model, frozen=True):
    """The HorizontalPodAutoscaler Grove creates for a clique or a scaling group."""

    max_replicas: int
    min_replicas: int | None = None
    # HPA MetricSpecs, handed to the HPA as they are.
    metrics: list[JSONObject] | None = None


class PodCliqueSpec(Model, frozen=True):
    """One clique: ``replicas`` pods of one role, all from ``pod_spec`` (raw JSON)."""

    role_name: str
    replicas: int
    pod_spec: JSONObject
    min_available: int | None = None
    starts_after: list[str] | None = None
    auto_scaling_config: AutoScalingConfig | None = None


class PodCliqueTemplateSpec(Model, frozen=True):
    """A clique of a PodCliqueSet; Grove creates one PodClique from it per set replica."""

    name: str
    spec: PodCliqueSpec
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    topology_constraint: TopologyConstraint | None = None
    resource_sharing: list[ResourceSharing] | None = None


class PodCliqueScalingGroupConfig(Model, frozen=True):
    """Cliques that scale together as one unit (a multinode component: leader and workers)."""

    name: str
    clique_names: list[str]
    replicas: CountDefaultOne | None = None
    min_available: CountDefaultOne | None = None
    scale_config: AutoScalingConfig | None = None
    topology_constraint: TopologyConstraint | None = None
    resource_sharing: list[ScalingGroupResourceSharing] | None = None
    annotations: dict[str, str] | None = None


class HeadlessServiceConfig(Model, frozen=True):
    """The headless Service Grove creates for a PodCliqueSet replica."""

    publish_not_ready_addresses: Annotated[bool, msgspec.Meta(extra_json_schema={"default": True})]


class PodCliqueSetTemplateSpec(Model, frozen=True):
    """What every replica of a PodCliqueSet is made of."""

    cliques: list[PodCliqueTemplateSpec]
    clique_startup_type: (
        Annotated[CliqueStartupType, msgspec.Meta(extra_json_schema={"default": "CliqueStartupTypeAnyOrder"})]
        | None
    ) = None
    priority_class_name: str | None = None
    headless_service_config: HeadlessServiceConfig | None = None
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] | None = None
    # A Go duration text such as ``15m0s``.
    termination_delay: str | None = None
    topology_constraint: TopologyConstraint | None = None
    resource_claim_templates: list[ResourceClaimTemplateConfig] | None = None
    resource_sharing: list[SetResourceSharing] | None = None


class UpdateStrategy(Model, frozen=True):
    """How Grove replaces pods when the template changes."""

    type: (
        Annotated[UpdateStrategyType, msgspec.Meta(extra_json_schema={"default": "RollingRecreate"})] | None
    ) = None


class PodCliqueSetSpec(Model, frozen=True):
    """The desired PodCliqueSet: ``replicas`` copies of ``template``."""

    template: PodCliqueSetTemplateSpec
    replicas: Count | None = None
    update_strategy: UpdateStrategy | None = None


# Status shared by the three kinds.


class LastError(Model, frozen=True):
    """An error Grove's controller met while reconciling."""

    code: str
    description: str
    observed_at: str


class PodGangStatus(Model, frozen=True):
    """The scheduling state of one PodGang (the gang of one set replica)."""

    name: str
    phase: PodGangPhase
    conditions: list[Condition] | None = None


class ReplicaUpdateProgress(Model, frozen=True):
    """Update progress of one PodCliqueSet replica."""

    replica_index: int
    update_started_at: str | None = None
    update_ended_at: str | None = None


class PodCliqueSetUpdateProgress(Model, frozen=True):
    """Progress of a PodCliqueSet update, in cliques and scaling groups updated."""

    update_started_at: str | None = None
    update_ended_at: str | None = None
    currently_updating: list[ReplicaUpdateProgress] | None = None
    total_pod_cliques_count: Count | None = None
    updated_pod_cliques_count: Count | None = None
    total_pod_clique_scaling_groups_count: Count | None = None
    updated_pod_clique_scaling_groups_count: Count | None = None


class PodCliqueSetStatus(Model, frozen=True):
    """What Grove observed of a PodCliqueSet; ``hpa_pod_selector`` backs its scale subresource."""

    available_replicas: Count
    updated_replicas: Count
    replicas: int | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    current_generation_hash: str | None = None
    hpa_pod_selector: str | None = None
    last_errors: list[LastError] | None = None
    pod_gang_statuses: list[PodGangStatus] | None = None
    update_progress: PodCliqueSetUpdateProgress | None = None


class PodCliqueSet(Object[PodCliqueSetSpec, PodCliqueSetStatus], frozen=True, tag_field="kind", tag=PCS_KIND):
    """The Grove pathway's root object: one per DGD, rendered by the operator."""


# PodClique: created by Grove from a clique template; the operator scales and observes it.


class PodsSelectedToUpdate(Model, frozen=True):
    """Ready pods picked for replacement: the one being replaced and those already done."""

    current: str
    completed: list[str] | None = None


class PodCliqueUpdateProgress(Model, frozen=True):
    """Progress of a PodClique update toward a new template hash."""

    pod_clique_set_generation_hash: str
    pod_template_hash: str
    update_started_at: str | None = None
    update_ended_at: str | None = None
    ready_pods_selected_to_update: PodsSelectedToUpdate | None = None


class PodCliqueStatus(Model, frozen=True):
    """What Grove observed of a PodClique's pods; ``hpa_pod_selector`` backs its scale subresource."""

    ready_replicas: Count
    schedule_gated_replicas: Count
    scheduled_replicas: Count
    updated_replicas: Count
    replicas: int | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    current_pod_clique_set_generation_hash: str | None = None
    current_pod_template_hash: str | None = None
    hpa_pod_selector: str | None = None
    last_errors: list[LastError] | None = None
    update_progress: PodCliqueUpdateProgress | None = None


class PodClique(Object[PodCliqueSpec, PodCliqueStatus], frozen=True, tag_field="kind", tag=PCLQ_KIND):
    """A set of pods of one role, owned by a PodCliqueSet (or one of its scaling groups)."""


# PodCliqueScalingGroup: created by Grove from a scaling-group config; scaled and observed.


class ReplicaIndicesSelectedToUpdate(Model, frozen=True):
    """Ready scaling-group replicas picked for replacement, by index."""

    current: int
    completed: list[int] | None = None


class PodCliqueScalingGroupUpdateProgress(Model, frozen=True):
    """Progress of a scaling-group update, in cliques updated."""

    pod_clique_set_generation_hash: str
    update_started_at: str
    update_ended_at: str | None = None
    ready_replica_indices_selected_to_update: ReplicaIndicesSelectedToUpdate | None = None
    total_pod_cliques_count: Count | None = None
    updated_pod_cliques_count: Count | None = None


class PodCliqueScalingGroupSpec(Model, frozen=True):
    """The desired scaling group: ``replicas`` copies of the named cliques."""

    clique_names: list[str]
    replicas: CountDefaultOne
    min_available: CountDefaultOne | None = None


class PodCliqueScalingGroupStatus(Model, frozen=True):
    """What Grove observed of a scaling group; ``selector`` backs its scale subresource."""

    available_replicas: Count
    scheduled_replicas: Count
    updated_replicas: Count
    replicas: int | None = None
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    current_pod_clique_set_generation_hash: str | None = None
    last_errors: list[LastError] | None = None
    selector: str | None = None
    update_progress: PodCliqueScalingGroupUpdateProgress | None = None


class PodCliqueScalingGroup(
    Object[PodCliqueScalingGroupSpec, PodCliqueScalingGroupStatus],
    frozen=True,
    tag_field="kind",
    tag=PCSG_KIND,
):
    """Cliques of one PodCliqueSet replica that Grove scales together."""
