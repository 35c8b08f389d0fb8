"""The v1alpha1 DynamoGraphDeployment: the services-map form, still served and converted to v1beta1.

Field names are exactly those of the v1alpha1 CRD schema; enums, patterns and minimums carry the
CRD's constraints, so a JSON schema generated from these Structs matches the CRD. Pod-level values
(``extraPodSpec``, probes, env vars, resource claims, autoscaling behavior/metrics, pod templates)
stay raw JSON. Conversion to v1beta1 lives in ``dgd.domain.conversion.dgd``; these types are the edge
model for reading and validating v1alpha1 documents.

Field docstrings become the descriptions of the v1alpha1 CRD schema. They name the v1beta1 field a
value becomes where the name or shape differs, and say when there is none (such values are kept in
the ``nvidia.com/dgd-spec`` annotation of the stored v1beta1 object).

Over 400 lines: one concept (the whole v1alpha1 DGD document, kept apart from the v1beta1 types it
converts to), and about a third of the lines are the field docstrings the generated CRD carries as
descriptions.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import DNS_LABEL_PATTERN, JSONObject, Model, PreservedObject, PreservedValue, Quantity
from dgd.messages.meta import Condition, ObjectMeta

#: A topology domain name (``packDomain``, ``kvTransferPolicy.domain``).
TOPOLOGY_DOMAIN_PATTERN = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"

#: ``MAJOR.MINOR.PATCH`` with at most four digits per part and no leading zeros.
RUNTIME_VERSION_PATTERN = r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$"

#: A node label key, optionally prefixed by a DNS subdomain.
LABEL_KEY_PATTERN = (
    r"^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?"
    r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$"
)

TopologyDomain = Annotated[str, msgspec.Meta(pattern=TOPOLOGY_DOMAIN_PATTERN)]
ContainerName = Annotated[str, msgspec.Meta(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)]
NonNegativeInt32 = Annotated[int, msgspec.Meta(ge=0)]
DateTime = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]


def _default(value: object) -> msgspec.Meta:
    """The schema default upstream's v1alpha1 CRD declares (the API server fills it in on every write)."""
    return msgspec.Meta(extra_json_schema={"default": value})


BackendFramework = Literal["sglang", "vllm", "trtllm"]
GPUMemoryServiceMode = Literal["intraPod", "interPod"]
DGDState = Literal["initializing", "pending", "successful", "failed"]
ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]


class ProviderOverride(Model, frozen=True):
    """A sparse provider-native fragment; ``value`` is passed through uninterpreted."""

    api_version: Annotated[str, msgspec.Meta(min_length=1)]
    """The API version of the object the fragment is merged into; for Grove, `grove.io/v1alpha1`."""
    value: PreservedObject
    """The fragment, shaped like the target object; only its topology constraint may be set."""
    target: str | None = None
    """The kind of object the fragment is merged into: `PodCliqueSet` for the graph; `PodCliqueTemplateSpec`
    or `PodCliqueScalingGroupConfig` for a service."""


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

    type: Annotated[Literal["Sequential", "Parallel"], _default("Sequential")] | None = None
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
    enforcement: Annotated[Literal["required", "preferred"], _default("required")] | None = None
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


class ResourceItem(Model, frozen=True):
    """Requests or limits; ``gpu`` counts ``gpuType`` devices (``nvidia.com/gpu`` when unset)."""

    cpu: str | None = None
    """CPU, as a Kubernetes quantity such as `4` or `500m`."""
    memory: str | None = None
    """Memory, as a Kubernetes quantity such as `16Gi`."""
    gpu: str | None = None
    """The number of GPUs, counted in the resource `gpuType` names (`nvidia.com/gpu` when unset)."""
    gpu_type: str | None = None
    """The extended resource name GPUs are counted in; unset: `nvidia.com/gpu`."""
    custom: dict[str, str] | None = None
    """Further resources by name, each with its quantity."""


class ResourceClaim(Model, frozen=True):
    """A dynamic resource claim of the main container."""

    name: str
    """The name of one of the pod's `resourceClaims` that the main container uses."""
    request: str | None = None
    """The one request of that claim to use; unset: the whole claim."""


class Resources(Model, frozen=True):
    """The main container's compute resources; become its ``resources`` in the v1beta1 ``podTemplate``."""

    requests: ResourceItem | None = None
    """The resources the main container is guaranteed."""
    limits: ResourceItem | None = None
    """The most resources the main container may use."""
    claims: list[ResourceClaim] | None = None
    """Dynamic resource claims (DRA) the main container uses, copied to its `resources.claims`."""


