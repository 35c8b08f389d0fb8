"""Grove's ``grove.io/v1alpha1`` API group and its PodCliqueSet, the object the operator renders.

The operator renders the PodCliqueSet (domain spec §9.3) and reads it, with the PodCliques and
PodCliqueScalingGroups Grove makes of it (``dgd.messages.grove_children``), to scale (§9.4) and to
observe readiness (§9.6). What the three kinds share lives here too: the group and version, the
status counters and ``LastError``, and the clique spec (``PodCliqueSpec``) a PodClique is made from.
Every field the PodCliqueSet CRD declares is modelled down to the pod spec, which stays raw JSON, as
do two subtrees the operator never reads or writes: the HPA metric specs of an autoscaling config
and the DRA ``ResourceClaimTemplateSpec`` of a resource claim template.

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
    """The topology level each replica must fit within; a replica that cannot is not scheduled."""
    preferred: TopologyDomain | None = None
    """The topology level each replica should fit within when the scheduler can manage it."""


class TopologyConstraint(Model, frozen=True):
    """Topology placement of a PodCliqueSet, a clique or a scaling group.

    ``pack_domain`` is Grove's legacy form of ``pack.required``; it survives only on existing objects.
    """

    topology_name: str | None = None
    """The ClusterTopologyBinding whose levels the domains name; unset: inherited from the enclosing object.
    """
    pack: TopologyPack | None = None
    """The topology levels each replica is packed into."""
    pack_domain: TopologyDomain | None = None
    """Legacy form of `pack.required`, kept on existing objects."""


# Resource sharing: ResourceClaims shared by the pods of a clique, a scaling group or the whole set.


class ResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of one clique, made from a named template."""

    name: str
    """The claim template to share: one of the PodCliqueSet's `resourceClaimTemplates`, or else a
    ResourceClaimTemplate object of that name."""
    scope: SharingScope
    """`AllReplicas`: one claim for the whole clique; `PerReplica`: one claim per clique replica."""
    namespace: str | None = None
    """The namespace of an external ResourceClaimTemplate; unset: the PodCliqueSet's namespace."""


class ScalingGroupSharingFilter(Model, frozen=True):
    """Limits a scaling group's shared claims to some of its cliques."""

    child_clique_names: list[str] | None = None
    """The cliques of the scaling group that get the claims."""


class ScalingGroupResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of one scaling group."""

    name: str
    """The claim template to share: one of the PodCliqueSet's `resourceClaimTemplates`, or else a
    ResourceClaimTemplate object of that name."""
    scope: SharingScope
    """`AllReplicas`: one claim for the whole scaling group; `PerReplica`: one claim per scaling-group
    replica."""
    namespace: str | None = None
    """The namespace of an external ResourceClaimTemplate; unset: the PodCliqueSet's namespace."""
    filter: ScalingGroupSharingFilter | None = None
    """Which of the group's cliques get the claims; unset: all of them."""


class SetSharingFilter(Model, frozen=True):
    """Limits a PodCliqueSet's shared claims to some of its cliques and scaling groups."""

    child_clique_names: list[str] | None = None
    """The cliques (outside scaling groups) that get the claims."""
    child_scaling_group_names: list[str] | None = None
    """The scaling groups that get the claims."""


class SetResourceSharing(Model, frozen=True):
    """A shared ResourceClaim of the whole PodCliqueSet."""

    name: str
    """The claim template to share: one of the PodCliqueSet's `resourceClaimTemplates`, or else a
    ResourceClaimTemplate object of that name."""
    scope: SharingScope
    """`AllReplicas`: one claim for the whole PodCliqueSet; `PerReplica`: one claim per PodCliqueSet replica.
    """
    namespace: str | None = None
    """The namespace of an external ResourceClaimTemplate; unset: the PodCliqueSet's namespace."""
    filter: SetSharingFilter | None = None
    """Which cliques and scaling groups get the claims; unset: all of them."""


class ResourceClaimTemplateConfig(Model, frozen=True):
    """A named DRA ``ResourceClaimTemplateSpec`` (raw JSON) that resource sharing refers to."""

    name: str
    """The template's name, unique in the PodCliqueSet, which `resourceSharing` entries refer to."""
    template_spec: JSONObject
    """The claims' template (a Kubernetes ResourceClaimTemplateSpec)."""


# Cliques and scaling groups: the units a PodCliqueSet is made of.


