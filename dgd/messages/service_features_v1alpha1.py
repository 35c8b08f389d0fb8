"""The opt-in features of a v1alpha1 service: blocks only some roles set, each turning on something
beside the pods the service runs.

The endpoint picker's configuration (``eppConfig``, ``componentType: epp`` only), a frontend container
added beside the engine (``frontendSidecar``), checkpoint and restore (``checkpoint``), the GPU memory
service (``gpuMemoryService``) and active/passive failover (``failover``). ``ServiceSpec``
(``dgd.messages.service_v1alpha1``) holds them; conversion moves the last three, when enabled, under
v1beta1 ``experimental``. Field docstrings become the descriptions of the v1alpha1 CRD schemas (DGD
and DCD).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from dgd.messages.base import (
    DNS_LABEL_PATTERN,
    JSONObject,
    Model,
    PreservedObject,
    PreservedValue,
    schema_default,
)

ContainerName = Annotated[str, msgspec.Meta(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)]
GPUMemoryServiceMode = Literal["intraPod", "interPod"]


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

    enabled: Annotated[bool, schema_default(False)] | None = None
    """Turns checkpoint and restore on for the service."""
    mode: Literal["Auto", "Manual"] | None = None
    """Deprecated: `Auto` or `Manual`, kept so older manifests still apply."""
    startup_policy: (
        Annotated[Literal["Immediate", "WaitForCheckpoint"], schema_default("Immediate")] | None
    ) = None
    """`Immediate` (the default): start at once; `WaitForCheckpoint`: keep the service at zero replicas
    until its checkpoint is ready."""
    deletion_policy: Annotated[Literal["Delete", "Retain"], schema_default("Delete")] | None = None
    """What happens to a checkpoint the operator created when the graph is deleted: `Delete` (the default) or
    `Retain`."""
    checkpoint_ref: str | None = None
    """Restore from this existing DynamoCheckpoint in the same namespace instead of one the operator creates;
    the graph never owns or deletes it."""
    identity: CheckpointIdentity | None = None
    """Deprecated: what made two checkpoints interchangeable. Ignored with `checkpointRef`."""
    target_container_name: Annotated[ContainerName, schema_default("main")] | None = None
    """The container that is checkpointed and restored; default `main`."""
    job: CheckpointJobConfig | None = None
    """How the Job that takes the checkpoint runs; not allowed with `checkpointRef`."""


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
    mode: Annotated[GPUMemoryServiceMode, schema_default("intraPod")] | None = None
    """`intraPod` (the default): the memory service runs inside each engine pod; `interPod`: in pods of its
    own (Grove and vLLM only). Becomes `IntraPod` or `InterPod` in v1beta1."""
    device_class_name: Annotated[str, schema_default("gpu.nvidia.com")] | None = None
    """The DRA DeviceClass of the GPUs to claim; default `gpu.nvidia.com`."""
    extra_client_containers: list[ContainerName] | None = None
    """Containers besides `main` that also use the shared GPU memory."""
    extra_client_pods: list[GMSClientPod] | None = None
    """Reserved: further pods that use the shared GPU memory in `interPod` mode."""


class FailoverSpec(Model, frozen=True):
    """Active/passive failover of a worker engine; becomes v1beta1 ``experimental.failover`` when enabled."""

    enabled: bool
    """Turns failover on; when false the block has no v1beta1 counterpart and is only kept."""
    mode: Annotated[GPUMemoryServiceMode, schema_default("intraPod")] | None = None
    """`intraPod` (the default) or `interPod`; must be the GPU memory service's mode. Becomes `IntraPod` or
    `InterPod` in v1beta1."""
    num_shadows: Annotated[int, msgspec.Meta(ge=1, extra_json_schema={"default": 1})] | None = None
    """Standby engines per active engine; v1beta1 accepts only 1."""