class Autoscaling(Model, frozen=True):
    """Deprecated and ignored; preserved only."""

    enabled: bool | None = None
    """Deprecated and ignored."""
    min_replicas: int | None = None
    """Deprecated and ignored."""
    max_replicas: int | None = None
    """Deprecated and ignored."""
    behavior: JSONObject | None = None
    """Deprecated and ignored (it held a HorizontalPodAutoscaler behavior)."""
    metrics: list[JSONObject] | None = None
    """Deprecated and ignored (it held HorizontalPodAutoscaler metric specs)."""


class VolumeMount(Model, frozen=True):
    """A mount of a top-level PVC; the first cache-flagged mount becomes v1beta1 ``compilationCache``."""

    name: str
    """The PersistentVolumeClaim to mount (a volume of that name is added to the pod when missing)."""
    mount_point: str | None = None
    """Where the main container sees the volume; required unless `useAsCompilationCache` is set, which
    then defaults it per backend."""
    use_as_compilation_cache: Annotated[bool, _default(False)] | None = None
    """Keep the engine's compilation cache on this volume; the first such mount becomes v1beta1
    `compilationCache`."""


class IngressTLS(Model, frozen=True):
    """TLS of the frontend Ingress."""

    secret_name: str | None = None
    """The Secret that holds the TLS certificate and key for the host."""


class IngressSpec(Model, frozen=True):
    """How a frontend is exposed outside the cluster (v1alpha1 only; kept in the preservation payload)."""

    enabled: bool | None = None
    """Expose the frontend through an Ingress (or VirtualService); `host` is then required."""
    host: str | None = None
    """The frontend's host name, between `hostPrefix` and `hostSuffix`: `<hostPrefix><host>.<hostSuffix>`."""
    use_virtual_service: bool | None = None
    """Expose the frontend through an Istio VirtualService instead of an Ingress."""
    virtual_service_gateway: str | None = None
    """The Istio Gateway the VirtualService binds to."""
    host_prefix: str | None = None
    """Put in front of `host` in the full host name."""
    annotations: dict[str, str] | None = None
    """Annotations added to the Ingress or VirtualService."""
    labels: dict[str, str] | None = None
    """Labels added to the Ingress or VirtualService."""
    tls: IngressTLS | None = None
    """TLS for the host; unset: plain HTTP."""
    host_suffix: str | None = None
    """The domain after `host` in the full host name; unset: `local`."""
    ingress_controller_class_name: str | None = None
    """The IngressClass of the Ingress."""


class ModelReference(Model, frozen=True):
    """The model a service serves; gives a headless model Service."""

    name: str
    """The model's name, such as a Hugging Face repository id."""
    revision: str | None = None
    """The model's revision: a branch, tag or commit."""


class SharedMemorySpec(Model, frozen=True):
    """The tmpfs at ``/dev/shm``; becomes v1beta1 ``sharedMemorySize``."""

    disabled: bool | None = None
    """Mount no tmpfs at `/dev/shm` (v1beta1 `sharedMemorySize: "0"`)."""
    size: Quantity | None = None
    """The size of the tmpfs; unset: 8Gi."""


class ExtraPodMetadata(Model, frozen=True):
    """Metadata added to the service's pods; becomes the v1beta1 ``podTemplate.metadata``."""

    annotations: dict[str, str] | None = None
    """Annotations added to the service's pods."""
    labels: dict[str, str] | None = None
    """Labels added to the service's pods."""


class MultinodeRole(Model, frozen=True):
    """Provider overrides for one multinode role (leader or worker)."""

    provider_override: ProviderOverride | None = None
    """A fragment merged into this role's Grove clique; it may only set the topology constraint."""


class MultinodeSpec(Model, frozen=True):
    """A service spread over several nodes."""

    node_count: Annotated[int, msgspec.Meta(ge=2, extra_json_schema={"default": 2})]
    """How many nodes each replica spans: one leader and the rest workers; at least 2."""
    leader: MultinodeRole | None = None
    """Overrides for the leader's pods."""
    worker: MultinodeRole | None = None
    """Overrides for the workers' pods."""


class ScalingAdapter(Model, frozen=True):
    """Whether an autoscaler sets the replicas; becomes the v1beta1 marker ``scalingAdapter: {}``."""

    enabled: Annotated[bool, _default(False)] | None = None
    """When true, the operator creates a DynamoGraphDeploymentScalingAdapter, through which an autoscaler
    sets this service's `replicas`."""


