"""One service of a v1alpha1 graph: ``ServiceSpec`` (Go ``DynamoComponentDeploymentSharedSpec``), its parts.

A ``spec.services`` entry of the v1alpha1 DGD (``dgd.messages.v1alpha1``), and the spec of a v1alpha1
DCD (``dgd.messages.dcd_v1alpha1``), which adds the graph's backend framework. Here are the parts
every role may set: compute resources, volume mounts, ingress, the model served, shared memory, pod
metadata, multinode, the scaling adapter, topology constraints, and the deprecated autoscaling
block; the opt-in features of some roles (endpoint picker, frontend sidecar, checkpoint, GPU memory
service, failover) live in ``dgd.messages.service_features_v1alpha1``. Field docstrings become the
descriptions of the v1alpha1 CRD schemas; they name the v1beta1 field a value becomes where the name
or shape differs, and say when there is none.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from dgd.messages.base import JSONObject, Model, PreservedObject, Quantity, schema_default
from dgd.messages.service_features_v1alpha1 import (
    EPPConfig,
    FailoverSpec,
    FrontendSidecarSpec,
    GPUMemoryServiceSpec,
    ServiceCheckpointConfig,
)

#: A topology domain name (``packDomain``, ``kvTransferPolicy.domain``).
TOPOLOGY_DOMAIN_PATTERN = r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"

#: ``MAJOR.MINOR.PATCH`` with at most four digits per part and no leading zeros.
RUNTIME_VERSION_PATTERN = r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$"

TopologyDomain = Annotated[str, msgspec.Meta(pattern=TOPOLOGY_DOMAIN_PATTERN)]
NonNegativeInt32 = Annotated[int, msgspec.Meta(ge=0)]


class ProviderOverride(Model, frozen=True):
    """A sparse provider-native fragment; ``value`` is passed through uninterpreted."""

    api_version: Annotated[str, msgspec.Meta(min_length=1)]
    """The API version of the object the fragment is merged into; for Grove, `grove.io/v1alpha1`."""
    value: PreservedObject
    """The fragment, shaped like the target object; only its topology constraint may be set."""
    target: str | None = None
    """The kind of object the fragment is merged into: `PodCliqueSet` for the graph; `PodCliqueTemplateSpec`
    or `PodCliqueScalingGroupConfig` for a service."""


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
    use_as_compilation_cache: Annotated[bool, schema_default(False)] | None = None
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

    enabled: Annotated[bool, schema_default(False)] | None = None
    """When true, the operator creates a DynamoGraphDeploymentScalingAdapter, through which an autoscaler
    sets this service's `replicas`."""


class ComponentTopologyConstraint(Model, frozen=True):
    """Service-level topology-aware scheduling (Grove)."""

    pack_domain: TopologyDomain
    """The topology level (such as `rack` or `host`) that each replica of the service must fit within; no
    wider than the graph's."""


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
