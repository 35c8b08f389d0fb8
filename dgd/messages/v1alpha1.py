"""The v1alpha1 DynamoGraphDeployment: the services-map form, still served and converted to v1beta1.

This module holds the document: the graph-level spec (PVCs, restart, topology, KV routing), the
status as the v1alpha1 view shows it, and the root kind. A service's spec (``ServiceSpec``, shared
with the v1alpha1 DCD) lives in ``dgd.messages.service_v1alpha1``, its opt-in features in
``dgd.messages.service_features_v1alpha1``.

Field names are exactly those of the v1alpha1 CRD schema; enums, patterns and minimums carry the
CRD's constraints, so a JSON schema generated from these Structs matches the CRD. Pod-level values
(``extraPodSpec``, probes, env vars, resource claims, autoscaling behavior/metrics, pod templates)
stay raw JSON. Conversion to v1beta1 lives in ``dgd.domain.conversion.dgd``; these types are the edge
model for reading and validating v1alpha1 documents.

Field docstrings become the descriptions of the v1alpha1 CRD schema. They name the v1beta1 field a
value becomes where the name or shape differs, and say when there is none (such values are kept in
the ``nvidia.com/dgd-spec`` annotation of the stored v1beta1 object).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import JSONObject, Model, Quantity, schema_default
from dgd.messages.meta import Condition, ObjectMeta
from dgd.messages.service_v1alpha1 import NonNegativeInt32, ProviderOverride, ServiceSpec, TopologyDomain

#: A node label key, optionally prefixed by a DNS subdomain.
LABEL_KEY_PATTERN = (
    r"^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$"
)

DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]

BackendFramework = Literal["sglang", "vllm", "trtllm"]
DGDState = Literal["initializing", "pending", "successful", "failed"]
ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]


class Pvc(Model, frozen=True):
    """A PVC the DGD creates or references (v1alpha1 only; kept in the preservation payload)."""

    name: str
    """The PersistentVolumeClaim's name, in the graph's namespace; required."""
    create: bool | None = None
    """Create the claim, owned by the graph, when it does not exist yet; otherwise it must already exist."""
    storage_class: str | None = None
    """The StorageClass of a claim the operator creates; unset: the cluster's default."""
    size: Quantity | None = None
    """The storage a created claim requests; unset: 1Gi."""
    volume_access_mode: str | None = None
    """The access mode of a created claim, such as `ReadWriteMany`; unset: `ReadWriteOnce`."""


class RestartStrategy(Model, frozen=True):
    """How a graph restart proceeds: one service at a time (in ``order``) or all at once."""

    type: Annotated[Literal["Sequential", "Parallel"], schema_default("Sequential")] | None = None
    """`Sequential` (the default) restarts one service at a time, in `order`; `Parallel` restarts every
    service at once."""
    order: list[str] | None = None
    """Sequential only: the order in which services restart, naming every service exactly once. Unset:
    alphabetical order."""


class Restart(Model, frozen=True):
    """A graph restart request; ``id`` changes to request a new restart."""

    id: Annotated[str, msgspec.Meta(min_length=1)]
    """The restart request's identity: setting a new value asks for one more restart. Pods carry it in the
    `nvidia.com/restartAt` annotation, so changing it rolls them."""
    strategy: RestartStrategy | None = None
    """How the restart proceeds; unset: one service at a time, in alphabetical order."""


class SpecTopologyConstraint(Model, frozen=True):
    """Deployment-level topology-aware scheduling; ``topologyProfile`` is v1beta1 ``clusterTopologyName``."""

    topology_profile: Annotated[str, msgspec.Meta(min_length=1)]
    """The Grove ClusterTopologyBinding whose topology levels the graph's and its services' domains name.
    Becomes `clusterTopologyName` in v1beta1."""
    pack_domain: TopologyDomain | None = None
    """The topology level (such as `zone` or `rack`) that each replica of the whole graph must fit within."""