class ConfigMapKeySelector(Model, frozen=True):
    """A key of a ConfigMap."""

    key: str
    """The ConfigMap key that holds the configuration."""
    name: str | None = None
    """The ConfigMap's name, in the graph's namespace."""
    optional: bool | None = None
    """Whether the ConfigMap or its key may be missing."""


class EppPlugin(Model, frozen=True):
    """One plugin instance of the endpoint picker."""

    type: str
    """The plugin's type: which plugin to instantiate."""
    name: str | None = None
    """The instance's name, by which scheduling profiles refer to it; unset: its `type`."""
    parameters: PreservedValue | None = None
    """The plugin's own settings, kept as written."""


class EppPluginRef(Model, frozen=True):
    """A plugin a scheduling profile uses."""

    plugin_ref: str
    """The name of a plugin instance listed in `plugins`."""
    weight: int | None = None
    """For a scorer: how much its score counts against the other scorers'."""


class EppSchedulingProfile(Model, frozen=True):
    """A named set of plugins that picks an endpoint for a request."""

    name: str
    """The profile's name."""
    plugins: list[EppPluginRef]
    """The plugin instances the profile runs (filters, scorers, pickers)."""


class EppSaturationDetector(Model, frozen=True):
    """When the endpoint picker treats the workers as saturated."""

    kv_cache_util_threshold: float | None = None
    """The KV-cache utilization, from 0 to 1, above which a worker counts as saturated."""
    metrics_staleness_threshold: str | None = None
    """How old (a duration such as `200ms`) a worker's metrics may be before they are no longer trusted."""
    queue_depth_threshold: int | None = None
    """The number of waiting requests above which a worker counts as saturated."""


class EndpointPickerConfig(Model, frozen=True):
    """An inline endpoint picker configuration (an ``EndpointPickerConfig``)."""

    plugins: list[EppPlugin]
    """The plugin instances the endpoint picker creates."""
    scheduling_profiles: list[EppSchedulingProfile]
    """The scheduling profiles, each a set of the plugins above."""
    api_version: str | None = None
    """The configuration's API version."""
    kind: str | None = None
    """The configuration's kind, `EndpointPickerConfig`."""
    feature_gates: list[str] | None = None
    """The endpoint picker features to turn on."""
    saturation_detector: EppSaturationDetector | None = None
    """When the endpoint picker treats the workers as saturated."""


class EPPConfig(Model, frozen=True):
    """Endpoint picker configuration: exactly one of a ConfigMap reference or an inline config."""

    config_map_ref: ConfigMapKeySelector | None = None
    """A ConfigMap key that holds the endpoint picker configuration."""
    config: (
        Annotated[
            EndpointPickerConfig,
            msgspec.Meta(extra_json_schema={"x-kubernetes-preserve-unknown-fields": True}),
        ]
        | None
    ) = None
    """The endpoint picker configuration itself (an EndpointPickerConfig); fields not listed are kept."""


class FrontendSidecarSpec(Model, frozen=True):
    """An auto-generated frontend container; becomes container ``sidecar-frontend`` in v1beta1."""

    image: str
    """The frontend container's image."""
    args: list[str] | None = None
    """The frontend container's arguments."""
    env_from_secret: str | None = None
    """A Secret whose keys all become environment variables of the frontend container."""
    envs: list[JSONObject] | None = None
    """Environment variables (Kubernetes EnvVar) of the frontend container."""


class CheckpointIdentity(Model, frozen=True):
    """What makes two checkpoints interchangeable."""

    backend_framework: Literal["vllm", "sglang", "trtllm"]
    """The backend the checkpoint was taken with."""
    model: str
    """The model checkpointed."""
    dynamo_version: str | None = None
    """The Dynamo version the checkpoint was taken with."""
    tensor_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """The engine's tensor parallelism; default 1."""
    pipeline_parallel_size: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """The engine's pipeline parallelism; default 1."""
    dtype: str | None = None
    """The model's data type, such as `bfloat16`."""
    max_model_len: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """The longest sequence the engine was started for."""
    extra_parameters: dict[str, str] | None = None
    """Further values that tell checkpoints apart."""


class CheckpointJobConfig(Model, frozen=True):
    """How the checkpoint-creating Job runs."""

    gms_client_containers: list[ContainerName] | None = None
    """Containers of the checkpoint Job's pod that use the shared GPU memory."""
    pod_template: PreservedObject | None = None
    """Changes merged into the checkpoint Job's pod template (a Kubernetes PodTemplateSpec)."""


