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
    order: list[str] | None = None


class Restart(Model, frozen=True):
    """A graph restart request: a new ``id`` asks for one more restart."""

    id: str
    strategy: RestartStrategy | None = None


class TopologyConstraint(Model, frozen=True):
    """Deployment-level topology-aware scheduling (Grove)."""

    cluster_topology_name: Annotated[str, msgspec.Meta(min_length=1)]
    pack_domain: DomainName | None = None


class KvTransferPolicy(Model, frozen=True):
    """Topology-aware KV routing between prefill and decode workers."""

    domain: DomainName
    label_key: Annotated[str, msgspec.Meta(pattern=LABEL_KEY_PATTERN)] | None = None
    cluster_topology_name: str | None = None
    enforcement: (
        Annotated[Literal["required", "preferred"], msgspec.Meta(extra_json_schema={"default": "required"})]
        | None
    ) = None
    preferred_weight: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None


class GraphExperimental(Model, frozen=True):
    """Experimental graph features."""

    kv_transfer_policy: KvTransferPolicy | None = None


class DGDSpec(Model, frozen=True):
    """The desired graph (upstream ``DynamoGraphDeploymentSpec``)."""

    components: Annotated[list[ComponentSpec], msgspec.Meta(max_length=MAX_COMPONENTS)] | None = None
    env: list[JSONObject] | None = None
    backend_framework: BackendFramework | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    restart: Restart | None = None
    topology_constraint: TopologyConstraint | None = None
    provider_override: ProviderOverride | None = None
    experimental: GraphExperimental | None = None


ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]


class ComponentReplicaStatus(Model, frozen=True):
    """Replica counts of one component, read from its backing resources."""

    component_kind: ComponentKind
    replicas: NonNegative
    updated_replicas: NonNegative
    component_names: list[str] | None = None
    runtime_namespace: str | None = None
    ready_replicas: NonNegative | None = None
    available_replicas: NonNegative | None = None
    scheduled_replicas: NonNegative | None = None


RestartPhase = Literal["Pending", "Restarting", "Completed", "Failed", "Superseded"]


class RestartStatus(Model, frozen=True):
    """Progress of the latest restart request."""

    observed_id: str | None = msgspec.field(default=None, name="observedID")
    phase: RestartPhase | None = None
    in_progress: list[str] | None = None


class ComponentCheckpointStatus(Model, frozen=True):
    """The checkpoint resolved for one component."""

    checkpoint_name: str | None = None
    checkpoint_id: str | None = msgspec.field(default=None, name="checkpointID")
    identity_hash: str | None = None
    ready: bool | None = None


RollingUpdatePhase = Literal["Pending", "InProgress", "Completed", "Failed", ""]


class RollingUpdateStatus(Model, frozen=True):
    """The managed worker rollout (Component pathway)."""

    phase: RollingUpdatePhase | None = None
    start_time: str | None = None
    end_time: str | None = None
    updated_components: list[str] | None = None


class PlacementStatus(Model, frozen=True):
    """Placement quality (schema only; upstream never writes it)."""

    score: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    state: Literal["Reported", "Partial", "Unsupported", "Unknown"] | None = None


DGDState = Literal["initializing", "pending", "successful", "failed"]
DGD_STATES: tuple[DGDState, ...] = ("initializing", "pending", "successful", "failed")
PLURAL = "dynamographdeployments"


class DGDStatus(Model, frozen=True):
    """What the operator observed; written only by the DGD actor, once per reconcile."""

    state: Annotated[DGDState, msgspec.Meta(extra_json_schema={"default": "initializing"})]
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    components: dict[str, ComponentReplicaStatus] | None = None
    restart: RestartStatus | None = None
    checkpoints: dict[str, ComponentCheckpointStatus] | None = None
    rolling_update: RollingUpdateStatus | None = None
    placement: PlacementStatus | None = None


class DynamoGraphDeployment(Object[DGDSpec, DGDStatus], frozen=True, tag_field="kind", tag=KIND):
    """A graph of inference components, the operator's primary object."""