class AutoScalingConfig(Model, frozen=True):
    """The HorizontalPodAutoscaler Grove creates for a clique or a scaling group."""

    max_replicas: int
    """The most replicas the autoscaler may set; not fewer than `minReplicas`."""
    min_replicas: int | None = None
    """The fewest replicas the autoscaler may set."""
    metrics: list[JSONObject] | None = None
    """The metrics the autoscaler scales on (Kubernetes HPA MetricSpecs); the highest replica count any of
    them asks for wins."""


class PodCliqueSpec(Model, frozen=True):
    """One clique: ``replicas`` pods of one role, all from ``pod_spec`` (raw JSON)."""

    role_name: str
    """The role the clique's pods play, such as a component's leader or worker."""
    replicas: int
    """How many pods the clique runs."""
    pod_spec: JSONObject
    """The spec of every pod of the clique (a Kubernetes PodSpec)."""
    min_available: int | None = None
    """How many pods are scheduled together as a gang and must stay available; fewer for too long ends the
    gang. Unset: `replicas`."""
    starts_after: list[str] | None = None
    """Cliques whose pods must be ready before this clique's pods start (with `CliqueStartupTypeExplicit`)."""
    auto_scaling_config: AutoScalingConfig | None = None
    """Makes Grove create a HorizontalPodAutoscaler for the clique."""


class PodCliqueTemplateSpec(Model, frozen=True):
    """A clique of a PodCliqueSet; Grove creates one PodClique from it per set replica."""

    name: str
    """The clique's name, unique in the PodCliqueSet; it cannot change."""
    spec: PodCliqueSpec
    """The clique's pods: their role, count and pod spec."""
    labels: dict[str, str] | None = None
    """Labels of the PodCliques made from this template."""
    annotations: dict[str, str] | None = None
    """Annotations of the PodCliques made from this template."""
    topology_constraint: TopologyConstraint | None = None
    """Where the clique's pods are placed; no looser than the PodCliqueSet's constraint."""
    resource_sharing: list[ResourceSharing] | None = None
    """ResourceClaims shared by the clique's pods."""


class PodCliqueScalingGroupConfig(Model, frozen=True):
    """Cliques that scale together as one unit (a multinode component: leader and workers)."""

    name: str
    """The scaling group's name, unique in the PodCliqueSet."""
    clique_names: list[str]
    """The cliques that scale together in this group."""
    replicas: CountDefaultOne | None = None
    """How many copies of the group to start with; default 1."""
    min_available: CountDefaultOne | None = None
    """How many replicas of the group are scheduled together and must stay available; default 1."""
    scale_config: AutoScalingConfig | None = None
    """Makes Grove create a HorizontalPodAutoscaler for the scaling group."""
    topology_constraint: TopologyConstraint | None = None
    """Where the group's pods are placed; no looser than the PodCliqueSet's constraint."""
    resource_sharing: list[ScalingGroupResourceSharing] | None = None
    """ResourceClaims shared by the group's pods."""
    annotations: dict[str, str] | None = None
    """Annotations of the PodCliqueScalingGroups made from this config."""


class HeadlessServiceConfig(Model, frozen=True):
    """The headless Service Grove creates for a PodCliqueSet replica."""

    publish_not_ready_addresses: Annotated[bool, msgspec.Meta(extra_json_schema={"default": True})]
    """Whether the Service's DNS records list pods before they are ready; default true."""


class PodCliqueSetTemplateSpec(Model, frozen=True):
    """What every replica of a PodCliqueSet is made of."""

    cliques: list[PodCliqueTemplateSpec]
    """The cliques every replica is made of; at least one."""
    clique_startup_type: (
        Annotated[CliqueStartupType, msgspec.Meta(extra_json_schema={"default": "CliqueStartupTypeAnyOrder"})]
        | None
    ) = None
    """The order cliques start in: `CliqueStartupTypeAnyOrder` (the default), `CliqueStartupTypeInOrder` (as
    listed) or `CliqueStartupTypeExplicit` (by each clique's `startsAfter`)."""
    priority_class_name: str | None = None
    """The PriorityClass of every pod of the set."""
    headless_service_config: HeadlessServiceConfig | None = None
    """Makes Grove create a headless Service for each replica."""
    pod_clique_scaling_groups: list[PodCliqueScalingGroupConfig] | None = None
    """Groups of cliques that scale together."""
    termination_delay: str | None = None
    """How long a replica may stay below its `minAvailable` before Grove terminates it, as a duration such as
    `15m0s`."""
    topology_constraint: TopologyConstraint | None = None
    """Where each replica's pods are placed."""
    resource_claim_templates: list[ResourceClaimTemplateConfig] | None = None
    """Named ResourceClaim templates that `resourceSharing` entries refer to."""
    resource_sharing: list[SetResourceSharing] | None = None
    """ResourceClaims shared across the whole set."""