class ServiceCheckpointConfig(Model, frozen=True):
    """Snapshot/restore of a service; becomes v1beta1 ``experimental.checkpoint``."""

    enabled: Annotated[bool, _default(False)] | None = None
    """Turns checkpoint and restore on for the service."""
    mode: Literal["Auto", "Manual"] | None = None
    """Deprecated: `Auto` or `Manual`, kept so older manifests still apply."""
    startup_policy: Annotated[Literal["Immediate", "WaitForCheckpoint"], _default("Immediate")] | None = None
    """`Immediate` (the default): start at once; `WaitForCheckpoint`: keep the service at zero replicas
    until its checkpoint is ready."""
    deletion_policy: Annotated[Literal["Delete", "Retain"], _default("Delete")] | None = None
    """What happens to a checkpoint the operator created when the graph is deleted: `Delete` (the default) or
    `Retain`."""
    checkpoint_ref: str | None = None
    """Restore from this existing DynamoCheckpoint in the same namespace instead of one the operator creates;
    the graph never owns or deletes it."""
    identity: CheckpointIdentity | None = None
    """Deprecated: what made two checkpoints interchangeable. Ignored with `checkpointRef`."""
    target_container_name: Annotated[ContainerName, _default("main")] | None = None
    """The container that is checkpointed and restored; default `main`."""
    job: CheckpointJobConfig | None = None
    """How the Job that takes the checkpoint runs; not allowed with `checkpointRef`."""


class ComponentTopologyConstraint(Model, frozen=True):
    """Service-level topology-aware scheduling (Grove)."""

    pack_domain: TopologyDomain
    """The topology level (such as `rack` or `host`) that each replica of the service must fit within; no
    wider than the graph's."""


class GMSClientPod(Model, frozen=True):
    """A reserved inter-pod GPU memory service client pod."""

    name: ContainerName
    """The client pod's name within the service."""
    pod_template: PreservedObject
    """The client pod's template (a Kubernetes PodTemplateSpec)."""


class GPUMemoryServiceSpec(Model, frozen=True):
    """GPU Memory Service; converted to v1beta1 ``experimental.gpuMemoryService`` only when enabled."""

    enabled: bool
    """Turns the GPU memory service on; when false the block has no v1beta1 counterpart and is only kept."""
    mode: Annotated[GPUMemoryServiceMode, _default("intraPod")] | None = None
    """`intraPod` (the default): the memory service runs inside each engine pod; `interPod`: in pods of its
    own (Grove and vLLM only). Becomes `IntraPod` or `InterPod` in v1beta1."""
    device_class_name: Annotated[str, _default("gpu.nvidia.com")] | None = None
    """The DRA DeviceClass of the GPUs to claim; default `gpu.nvidia.com`."""
    extra_client_containers: list[ContainerName] | None = None
    """Containers besides `main` that also use the shared GPU memory."""
    extra_client_pods: list[GMSClientPod] | None = None
    """Reserved: further pods that use the shared GPU memory in `interPod` mode."""


class FailoverSpec(Model, frozen=True):
    """Active/passive failover of a worker engine; becomes v1beta1 ``experimental.failover`` when enabled."""

    enabled: bool
    """Turns failover on; when false the block has no v1beta1 counterpart and is only kept."""
    mode: Annotated[GPUMemoryServiceMode, _default("intraPod")] | None = None
    """`intraPod` (the default) or `interPod`; must be the GPU memory service's mode. Becomes `IntraPod` or
    `InterPod` in v1beta1."""
    num_shadows: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """Standby engines per active engine; v1beta1 accepts only 1."""


