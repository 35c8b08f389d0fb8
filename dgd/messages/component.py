"""The component spec shared by DGD components and DCDs (upstream ``DynamoComponentDeploymentSharedSpec``)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import DNS_LABEL_PATTERN, JSONObject, Model, PreservedObject, Quantity
from dgd.messages.pod_template import PodTemplateSpec

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
    """The API version of the object the fragment is merged into; for Grove, `grove.io/v1alpha1`."""
    value: PreservedObject
    """The fragment, shaped like the target object; only its topology constraint may be set."""
    target: str | None = None
    """The kind of object the fragment is merged into: `PodCliqueSet` for the graph; `PodCliqueTemplateSpec`
    or `PodCliqueScalingGroupConfig` for a component."""


class RoleOverride(Model, frozen=True):
    """Provider overrides for one multinode role (leader or worker)."""

    provider_override: ProviderOverride | None = None
    """A fragment merged into this role's Grove clique; it may only set the topology constraint."""


class Multinode(Model, frozen=True):
    """A component spread over several nodes; more than one node makes it multinode."""

    node_count: Annotated[int, msgspec.Meta(ge=2, extra_json_schema={"default": 2})] | None = None
    """How many nodes each replica spans: one leader and the rest workers; at least 2, the default."""
    leader: RoleOverride | None = None
    """Overrides for the leader's pods."""
    worker: RoleOverride | None = None
    """Overrides for the workers' pods."""


class ModelRef(Model, frozen=True):
    """The model a component serves; gives a headless model Service."""

    name: str
    """The model's name, such as a Hugging Face repository id."""
    revision: str | None = None
    """The model's revision: a branch, tag or commit."""


class ScalingAdapter(Model, frozen=True):
    """A marker: its presence (even ``{}``) makes the operator create a scaling adapter (DGDSA)."""


class ConfigMapKeySelector(Model, frozen=True):
    """A key of a ConfigMap."""

    key: str
    """The ConfigMap key that holds the configuration."""
    name: str | None = None
    """The ConfigMap's name, in the graph's namespace."""
    optional: bool | None = None
    """Whether the ConfigMap or its key may be missing."""


class EPPConfig(Model, frozen=True):
    """Endpoint picker configuration: exactly one of a ConfigMap reference or an inline config."""

    config_map_ref: ConfigMapKeySelector | None = None
    """A ConfigMap key that holds the endpoint picker configuration."""
    # An inline EndpointPickerConfig; upstream preserves unknown fields in it, so it stays raw JSON.
    config: PreservedObject | None = None
    """The endpoint picker configuration itself (an EndpointPickerConfig), kept as written."""


class CompilationCache(Model, frozen=True):
    """A PVC-backed compilation cache; the mount path defaults per backend."""

    pvc_name: str
    """The PersistentVolumeClaim that holds the cache; it is mounted writable."""
    mount_path: str | None = None
    """Where the `main` container sees the cache. Unset: the backend's default (`/root/.cache/vllm` for vLLM;
    the other backends need it set)."""


class ComponentTopologyConstraint(Model, frozen=True):
    """Component-level topology-aware scheduling (Grove)."""

    pack_domain: DomainName
    """The topology level (such as `rack` or `host`) that each replica of the component must fit within; no
    wider than the graph's."""


GMSMode = Literal["IntraPod", "InterPod"]
DefaultedGMSMode = Annotated[GMSMode, msgspec.Meta(extra_json_schema={"default": "IntraPod"})]


class GMSClientPod(Model, frozen=True):
    """A reserved inter-pod GPU memory service client pod."""

    name: ContainerName
    """The client pod's name within the component."""
    pod_template: JSONObject
    """The client pod's template (a Kubernetes PodTemplateSpec)."""


class GPUMemoryService(Model, frozen=True):
    """GPU memory sharing through DRA."""

    mode: DefaultedGMSMode | None = None
    """`IntraPod` (the default): the memory service runs inside each engine pod; `InterPod`: in pods of its
    own (Grove and vLLM only)."""
    device_class_name: (
        Annotated[str, msgspec.Meta(extra_json_schema={"default": "gpu.nvidia.com"})] | None
    ) = None
    """The DRA DeviceClass of the GPUs to claim; default `gpu.nvidia.com`."""
    extra_client_containers: list[ContainerName] | None = None
    """Containers besides `main` that also use the shared GPU memory."""
    extra_client_pods: list[GMSClientPod] | None = None
    """Reserved: further pods that use the shared GPU memory in `InterPod` mode."""


class Failover(Model, frozen=True):
    """Active/passive failover of a worker engine."""

    mode: DefaultedGMSMode | None = None
    """`IntraPod` (the default) or `InterPod`; must be the GPU memory service's mode."""
    num_shadows: Annotated[int, msgspec.Meta(ge=1, le=1, extra_json_schema={"default": 1})] | None = None
    """Standby engines per active engine; exactly 1."""


class GroveOptions(Model, frozen=True):
    """Grove-only knobs of a component."""

    force_scaling_group: bool | None = None
    """Run a single-node component as a PodCliqueScalingGroup, as multinode components run. Cannot change once
    set."""


class CheckpointIdentity(Model, frozen=True):
    """What makes two checkpoints interchangeable."""

    backend_framework: BackendFramework
    """The backend the checkpoint was taken with."""
    model: str
    """The model checkpointed."""
    dtype: str | None = None
    """The model's data type, such as `bfloat16`."""
    dynamo_version: str | None = None
    """The Dynamo version the checkpoint was taken with."""
    extra_parameters: dict[str, str] | None = None
    """Further values that tell checkpoints apart."""
    max_model_len: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """The longest sequence the engine was started for."""
    pipeline_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """The engine's pipeline parallelism; default 1."""
    tensor_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """The engine's tensor parallelism; default 1."""


