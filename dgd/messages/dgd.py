"""The DynamoGraphDeployment, ``nvidia.com/v1beta1``: spec and the full status (domain spec §2–§3)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import JSONObject, Model
from dgd.messages.component import BackendFramework, ComponentSpec, DomainName, ProviderOverride
from dgd.messages.meta import Condition, Object

GROUP = "nvidia.com"
API_VERSION = "nvidia.com/v1beta1"
API_VERSION_V1ALPHA1 = "nvidia.com/v1alpha1"
KIND = "DynamoGraphDeployment"
MAX_COMPONENTS = 25

LABEL_KEY_PATTERN = (
    r"^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$"
)


class RestartStrategy(Model, frozen=True):
    """How a graph restart proceeds: one component at a time (in ``order``) or all at once."""

    type: (
        Annotated[
            Literal["Sequential", "Parallel"], msgspec.Meta(extra_json_schema={"default": "Sequential"})
        ]
        | None
    ) = None
    """`Sequential` (the default) restarts one component at a time, in `order`; `Parallel` restarts every
    component at once."""
    order: list[str] | None = None
    """Sequential only: the order in which components restart, naming every component exactly once. Unset:
    alphabetical order."""


class Restart(Model, frozen=True):
    """A graph restart request: a new ``id`` asks for one more restart."""

    id: str
    """The restart request's identity: setting a new value asks for one more restart. Pods carry it in the
    `nvidia.com/restartAt` annotation, so changing it rolls them."""
    strategy: RestartStrategy | None = None
    """How the restart proceeds; unset: one component at a time, in alphabetical order."""


class TopologyConstraint(Model, frozen=True):
    """Deployment-level topology-aware scheduling (Grove)."""

    cluster_topology_name: Annotated[str, msgspec.Meta(min_length=1)]
    """The Grove ClusterTopologyBinding whose topology levels the graph's and its components' domains name."""
    pack_domain: DomainName | None = None
    """The topology level (such as `zone` or `rack`) that each replica of the whole graph must fit within."""


class KvTransferPolicy(Model, frozen=True):
    """Topology-aware KV routing between prefill and decode workers."""

    domain: DomainName
    """The topology level (such as `rack`) within which KV-cache transfers between workers should stay."""
    label_key: Annotated[str, msgspec.Meta(pattern=LABEL_KEY_PATTERN)] | None = None
    """The node label whose value names a worker's domain. Exactly one of `labelKey` and `clusterTopologyName`
    is set."""
    cluster_topology_name: str | None = None
    """The Grove ClusterTopologyBinding that says which node label `domain` means. Exactly one of `labelKey`
    and `clusterTopologyName` is set."""
    enforcement: (
        Annotated[Literal["required", "preferred"], msgspec.Meta(extra_json_schema={"default": "required"})]
        | None
    ) = None
    """`required` (the default): transfers never leave the domain; `preferred`: they stay within it when they
    can."""
    preferred_weight: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    """With `enforcement: preferred` only, and required then: how strongly to prefer the same domain, from 0
    to 1."""


class GraphExperimental(Model, frozen=True):
    """Experimental graph features."""

    kv_transfer_policy: KvTransferPolicy | None = None
    """Keeps KV-cache transfers between prefill and decode workers within a topology domain."""


class DGDSpec(Model, frozen=True):
    """The desired graph (upstream ``DynamoGraphDeploymentSpec``)."""

    components: Annotated[list[ComponentSpec], msgspec.Meta(max_length=MAX_COMPONENTS)] | None = None
    """The graph's components (at most 25), each identified by its unique `name`. Components cannot be added
    or removed after the graph is created."""
    env: list[JSONObject] | None = None
    """Environment variables (Kubernetes EnvVar) put before every component's `main` container env; a
    component's own variable of the same name wins."""
    backend_framework: BackendFramework | None = None
    """The inference backend: `sglang`, `vllm` or `trtllm`. Unset: detected from the workers' commands."""
    annotations: dict[str, str] | None = None
    """Annotations for the graph's PodCliqueSet or component deployments and their pod templates; a
    component's own pod template annotations win."""
    labels: dict[str, str] | None = None
    """Labels for the graph's PodCliqueSet or component deployments and their pod templates; a component's own
    pod template labels win."""
    priority_class_name: str | None = None
    """The PriorityClass of the graph's pods. Grove pathway only."""
    restart: Restart | None = None
    """A request to restart the graph's pods without changing their spec. Must be unset when the graph is
    created."""
    topology_constraint: TopologyConstraint | None = None
    """Topology-aware scheduling for the whole graph (Grove pathway only)."""
    provider_override: ProviderOverride | None = None
    """A fragment merged into the PodCliqueSet the operator renders; it may only set
    `spec.template.topologyConstraint`."""
    experimental: GraphExperimental | None = None
    """Experimental graph features; their shape may change between releases."""


ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class ComponentReplicaStatus(Model, frozen=True):
    """Replica counts of one component, read from its backing resources."""

    component_kind: ComponentKind
    """The kind of the resource that runs the component: `PodClique`, `PodCliqueScalingGroup`, `Deployment` or
    `LeaderWorkerSet`."""
    replicas: NonNegative
    """Replicas that are not terminated."""
    updated_replicas: NonNegative
    """Replicas at the desired revision; during a rolling update only the new generation counts."""
    component_names: list[str] | None = None
    """The names of the resources that run the component; during a rolling update both the old and the new
    ones, sorted."""
    runtime_namespace: str | None = None
    """The Dynamo runtime namespace the component registers in; during a rolling update workers keep the old
    one until the switch."""
    ready_replicas: NonNegative | None = None
    """Ready replicas, where the backing resource reports them (PodClique, Deployment, LeaderWorkerSet)."""
    available_replicas: NonNegative | None = None
    """Available replicas, where the backing resource reports them (Deployment, PodCliqueScalingGroup)."""
    scheduled_replicas: NonNegative | None = None
    """Scheduled replicas (Grove only), once the backing resource has observed its current spec; absent means
    not reported, not zero."""