class KvTransferPolicy(Model, frozen=True):
    """Topology-aware KV routing between prefill and decode workers."""

    domain: TopologyDomain
    """The topology level (such as `rack`) within which KV-cache transfers between workers should stay."""
    cluster_topology_name: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    """The Grove ClusterTopologyBinding that says which node label `domain` means. Exactly one of `labelKey`
    and `clusterTopologyName` is set."""
    enforcement: Annotated[Literal["required", "preferred"], schema_default("required")] | None = None
    """`required` (the default): transfers never leave the domain; `preferred`: they stay within it when they
    can."""
    label_key: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)] | None
    ) = None
    """The node label whose value names a worker's domain. Exactly one of `labelKey` and `clusterTopologyName`
    is set."""
    preferred_weight: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    """With `enforcement: preferred` only, and required then: how strongly to prefer the same domain, from 0
    to 1."""


class DynamoGraphDeploymentExperimentalSpec(Model, frozen=True):
    """Experimental graph features."""

    kv_transfer_policy: KvTransferPolicy | None = None
    """Keeps KV-cache transfers between prefill and decode workers within a topology domain."""


class DynamoGraphDeploymentSpec(Model, frozen=True):
    """The v1alpha1 DGD spec, in Go field order; ``services`` is keyed by component name."""

    provider_override: ProviderOverride | None = None
    """A fragment merged into the PodCliqueSet the operator renders; it may only set
    `spec.template.topologyConstraint`."""
    annotations: dict[str, str] | None = None
    """Annotations for the graph's PodCliqueSet or component deployments and their pod templates; a
    service's own pod annotations win."""
    labels: dict[str, str] | None = None
    """Labels for the graph's PodCliqueSet or component deployments and their pod templates; a service's own
    pod labels win."""
    priority_class_name: str | None = None
    """The PriorityClass of the graph's pods. Grove pathway only."""
    pvcs: Annotated[list[Pvc], msgspec.Meta(max_length=100)] | None = None
    """PersistentVolumeClaims the graph uses (at most 100), created when asked to. No v1beta1 field: kept in
    the `nvidia.com/dgd-spec` annotation and still honored."""
    services: Annotated[dict[str, ServiceSpec | None], msgspec.Meta(max_length=25)] | None = None
    """The graph's services (at most 25), keyed by name. They become the v1beta1 `components` list, each
    named by its key."""
    envs: list[JSONObject] | None = None
    """Environment variables (Kubernetes EnvVar) put before every service's main container env; a service's
    own variable of the same name wins. Becomes v1beta1 `env`."""
    backend_framework: BackendFramework | None = None
    """The inference backend: `sglang`, `vllm` or `trtllm`. Unset: detected from the workers' commands."""
    restart: Restart | None = None
    """A request to restart the graph's pods without changing their spec. Must be unset when the graph is
    created."""
    topology_constraint: SpecTopologyConstraint | None = None
    """Topology-aware scheduling for the whole graph (Grove pathway only)."""
    experimental: DynamoGraphDeploymentExperimentalSpec | None = None
    """Experimental graph features; their shape may change between releases."""


class ServiceReplicaStatus(Model, frozen=True):
    """Replica counts of one service; ``componentName`` is the last of ``componentNames``."""

    component_kind: ComponentKind
    """The kind of the resource that runs the service: `PodClique`, `PodCliqueScalingGroup`, `Deployment` or
    `LeaderWorkerSet`."""
    component_name: str
    """The name of the resource that runs the service: the last of `componentNames`. No v1beta1 field."""
    replicas: NonNegativeInt32
    """Replicas that are not terminated."""
    updated_replicas: NonNegativeInt32
    """Replicas at the desired revision; during a rolling update only the new generation counts."""
    component_names: list[str] | None = None
    """The names of the resources that run the service; during a rolling update both the old and the new
    ones, sorted."""
    runtime_namespace: str | None = None
    """The Dynamo runtime namespace the service registers in; during a rolling update workers keep the old
    one until the switch."""
    ready_replicas: NonNegativeInt32 | None = None
    """Ready replicas, where the backing resource reports them (PodClique, Deployment, LeaderWorkerSet)."""
    available_replicas: NonNegativeInt32 | None = None
    """Available replicas, where the backing resource reports them (Deployment, PodCliqueScalingGroup)."""
    scheduled_replicas: NonNegativeInt32 | None = None
    """Scheduled replicas (Grove only), once the backing resource has observed its current spec; absent means
    not reported, not zero."""