class UpdateStrategy(Model, frozen=True):
    """How Grove replaces pods when the template changes."""

    type: (
        Annotated[UpdateStrategyType, msgspec.Meta(extra_json_schema={"default": "RollingRecreate"})] | None
    ) = None
    """`RollingRecreate` (the default): Grove replaces outdated pods replica by replica; `OnDelete`: only when
    they are deleted."""


class PodCliqueSetSpec(Model, frozen=True):
    """The desired PodCliqueSet: ``replicas`` copies of ``template``."""

    template: PodCliqueSetTemplateSpec
    """What each replica of the set is made of."""
    replicas: Count | None = None
    """How many replicas of the template to run."""
    update_strategy: UpdateStrategy | None = None
    """How pods are replaced when the template changes."""


# Status shared by the three kinds.


class LastError(Model, frozen=True):
    """An error Grove's controller met while reconciling."""

    code: str
    """A code that identifies the kind of error."""
    description: str
    """The error in words."""
    observed_at: str
    """When the error was seen (RFC 3339)."""


class PodGangStatus(Model, frozen=True):
    """The scheduling state of one PodGang (the gang of one set replica)."""

    name: str
    """The PodGang's name."""
    phase: PodGangPhase
    """Where the gang is: `Pending`, `Starting`, `Running`, `Failed` or `Succeeded`."""
    conditions: list[Condition] | None = None
    """The gang's conditions."""


class ReplicaUpdateProgress(Model, frozen=True):
    """Update progress of one PodCliqueSet replica."""

    replica_index: int
    """The index of the replica being updated."""
    update_started_at: str | None = None
    """When its update started (RFC 3339)."""
    update_ended_at: str | None = None
    """When its update ended: every pod runs the new spec (RFC 3339)."""


class PodCliqueSetUpdateProgress(Model, frozen=True):
    """Progress of a PodCliqueSet update, in cliques and scaling groups updated."""

    update_started_at: str | None = None
    """When the update started (RFC 3339)."""
    update_ended_at: str | None = None
    """When Grove had nothing left to do for the update (RFC 3339); unset while it runs."""
    currently_updating: list[ReplicaUpdateProgress] | None = None
    """The replicas being updated now (not with the `OnDelete` strategy)."""
    total_pod_cliques_count: Count | None = None
    """How many PodCliques the current spec asks for."""
    updated_pod_cliques_count: Count | None = None
    """How many PodCliques are at the current spec."""
    total_pod_clique_scaling_groups_count: Count | None = None
    """How many PodCliqueScalingGroups the current spec asks for."""
    updated_pod_clique_scaling_groups_count: Count | None = None
    """How many PodCliqueScalingGroups are at the current spec."""


class PodCliqueSetStatus(Model, frozen=True):
    """What Grove observed of a PodCliqueSet; ``hpa_pod_selector`` backs its scale subresource."""

    available_replicas: Count
    """Replicas whose cliques and scaling groups all have their minimum available."""
    updated_replicas: Count
    """Replicas at the current spec."""
    replicas: int | None = None
    """Replicas created."""
    observed_generation: int | None = None
    """The `metadata.generation` Grove last acted on."""
    conditions: list[Condition] | None = None
    """The set's conditions."""
    current_generation_hash: str | None = None
    """A hash of the spec that is fully rolled out."""
    hpa_pod_selector: str | None = None
    """The label selector of the set's pods, which the scale subresource reports."""
    last_errors: list[LastError] | None = None
    """The errors Grove met when it last reconciled the set."""
    pod_gang_statuses: list[PodGangStatus] | None = None
    """The scheduling state of each PodGang of the set."""
    update_progress: PodCliqueSetUpdateProgress | None = None
    """The progress of the latest update."""


class PodCliqueSet(Object[PodCliqueSetSpec, PodCliqueSetStatus], frozen=True, tag_field="kind", tag=PCS_KIND):
    """The Grove pathway's root object: one per DGD, rendered by the operator."""
