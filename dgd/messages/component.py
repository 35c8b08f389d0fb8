"""The component spec shared by DGD components and DCDs (upstream ``DynamoComponentDeploymentSharedSpec``)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import DNS_LABEL_PATTERN, JSONObject, Model, PreservedObject, Quantity

ComponentType = Literal["frontend", "worker", "prefill", "decode", "planner", "epp"]
COMPONENT_TYPES: tuple[ComponentType, ...] = ("frontend", "worker", "prefill", "decode", "planner", "epp")
WORKER_TYPES: frozenset[str] = frozenset({"worker", "prefill", "decode"})

BackendFramework = Literal["sglang", "vllm", "trtllm"]
BACKEND_FRAMEWORKS: tuple[BackendFramework, ...] = ("sglang", "vllm", "trtllm")

COMPONENT_NAME_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$"
RUNTIME_VERSION_PATTERN = r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$"

ComponentName = Annotated[str, msgspec.Meta(min_length=1, max_length=63, pattern=COMPONENT_NAME_PATTERN)]
DomainName = Annotated[str, msgspec.Meta(pattern=DNS_LABEL_PATTERN)]
ContainerName = Annotated[str, msgspec.Meta(pattern=DNS_LABEL_PATTERN)]


class ProviderOverride(Model, frozen=True):
    """A sparse provider-native fragment merged into the rendered Grove object (topology only)."""

    api_version: str
    value: PreservedObject
    target: str | None = None


class RoleOverride(Model, frozen=True):
    """Provider overrides for one multinode role (leader or worker)."""

    provider_override: ProviderOverride | None = None


class Multinode(Model, frozen=True):
    """A component spread over several nodes; more than one node makes it multinode."""

    node_count: Annotated[int, msgspec.Meta(ge=2, extra_json_schema={"default": 2})] | None = None
    leader: RoleOverride | None = None
    worker: RoleOverride | None = None


class ModelRef(Model, frozen=True):
    """The model a component serves; gives a headless model Service."""

    name: str
    revision: str | None = None


class ScalingAdapter(Model, frozen=True):
    """A marker: its presence (even ``{}``) makes the operator create a scaling adapter (DGDSA)."""


class ConfigMapKeySelector(Model, frozen=True):
    """A key of a ConfigMap."""

    key: str
    name: str | None = None
    optional: bool | None = None


class EPPConfig(Model, frozen=True):
    """Endpoint picker configuration: exactly one of a ConfigMap reference or an inline config."""

    config_map_ref: ConfigMapKeySelector | None = None
    # An inline EndpointPickerConfig; upstream preserves unknown fields in it, so it stays raw JSON.
    config: PreservedObject | None = None


class CompilationCache(Model, frozen=True):
    """A PVC-backed compilation cache; the mount path defaults per backend."""

    pvc_name: str
    mount_path: str | None = None


class ComponentTopologyConstraint(Model, frozen=True):
    """Component-level topology-aware scheduling (Grove)."""

    pack_domain: DomainName


GMSMode = Literal["IntraPod", "InterPod"]
DefaultedGMSMode = Annotated[GMSMode, msgspec.Meta(extra_json_schema={"default": "IntraPod"})]


class GMSClientPod(Model, frozen=True):
    """A reserved inter-pod GPU memory service client pod."""

    name: ContainerName
    pod_template: JSONObject


class GPUMemoryService(Model, frozen=True):
    """GPU memory sharing through DRA."""

    mode: DefaultedGMSMode | None = None
    device_class_name: (
        Annotated[str, msgspec.Meta(extra_json_schema={"default": "gpu.nvidia.com"})] | None
    ) = None
    extra_client_containers: list[ContainerName] | None = None
    extra_client_pods: list[GMSClientPod] | None = None


class Failover(Model, frozen=True):
    """Active/passive failover of a worker engine."""

    mode: DefaultedGMSMode | None = None
    num_shadows: Annotated[int, msgspec.Meta(ge=1, le=1, extra_json_schema={"default": 1})] | None = None


class GroveOptions(Model, frozen=True):
    """Grove-only knobs of a component."""

    force_scaling_group: bool | None = None


class CheckpointIdentity(Model, frozen=True):
    """What makes two checkpoints interchangeable."""

    backend_framework: BackendFramework
    model: str
    dtype: str | None = None
    dynamo_version: str | None = None
    extra_parameters: dict[str, str] | None = None
    max_model_len: Annotated[int, msgspec.Meta(ge=1)] | None = None
    pipeline_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    tensor_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None


class CheckpointJob(Model, frozen=True):
    """How the checkpoint-creating Job runs."""

    gms_client_containers: list[ContainerName] | None = None
    pod_template: JSONObject | None = None


class ComponentCheckpoint(Model, frozen=True):
    """Snapshot/restore of a component (``experimental.checkpoint``)."""

    enabled: bool
    mode: Literal["Auto", "Manual"] | None = None
    startup_policy: (
        Annotated[
            Literal["Immediate", "WaitForCheckpoint"],
            msgspec.Meta(extra_json_schema={"default": "Immediate"}),
        ]
        | None
    ) = None
    deletion_policy: (
        Annotated[Literal["Delete", "Retain"], msgspec.Meta(extra_json_schema={"default": "Delete"})] | None
    ) = None
    checkpoint_ref: str | None = None
    identity: CheckpointIdentity | None = None
    target_container_name: (
        Annotated[str, msgspec.Meta(pattern=DNS_LABEL_PATTERN, extra_json_schema={"default": "main"})] | None
    ) = None
    job: CheckpointJob | None = None


class ComponentExperimental(Model, frozen=True):
    """Experimental component features."""

    gpu_memory_service: GPUMemoryService | None = None
    failover: Failover | None = None
    grove: GroveOptions | None = None
    checkpoint: ComponentCheckpoint | None = None


class SharedComponentSpec(Model, frozen=True, kw_only=True):
    """What a DGD component and a DCD have in common (upstream ``DynamoComponentDeploymentSharedSpec``)."""

    type: ComponentType | None = None
    provider_override: ProviderOverride | None = None
    runtime_version_override: Annotated[str, msgspec.Meta(pattern=RUNTIME_VERSION_PATTERN)] | None = None
    global_dynamo_namespace: bool | None = None
    pod_template: JSONObject | None = None
    replicas: Annotated[int, msgspec.Meta(ge=0)] | None = None
    min_available: Annotated[int, msgspec.Meta(ge=1)] | None = None
    multinode: Multinode | None = None
    shared_memory_size: Quantity | None = None
    model_ref: ModelRef | None = None
    scaling_adapter: ScalingAdapter | None = None
    epp_config: EPPConfig | None = None
    frontend_sidecar: str | None = None
    compilation_cache: CompilationCache | None = None
    topology_constraint: ComponentTopologyConstraint | None = None
    experimental: ComponentExperimental | None = None


class ComponentSpec(SharedComponentSpec, frozen=True, kw_only=True):
    """One component of a graph: its name is its stable identity (Kubernetes names use its lowercase)."""

    name: ComponentName
