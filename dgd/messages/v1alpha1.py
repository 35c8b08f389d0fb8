"""The v1alpha1 DynamoGraphDeployment: the services-map form, still served and converted to v1beta1.

Field names are exactly those of the v1alpha1 CRD schema; enums, patterns and minimums carry the
CRD's constraints, so a JSON schema generated from these Structs matches the CRD. Pod-level values
(``extraPodSpec``, probes, env vars, resource claims, autoscaling behavior/metrics, pod templates)
stay raw JSON. Conversion to v1beta1 lives in ``dgd.domain.conversion.dgd``; these types are the edge
model for reading and validating v1alpha1 documents.
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

BackendFramework = Literal["sglang", "vllm", "trtllm"]
GPUMemoryServiceMode = Literal["intraPod", "interPod"]
DGDState = Literal["initializing", "pending", "successful", "failed"]
ComponentKind = Literal["PodClique", "PodCliqueScalingGroup", "Deployment", "LeaderWorkerSet"]


class ProviderOverride(Model, frozen=True):
    """A sparse provider-native fragment; ``value`` is passed through uninterpreted."""

    api_version: Annotated[str, msgspec.Meta(min_length=1)]
    value: PreservedObject
    target: str | None = None


class Pvc(Model, frozen=True):
    """A PVC the DGD creates or references (v1alpha1 only; kept in the preservation payload)."""

    name: str
    create: bool | None = None
    storage_class: str | None = None
    size: Quantity | None = None
    volume_access_mode: str | None = None


class RestartStrategy(Model, frozen=True):
    type: Literal["Sequential", "Parallel"] | None = None
    order: list[str] | None = None


class Restart(Model, frozen=True):
    """A graph restart request; ``id`` changes to request a new restart."""

    id: Annotated[str, msgspec.Meta(min_length=1)]
    strategy: RestartStrategy | None = None


class SpecTopologyConstraint(Model, frozen=True):
    """Deployment-level topology-aware scheduling; ``topologyProfile`` is v1beta1 ``clusterTopologyName``."""

    topology_profile: Annotated[str, msgspec.Meta(min_length=1)]
    pack_domain: TopologyDomain | None = None


class KvTransferPolicy(Model, frozen=True):
    domain: TopologyDomain
    cluster_topology_name: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    enforcement: Literal["required", "preferred"] | None = None
    label_key: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=317, pattern=LABEL_KEY_PATTERN)] | None
    ) = None
    preferred_weight: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None


class DynamoGraphDeploymentExperimentalSpec(Model, frozen=True):
    kv_transfer_policy: KvTransferPolicy | None = None


class ResourceItem(Model, frozen=True):
    """Requests or limits; ``gpu`` counts ``gpuType`` devices (``nvidia.com/gpu`` when unset)."""

    cpu: str | None = None
    memory: str | None = None
    gpu: str | None = None
    gpu_type: str | None = None
    custom: dict[str, str] | None = None


class ResourceClaim(Model, frozen=True):
    name: str
    request: str | None = None


class Resources(Model, frozen=True):
    requests: ResourceItem | None = None
    limits: ResourceItem | None = None
    claims: list[ResourceClaim] | None = None


class Autoscaling(Model, frozen=True):
    """Deprecated and ignored; preserved only."""

    enabled: bool | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    behavior: JSONObject | None = None
    metrics: list[JSONObject] | None = None


class VolumeMount(Model, frozen=True):
    """A mount of a top-level PVC; the first cache-flagged mount becomes v1beta1 ``compilationCache``."""

    name: str
    mount_point: str | None = None
    use_as_compilation_cache: bool | None = None


class IngressTLS(Model, frozen=True):
    secret_name: str | None = None


class IngressSpec(Model, frozen=True):
    enabled: bool | None = None
    host: str | None = None
    use_virtual_service: bool | None = None
    virtual_service_gateway: str | None = None
    host_prefix: str | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    tls: IngressTLS | None = None
    host_suffix: str | None = None
    ingress_controller_class_name: str | None = None


class ModelReference(Model, frozen=True):
    name: str
    revision: str | None = None


class SharedMemorySpec(Model, frozen=True):
    disabled: bool | None = None
    size: Quantity | None = None


class ExtraPodMetadata(Model, frozen=True):
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None


class MultinodeRole(Model, frozen=True):
    provider_override: ProviderOverride | None = None


class MultinodeSpec(Model, frozen=True):
    node_count: Annotated[int, msgspec.Meta(ge=2)]
    leader: MultinodeRole | None = None
    worker: MultinodeRole | None = None


class ScalingAdapter(Model, frozen=True):
    enabled: bool | None = None


class ConfigMapKeySelector(Model, frozen=True):
    key: str
    name: str | None = None
    optional: bool | None = None


class EppPlugin(Model, frozen=True):
    type: str
    name: str | None = None
    parameters: PreservedValue | None = None


class EppPluginRef(Model, frozen=True):
    plugin_ref: str
    weight: int | None = None


class EppSchedulingProfile(Model, frozen=True):
    name: str
    plugins: list[EppPluginRef]


class EppSaturationDetector(Model, frozen=True):
    kv_cache_util_threshold: float | None = None
    metrics_staleness_threshold: str | None = None
    queue_depth_threshold: int | None = None


class EndpointPickerConfig(Model, frozen=True):
    plugins: list[EppPlugin]
    scheduling_profiles: list[EppSchedulingProfile]
    api_version: str | None = None
    kind: str | None = None
    feature_gates: list[str] | None = None
    saturation_detector: EppSaturationDetector | None = None


class EPPConfig(Model, frozen=True):
    config_map_ref: ConfigMapKeySelector | None = None
    config: (
        Annotated[
            EndpointPickerConfig,
            msgspec.Meta(extra_json_schema={"x-kubernetes-preserve-unknown-fields": True}),
        ]
        | None
    ) = None


class FrontendSidecarSpec(Model, frozen=True):
    """An auto-generated frontend container; becomes container ``sidecar-frontend`` in v1beta1."""

    image: str
    args: list[str] | None = None
    env_from_secret: str | None = None
    envs: list[JSONObject] | None = None


class CheckpointIdentity(Model, frozen=True):
    backend_framework: Literal["vllm", "sglang", "trtllm"]
    model: str
    dynamo_version: str | None = None
    tensor_parallel_size: Annotated[int, msgspec.Meta(ge=1)] | None = None
    pipeline_parallel_size: Annotated[int, msgspec.Meta(ge=1)] | None = None
    dtype: str | None = None
    max_model_len: Annotated[int, msgspec.Meta(ge=1)] | None = None
    extra_parameters: dict[str, str] | None = None


class CheckpointJobConfig(Model, frozen=True):
    gms_client_containers: list[ContainerName] | None = None
    pod_template: PreservedObject | None = None


class ServiceCheckpointConfig(Model, frozen=True):
    enabled: bool | None = None
    mode: Literal["Auto", "Manual"] | None = None
    startup_policy: Literal["Immediate", "WaitForCheckpoint"] | None = None
    deletion_policy: Literal["Delete", "Retain"] | None = None
    checkpoint_ref: str | None = None
    identity: CheckpointIdentity | None = None
    target_container_name: ContainerName | None = None
    job: CheckpointJobConfig | None = None


class ComponentTopologyConstraint(Model, frozen=True):
    pack_domain: TopologyDomain


class GMSClientPod(Model, frozen=True):
    name: ContainerName
    pod_template: PreservedObject


class GPUMemoryServiceSpec(Model, frozen=True):
    """GPU Memory Service; converted to v1beta1 ``experimental.gpuMemoryService`` only when enabled."""

    enabled: bool
    mode: GPUMemoryServiceMode | None = None
    device_class_name: str | None = None
    extra_client_containers: list[ContainerName] | None = None
    extra_client_pods: list[GMSClientPod] | None = None


class FailoverSpec(Model, frozen=True):
    enabled: bool
    mode: GPUMemoryServiceMode | None = None
    num_shadows: Annotated[int, msgspec.Meta(ge=1)] | None = None


class ServiceSpec(Model, frozen=True):
    """One entry of ``spec.services`` (Go ``DynamoComponentDeploymentSharedSpec``), in Go field order."""

    provider_override: ProviderOverride | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    service_name: str | None = None
    component_type: str | None = None
    sub_component_type: str | None = None
    runtime_version_override: Annotated[str, msgspec.Meta(pattern=RUNTIME_VERSION_PATTERN)] | None = None
    dynamo_namespace: str | None = None
    global_dynamo_namespace: bool | None = None
    resources: Resources | None = None
    autoscaling: Autoscaling | None = None
    envs: list[JSONObject] | None = None
    env_from_secret: str | None = None
    volume_mounts: list[VolumeMount] | None = None
    ingress: IngressSpec | None = None
    model_ref: ModelReference | None = None
    shared_memory: SharedMemorySpec | None = None
    extra_pod_metadata: ExtraPodMetadata | None = None
    extra_pod_spec: JSONObject | None = None
    liveness_probe: JSONObject | None = None
    readiness_probe: JSONObject | None = None
    replicas: NonNegativeInt32 | None = None
    min_available: Annotated[int, msgspec.Meta(ge=1)] | None = None
    multinode: MultinodeSpec | None = None
    scaling_adapter: ScalingAdapter | None = None
    epp_config: EPPConfig | None = None
    frontend_sidecar: FrontendSidecarSpec | None = None
    checkpoint: ServiceCheckpointConfig | None = None
    topology_constraint: ComponentTopologyConstraint | None = None
    gpu_memory_service: GPUMemoryServiceSpec | None = None
    failover: FailoverSpec | None = None


class DynamoGraphDeploymentSpec(Model, frozen=True):
    """The v1alpha1 DGD spec, in Go field order; ``services`` is keyed by component name."""

    provider_override: ProviderOverride | None = None
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    priority_class_name: str | None = None
    pvcs: Annotated[list[Pvc], msgspec.Meta(max_length=100)] | None = None
    services: Annotated[dict[str, ServiceSpec | None], msgspec.Meta(max_length=25)] | None = None
    envs: list[JSONObject] | None = None
    backend_framework: BackendFramework | None = None
    restart: Restart | None = None
    topology_constraint: SpecTopologyConstraint | None = None
    experimental: DynamoGraphDeploymentExperimentalSpec | None = None


class ServiceReplicaStatus(Model, frozen=True):
    """Replica counts of one service; ``componentName`` is the last of ``componentNames``."""

    component_kind: ComponentKind
    component_name: str
    replicas: NonNegativeInt32
    updated_replicas: NonNegativeInt32
    component_names: list[str] | None = None
    runtime_namespace: str | None = None
    ready_replicas: NonNegativeInt32 | None = None
    available_replicas: NonNegativeInt32 | None = None
    scheduled_replicas: NonNegativeInt32 | None = None


class ServiceCheckpointStatus(Model, frozen=True):
    checkpoint_name: str | None = None
    checkpoint_id: str | None = msgspec.field(default=None, name="checkpointID")
    identity_hash: str | None = None
    ready: bool | None = None


class RestartStatus(Model, frozen=True):
    observed_id: str | None = msgspec.field(default=None, name="observedID")
    phase: str | None = None
    in_progress: list[str] | None = None


class RollingUpdateStatus(Model, frozen=True):
    phase: Literal["Pending", "InProgress", "Completed", "Failed", ""] | None = None
    start_time: DateTime | None = None
    end_time: DateTime | None = None
    updated_services: list[str] | None = None


class PlacementStatus(Model, frozen=True):
    score: Annotated[float, msgspec.Meta(ge=0, le=1)] | None = None
    state: Literal["Reported", "Partial", "Unsupported", "Unknown"] | None = None


class DynamoGraphDeploymentStatus(Model, frozen=True):
    state: DGDState
    observed_generation: int | None = None
    conditions: list[Condition] | None = None
    placement: PlacementStatus | None = None
    services: dict[str, ServiceReplicaStatus] | None = None
    restart: RestartStatus | None = None
    checkpoints: dict[str, ServiceCheckpointStatus] | None = None
    rolling_update: RollingUpdateStatus | None = None


class DynamoGraphDeploymentV1Alpha1(Model, frozen=True, tag_field="kind", tag="DynamoGraphDeployment"):
    """A whole v1alpha1 DGD document (``apiVersion: nvidia.com/v1alpha1``)."""

    api_version: str
    metadata: ObjectMeta
    spec: DynamoGraphDeploymentSpec | None = None
    status: DynamoGraphDeploymentStatus | None = None