class ServiceSpec(Model, frozen=True):
    """One entry of ``spec.services`` (Go ``DynamoComponentDeploymentSharedSpec``), in Go field order."""

    provider_override: ProviderOverride | None = None
    """A fragment merged into the Grove clique or scaling group rendered for the service; it may only set
    `topologyConstraint`."""
    annotations: dict[str, str] | None = None
    """Annotations for the resources generated for the service: its pods and its Service. No v1beta1 field:
    kept in the `nvidia.com/dgd-spec` annotation and still honored."""
    labels: dict[str, str] | None = None
    """Labels for the resources generated for the service: its pods, its Service and Ingress. No v1beta1
    field: kept in the `nvidia.com/dgd-spec` annotation and still honored."""
    service_name: str | None = None
    """Leave empty in a graph: the map key names the service and becomes v1beta1 `components[].name`."""
    component_type: str | None = None
    """The service's role: `frontend`, `worker`, `planner` or `epp` (endpoint picker); prefill and decode
    workers are `worker` with a `subComponentType`. With it, this becomes v1beta1 `type`."""
    sub_component_type: str | None = None
    """For `componentType: worker`, `prefill` or `decode`: the v1beta1 `type` becomes that value, and the
    pods keep the `nvidia.com/dynamo-sub-component-type` label."""
    runtime_version_override: Annotated[str, msgspec.Meta(pattern=RUNTIME_VERSION_PATTERN)] | None = None
    """The Dynamo runtime version (`MAJOR.MINOR.PATCH`) of the main image, when its tag is not a version."""
    dynamo_namespace: str | None = None
    """Deprecated and ignored in a graph, whose Dynamo namespace is always computed. No v1beta1 field."""
    global_dynamo_namespace: bool | None = None
    """Register in the shared Dynamo namespace `dynamo` rather than the graph's own (`<namespace>-<graph
    name>`)."""
    resources: Resources | None = None
    """The main container's compute resources; they become its `resources` in the v1beta1 `podTemplate`."""
    autoscaling: Autoscaling | None = None
    """Deprecated and ignored: scale through `scalingAdapter` instead. No v1beta1 field."""
    envs: list[JSONObject] | None = None
    """Environment variables (Kubernetes EnvVar) of the main container; an `extraPodSpec.mainContainer`
    variable of the same name wins. They become the main container's `env` in the v1beta1 `podTemplate`."""
    env_from_secret: str | None = None
    """A Secret whose keys all become environment variables of the main container (its `envFrom`)."""
    volume_mounts: list[VolumeMount] | None = None
    """PersistentVolumeClaims mounted into the main container; a mount flagged as compilation cache becomes
    v1beta1 `compilationCache`."""
    ingress: IngressSpec | None = None
    """Frontends only: how the service is exposed outside the cluster; unset: the operator's configured
    ingress. No v1beta1 field: kept in the `nvidia.com/dgd-spec` annotation and still honored."""
    model_ref: ModelReference | None = None
    """The model the service serves; the operator creates a headless Service that finds every pod serving
    it."""
    shared_memory: SharedMemorySpec | None = None
    """The tmpfs mounted at `/dev/shm`; unset: 8Gi. Becomes v1beta1 `sharedMemorySize`."""
    extra_pod_metadata: ExtraPodMetadata | None = None
    """Annotations and labels for the service's pods; they become the v1beta1 `podTemplate.metadata`."""
    extra_pod_spec: JSONObject | None = None
    """The service's pod spec (a Kubernetes PodSpec), plus `mainContainer`: a Container whose values are
    merged over the main container's. Becomes the v1beta1 `podTemplate.spec`."""
    liveness_probe: JSONObject | None = None
    """The main container's liveness probe (a Kubernetes Probe); unset: the operator's default for the
    service's role."""
    readiness_probe: JSONObject | None = None
    """The main container's readiness probe (a Kubernetes Probe); unset: the operator's default for the
    service's role."""
    replicas: NonNegativeInt32 | None = None
    """How many replicas to run; default 1. With `scalingAdapter`, the scaling adapter sets it."""
    min_available: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Grove only: how many replicas are scheduled together and must stay available (default 1); at most
    `replicas`. Cannot change once set."""
    multinode: MultinodeSpec | None = None
    """Spreads each replica over several nodes."""
    scaling_adapter: ScalingAdapter | None = None
    """Whether an autoscaler sets this service's replicas through a scaling adapter; `enabled: true` becomes
    v1beta1 `scalingAdapter: {}`."""
    epp_config: EPPConfig | None = None
    """The endpoint picker's configuration; `componentType: epp` only."""
    frontend_sidecar: FrontendSidecarSpec | None = None
    """A frontend container the operator adds beside the engine, named `sidecar-frontend` in the v1beta1
    `podTemplate`."""
    checkpoint: ServiceCheckpointConfig | None = None
    """Checkpoint the engine once and restore later replicas from it, so they start faster. Becomes v1beta1
    `experimental.checkpoint`."""
    topology_constraint: ComponentTopologyConstraint | None = None
    """Topology-aware scheduling of the service (Grove only)."""
    gpu_memory_service: GPUMemoryServiceSpec | None = None
    """Shares GPU memory between engine processes through a GPU memory service, with GPUs claimed through DRA.
    Becomes v1beta1 `experimental.gpuMemoryService`."""
    failover: FailoverSpec | None = None
    """Active/passive failover: a standby engine takes over when the active one fails. Needs the GPU memory
    service in the same mode. Becomes v1beta1 `experimental.failover`."""


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

    state: Annotated[DGDState, _default("initializing")]
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