RestartPhase = Literal["Pending", "Restarting", "Completed", "Failed", "Superseded"]


class RestartStatus(Model, frozen=True):
    """Progress of the latest restart request."""

    observed_id: str | None = msgspec.field(default=None, name="observedID")
    """The `spec.restart.id` this status is about."""
    phase: RestartPhase | None = None
    """Where that restart is: `Restarting`, `Completed`, or `Superseded` (a rolling update took its place);
    `Pending` and `Failed` are reserved."""
    in_progress: list[str] | None = None
    """The components still restarting."""


class ComponentCheckpointStatus(Model, frozen=True):
    """The checkpoint resolved for one component."""

    checkpoint_name: str | None = None
    """The name of the DynamoCheckpoint the component uses."""
    checkpoint_id: str | None = msgspec.field(default=None, name="checkpointID")
    """The identity of the checkpoint's artifact."""
    identity_hash: str | None = None
    """Deprecated: the same value as `checkpointID`."""
    ready: bool | None = None
    """Whether the checkpoint is ready to restore from."""


RollingUpdatePhase = Literal["Pending", "InProgress", "Completed", "Failed", ""]


class RollingUpdateStatus(Model, frozen=True):
    """The managed worker rollout (Component pathway)."""

    phase: RollingUpdatePhase | None = None
    """Where the rollout is: `Pending`, `InProgress` or `Completed` (`Failed` is reserved; empty: none
    started)."""
    start_time: str | None = None
    """When the rollout started (RFC 3339)."""
    end_time: str | None = None
    """When the rollout completed (RFC 3339)."""
    updated_components: list[str] | None = None
    """The worker components that run the new generation and no longer run the old one, sorted."""


class PlacementStatus(Model, frozen=True):
    """Placement quality (schema only; upstream never writes it)."""

    score: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    """How well the pods are placed, from 0 to 1. Reserved: the operator does not write it."""
    state: Literal["Reported", "Partial", "Unsupported", "Unknown"] | None = None
    """Whether a placement score is `Reported`, `Partial`, `Unsupported` or `Unknown`. Reserved: the operator
    does not write it."""


DGDState = Literal["initializing", "pending", "successful", "failed"]
DGD_STATES: tuple[DGDState, ...] = ("initializing", "pending", "successful", "failed")
PLURAL = "dynamographdeployments"


class DGDStatus(Model, frozen=True):
    """What the operator observed; written only by the DGD actor, once per reconcile."""

    state: Annotated[DGDState, msgspec.Meta(extra_json_schema={"default": "initializing"})]
    """The graph's lifecycle in one word: `initializing`, `pending` (not ready yet), `successful` (ready) or
    `failed`."""
    observed_generation: int | None = None
    """The `metadata.generation` the operator last reconciled without error."""
    conditions: list[Condition] | None = None
    """The graph's conditions: `Ready`, and `TopologyLevelsAvailable` when topology constraints are used."""
    components: dict[str, ComponentReplicaStatus] | None = None
    """Replica counts per component name, as its backing resources report them."""
    restart: RestartStatus | None = None
    """The progress of the latest `spec.restart` request."""
    checkpoints: dict[str, ComponentCheckpointStatus] | None = None
    """The checkpoint each checkpointing component uses, by component name."""
    rolling_update: RollingUpdateStatus | None = None
    """The rollout of a new worker generation (component-deployment pathway only)."""
    placement: PlacementStatus | None = None
    """Placement quality. Reserved: the operator does not write it."""


class DynamoGraphDeployment(Object[DGDSpec, DGDStatus], frozen=True, tag_field="kind", tag=KIND):
    """A graph of inference components, the operator's primary object."""