class ServiceCheckpointStatus(Model, frozen=True):
    """The checkpoint resolved for one service."""

    checkpoint_name: str | None = None
    """The name of the DynamoCheckpoint the service uses."""
    checkpoint_id: str | None = msgspec.field(default=None, name="checkpointID")
    """The identity of the checkpoint's artifact."""
    identity_hash: str | None = None
    """Deprecated: the same value as `checkpointID`."""
    ready: bool | None = None
    """Whether the checkpoint is ready to restore from."""


class RestartStatus(Model, frozen=True):
    """Progress of the latest restart request."""

    observed_id: str | None = msgspec.field(default=None, name="observedID")
    """The `spec.restart.id` this status is about."""
    phase: str | None = None
    """Where that restart is: `Restarting`, `Completed`, or `Superseded` (a rolling update took its place);
    `Pending` and `Failed` are reserved."""
    in_progress: list[str] | None = None
    """The services still restarting."""


class RollingUpdateStatus(Model, frozen=True):
    """The managed worker rollout (Component pathway)."""

    phase: Literal["Pending", "InProgress", "Completed", "Failed", ""] | None = None
    """Where the rollout is: `Pending`, `InProgress` or `Completed` (`Failed` is reserved; empty: none
    started)."""
    start_time: DateTime | None = None
    """When the rollout started (RFC 3339)."""
    end_time: DateTime | None = None
    """When the rollout completed (RFC 3339)."""
    updated_services: list[str] | None = None
    """The worker services that run the new generation and no longer run the old one, sorted. Becomes
    v1beta1 `updatedComponents`."""


class PlacementStatus(Model, frozen=True):
    """Placement quality (schema only; upstream never writes it)."""

    score: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    """How well the pods are placed, from 0 to 1. Reserved: the operator does not write it."""
    state: Literal["Reported", "Partial", "Unsupported", "Unknown"] | None = None
    """Whether a placement score is `Reported`, `Partial`, `Unsupported` or `Unknown`. Reserved: the operator
    does not write it."""


class DynamoGraphDeploymentStatus(Model, frozen=True):
    """What the operator observed, as the v1alpha1 view shows it."""

    state: Annotated[DGDState, schema_default("initializing")]
    """The graph's lifecycle in one word: `initializing`, `pending` (not ready yet), `successful` (ready) or
    `failed`."""
    observed_generation: int | None = None
    """The `metadata.generation` the operator last reconciled without error."""
    conditions: list[Condition] | None = None
    """The graph's conditions: `Ready`, and `TopologyLevelsAvailable` when topology constraints are used."""
    placement: PlacementStatus | None = None
    """Placement quality. Reserved: the operator does not write it."""
    services: dict[str, ServiceReplicaStatus] | None = None
    """Replica counts per service name, as its backing resources report them. Becomes v1beta1
    `components`."""
    restart: RestartStatus | None = None
    """The progress of the latest `spec.restart` request."""
    checkpoints: dict[str, ServiceCheckpointStatus] | None = None
    """The checkpoint each checkpointing service uses, by service name."""
    rolling_update: RollingUpdateStatus | None = None
    """The rollout of a new worker generation (component-deployment pathway only)."""


class DynamoGraphDeploymentV1Alpha1(Model, frozen=True, tag_field="kind", tag="DynamoGraphDeployment"):
    """A whole v1alpha1 DGD document (``apiVersion: nvidia.com/v1alpha1``)."""

    api_version: str
    """The group and version the object is written in, as `<group>/<version>`."""
    metadata: ObjectMeta
    """Standard object metadata: name, namespace, labels, annotations, owner references, finalizers."""
    spec: DynamoGraphDeploymentSpec | None = None
    """The desired state of the object."""
    status: DynamoGraphDeploymentStatus | None = None
    """The observed state, written by the object's controller through the status subresource."""