class CheckpointJob(Model, frozen=True):
    """How the checkpoint-creating Job runs."""

    gms_client_containers: list[ContainerName] | None = None
    """Containers of the checkpoint Job's pod that use the shared GPU memory."""
    pod_template: JSONObject | None = None
    """Changes merged into the checkpoint Job's pod template (a Kubernetes PodTemplateSpec)."""


class ComponentCheckpoint(Model, frozen=True):
    """Snapshot/restore of a component (``experimental.checkpoint``)."""

    enabled: bool
    """Turns checkpoint and restore on for the component."""
    mode: Literal["Auto", "Manual"] | None = None
    """Deprecated: `Auto` or `Manual`, kept so older manifests still apply."""
    startup_policy: (
        Annotated[
            Literal["Immediate", "WaitForCheckpoint"],
            msgspec.Meta(extra_json_schema={"default": "Immediate"}),
        ]
        | None
    ) = None
    """`Immediate` (the default): start at once; `WaitForCheckpoint`: keep the component at zero replicas
    until its checkpoint is ready."""
    deletion_policy: (
        Annotated[Literal["Delete", "Retain"], msgspec.Meta(extra_json_schema={"default": "Delete"})] | None
    ) = None
    """What happens to a checkpoint the operator created when the graph is deleted: `Delete` (the default) or
    `Retain`."""
    checkpoint_ref: str | None = None
    """Restore from this existing DynamoCheckpoint in the same namespace instead of one the operator creates;
    the graph never owns or deletes it."""
    identity: CheckpointIdentity | None = None
    """Deprecated: what made two checkpoints interchangeable. Ignored with `checkpointRef`."""
    target_container_name: (
        Annotated[str, msgspec.Meta(pattern=DNS_LABEL_PATTERN, extra_json_schema={"default": "main"})] | None
    ) = None
    """The container that is checkpointed and restored; default `main`."""
    job: CheckpointJob | None = None
    """How the Job that takes the checkpoint runs; not allowed with `checkpointRef`."""


class ComponentExperimental(Model, frozen=True):
    """Experimental component features."""

    gpu_memory_service: GPUMemoryService | None = None
    """Shares GPU memory between engine processes through a GPU memory service, with GPUs claimed through DRA.
    """
    failover: Failover | None = None
    """Active/passive failover: a standby engine takes over when the active one fails. Needs the GPU memory
    service in the same mode."""
    grove: GroveOptions | None = None
    """Options for the Grove pathway only."""
    checkpoint: ComponentCheckpoint | None = None
    """Checkpoint the engine once and restore later replicas from it, so they start faster."""


class SharedComponentSpec(Model, frozen=True, kw_only=True):
    """What a DGD component and a DCD have in common (upstream ``DynamoComponentDeploymentSharedSpec``)."""

    type: ComponentType | None = None
    """The component's role: `frontend`, `worker`, `prefill`, `decode`, `planner` or `epp` (endpoint picker).
    It decides ports, probes, Services and rollouts."""
    provider_override: ProviderOverride | None = None
    """A fragment merged into the Grove clique or scaling group rendered for the component; it may only set
    `topologyConstraint`."""
    runtime_version_override: Annotated[str, msgspec.Meta(pattern=RUNTIME_VERSION_PATTERN)] | None = None
    """The Dynamo runtime version (`MAJOR.MINOR.PATCH`) of the `main` image, when its tag is not a version."""
    global_dynamo_namespace: bool | None = None
    """Register in the shared Dynamo namespace `dynamo` rather than the graph's own (`<namespace>-<graph
    name>`)."""
    pod_template: PodTemplateSpec | None = None
    """The template of the component's pods (a Kubernetes PodTemplateSpec). Its container named `main` runs
    the component and receives the operator's defaults; other containers are sidecars."""
    replicas: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """How many replicas to run; default 1. With `scalingAdapter`, the scaling adapter sets it."""
    min_available: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Grove only: how many replicas are scheduled together and must stay available (default 1); at most
    `replicas`. Cannot change once set."""
    multinode: Multinode | None = None
    """Spreads each replica over several nodes."""
    shared_memory_size: Quantity | None = None
    """The size of the tmpfs mounted at `/dev/shm`; unset: 8Gi, `0`: none."""
    model_ref: ModelRef | None = None
    """The model the component serves; the operator creates a headless Service that finds every pod serving
    it."""
    scaling_adapter: ScalingAdapter | None = None
    """When present (even `{}`), the operator creates a DynamoGraphDeploymentScalingAdapter, through which an
    autoscaler sets this component's `replicas`."""
    epp_config: EPPConfig | None = None
    """The endpoint picker's configuration; `type: epp` only."""
    frontend_sidecar: str | None = None
    """The name of a `podTemplate` container that runs a frontend beside the engine; it receives the
    frontend's defaults."""
    compilation_cache: CompilationCache | None = None
    """A PersistentVolumeClaim the engine keeps its compilation cache in."""
    topology_constraint: ComponentTopologyConstraint | None = None
    """Topology-aware scheduling of the component (Grove only)."""
    experimental: ComponentExperimental | None = None
    """Experimental component features; their shape may change between releases."""


class ComponentSpec(SharedComponentSpec, frozen=True, kw_only=True):
    """One component of a graph: its name is its stable identity (Kubernetes names use its lowercase)."""

    name: ComponentName
    """The component's name, unique in the graph regardless of case. Labels and status use it as written;
    Kubernetes object names use it in lowercase."""
