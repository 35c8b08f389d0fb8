"""The operator configuration (upstream ``OperatorConfiguration``, supplement §2), YAML-loadable.

Every key of upstream's file is accepted with its upstream default, except where upstream needs a
value at start-up that only its Helm chart supplies: there our defaults name the objects our own
chart and the simulated cluster create, so a fresh install and ``make run`` need no config file
(``docs/decisions.md``). Decoding ignores unknown keys, as for every model; reading a file
(``dgd.domain.admission.config.load_config``) refuses them first, unlike upstream's decoder. Values
are type-checked, and ``validate_config`` applies upstream's start-up validation.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from dgd.messages.base import Model

API_VERSION = "operator.config.dynamo.nvidia.com/v1alpha1"
KIND = "OperatorConfiguration"

#: The upstream operator release whose behaviour we reproduce (origin-version default, supplement §3).
COMPATIBLE_UPSTREAM_VERSION = "1.4.0"

#: Our release and its namespace; the defaults below name objects created there.
RELEASE_NAME = "dynamo-operator"
RELEASE_NAMESPACE = "dynamo-system"


class MetricsServer(Model, frozen=True):
    bind_address: str = "0.0.0.0"
    port: int = 8080
    secure: bool = True


class HealthProbeServer(Model, frozen=True):
    bind_address: str = "0.0.0.0"
    port: int = 8081


class WebhookServer(Model, frozen=True):
    host: str = "0.0.0.0"
    port: int = 9443
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"
    cert_provision_mode: Literal["auto", "manual"] = "auto"
    secret_name: str = "webhook-server-cert"
    service_name: str = f"{RELEASE_NAME}-webhook-service"


class ServerConfig(Model, frozen=True):
    metrics: MetricsServer = MetricsServer()
    health_probe: HealthProbeServer = HealthProbeServer()
    webhook: WebhookServer = WebhookServer()


class LeaderElectionConfig(Model, frozen=True):
    enabled: bool = False
    id: str = ""
    namespace: str = ""


class NamespaceScope(Model, frozen=True):
    lease_duration: str = "30s"
    lease_renew_interval: str = "10s"


class NamespaceConfig(Model, frozen=True):
    """``restricted`` non-empty = namespace-scoped (development) mode for that namespace."""

    restricted: str = ""
    scope: NamespaceScope = NamespaceScope()


class GroveConfig(Model, frozen=True):
    """``enabled``: ``None`` = on when the ``grove.io`` API group is served (dgd-domain §17)."""

    enabled: bool | None = None
    termination_delay: str = "15m"


class GateConfig(Model, frozen=True):
    """A feature gate: ``None`` = decided by API discovery, ``False`` = off, ``True`` = required."""

    enabled: bool | None = None


class OrchestratorsConfig(Model, frozen=True):
    grove: GroveConfig = GroveConfig()
    lws: GateConfig = GateConfig()
    kai_scheduler: GateConfig = GateConfig()
    volcano_scheduler: GateConfig = GateConfig()


class InfrastructureConfig(Model, frozen=True):
    """Injected into every main container (``NATS_SERVER``…) when non-empty; user env wins."""

    nats_address: str = ""
    etcd_address: str = ""
    model_express_url: str = msgspec.field(default="", name="modelExpressURL")
    prometheus_endpoint: str = ""


class IngressConfig(Model, frozen=True):
    """Frontend exposure: an Ingress when ``controller_class_name`` is set (host ``<dgd>.<suffix>``)."""

    virtual_service_gateway: str = ""
    controller_class_name: str = ""
    controller_tls_secret_name: str = msgspec.field(default="", name="controllerTLSSecretName")
    host_suffix: str = ""


class IstioConfig(Model, frozen=True):
    tls_mode: Literal["DISABLE", "SIMPLE", "ISTIO_MUTUAL", "MUTUAL"] = "SIMPLE"
    insecure_skip_verify: bool = True
    client_certificate: str = ""
    private_key: str = ""
    ca_certificates: str = ""


class ServiceMeshConfig(Model, frozen=True):
    enabled: bool | None = None
    provider: str = ""
    istio: IstioConfig | None = None


class RBACConfig(Model, frozen=True):
    """ClusterRoles bound per namespace in cluster-wide mode; our chart creates these names."""

    planner_cluster_role_name: str = f"{RELEASE_NAME}-planner"
    dgdr_profiling_cluster_role_name: str = f"{RELEASE_NAME}-dgdr-profiling"
    epp_cluster_role_name: str = f"{RELEASE_NAME}-epp"


class MPIConfig(Model, frozen=True):
    """The SSH key Secret of TRT-LLM multinode pods (mounted at ``/ssh-pk``)."""

    ssh_secret_name: str = "mpi-run-ssh-secret"
    ssh_secret_namespace: str = RELEASE_NAMESPACE


class SeccompConfig(Model, frozen=True):
    disabled: bool | None = None
    profile: str = ""


class PVCStorage(Model, frozen=True):
    pvc_name: str = ""
    base_path: str = ""
    create: bool = False
    size: str = ""
    storage_class_name: str = ""
    access_mode: str = ""


class CheckpointStorage(Model, frozen=True):
    type: str = ""
    pvc: PVCStorage = PVCStorage()


class CheckpointConfig(Model, frozen=True):
    enabled: bool = False
    seccomp: SeccompConfig = SeccompConfig()
    storage: CheckpointStorage = CheckpointStorage()
    cleanup_image: str = ""


class DiscoveryConfig(Model, frozen=True):
    backend: Literal["kubernetes", "etcd"] = "kubernetes"


class GPUConfig(Model, frozen=True):
    discovery_enabled: bool = True


class LoggingConfig(Model, frozen=True):
    level: str = "info"
    format: str = "json"


class SecurityConfig(Model, frozen=True):
    enable_http2: bool = msgspec.field(default=False, name="enableHTTP2")


class RolloutConfig(Model, frozen=True):
    """The managed worker rollout (Component pathway): a rollout that makes no visible progress for
    ``progressDeadline`` (a duration; ``0`` turns the deadline off) becomes ``Failed``."""

    progress_deadline: str = "30m"


class OperatorConfig(Model, frozen=True, kw_only=True):
    """The whole configuration; every rendering function takes it as an argument."""

    api_version: str = API_VERSION
    kind: str = KIND
    server: ServerConfig = ServerConfig()
    leader_election: LeaderElectionConfig = LeaderElectionConfig()
    namespace: NamespaceConfig = NamespaceConfig()
    orchestrators: OrchestratorsConfig = OrchestratorsConfig()
    dra: GateConfig = GateConfig()
    infrastructure: InfrastructureConfig = InfrastructureConfig()
    ingress: IngressConfig = IngressConfig()
    service_mesh: ServiceMeshConfig = ServiceMeshConfig()
    rbac: RBACConfig = RBACConfig()
    mpi: MPIConfig = MPIConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    discovery: DiscoveryConfig = DiscoveryConfig()
    gpu: GPUConfig = GPUConfig()
    logging: LoggingConfig = LoggingConfig()
    security: SecurityConfig = SecurityConfig()
    rollout: RolloutConfig = RolloutConfig()


class ConfigError(ValueError):
    """A configuration file the operator cannot start with; the message names the key."""


_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]*)?(?:ns|us|µs|ms|s|m|h))+$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds of a Go duration (``15m``, ``1h30m``, ``0``, ``-5s``); ``ValueError`` if it is not one."""
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    if not _DURATION.match(body):
        raise ValueError(f"{text!r} is not a duration such as 15m, 4h or 1h30m")
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(body))


def format_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` for whole seconds: ``15m0s``, ``4h0m0s``, ``30s``, ``0s``."""
    total = round(seconds)
    if total == 0:
        return "0s"
    sign = "-" if total < 0 else ""
    hours, rest = divmod(abs(total), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{sign}{minutes}m{secs}s"
    return f"{sign}{secs}s"


def decode_config(raw: dict[str, Any]) -> OperatorConfig:
    """Decode, default and validate a configuration already parsed from YAML or JSON. Keys it does not
    know are ignored here: ``dgd.domain.admission.config.load_config`` refuses them before decoding."""
    try:
        config = msgspec.convert(raw, OperatorConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(str(exc)) from exc
    return validate_config(config)


def validate_config(config: OperatorConfig) -> OperatorConfig:
    """Upstream's start-up defaulting and validation: zero durations become the default."""
    grove = config.orchestrators.grove
    try:
        delay = parse_duration(grove.termination_delay) if grove.termination_delay else 0.0
    except ValueError as exc:
        raise ConfigError(f"orchestrators.grove.terminationDelay: {exc}") from exc
    if delay < 0:
        raise ConfigError(
            f"orchestrators.grove.terminationDelay: {grove.termination_delay!r} must not be negative"
        )
    if delay == 0:
        grove = msgspec.structs.replace(grove, termination_delay="15m")
    try:
        deadline = parse_duration(config.rollout.progress_deadline)
    except ValueError as exc:
        raise ConfigError(f"rollout.progressDeadline: {exc}") from exc
    if deadline < 0:
        raise ConfigError(
            f"rollout.progressDeadline: {config.rollout.progress_deadline!r} must not be negative"
        )
    if config.leader_election.enabled and not config.leader_election.id:
        raise ConfigError("leaderElection.id: leader election ID is required when leader election is enabled")
    if not config.namespace.restricted:
        for key, value, what in (
            ("plannerClusterRoleName", config.rbac.planner_cluster_role_name, "planner"),
            ("dgdrProfilingClusterRoleName", config.rbac.dgdr_profiling_cluster_role_name, "DGDR profiling"),
            ("eppClusterRoleName", config.rbac.epp_cluster_role_name, "EPP"),
        ):
            if not value:
                raise ConfigError(
                    f"rbac.{key}: Required value: {what} ClusterRole name is required in cluster-wide mode"
                )
    _validate_service_mesh(config.service_mesh)
    if not config.mpi.ssh_secret_name or not config.mpi.ssh_secret_namespace:
        raise ConfigError("mpi.sshSecretName and mpi.sshSecretNamespace are required")
    orchestrators = msgspec.structs.replace(config.orchestrators, grove=grove)
    return msgspec.structs.replace(config, orchestrators=orchestrators)


def _validate_service_mesh(mesh: ServiceMeshConfig) -> None:
    """With the Istio provider on, its settings must say how to reach the EPP (upstream's start-up
    validation: the DestinationRule would otherwise be refused, or say nothing)."""
    if mesh.provider != "istio" or mesh.enabled is False:
        return
    if mesh.istio is None:
        raise ConfigError(
            "serviceMesh.istio: Required value: istio configuration is required when "
            'serviceMesh.provider is "istio"'
        )
    if mesh.istio.tls_mode == "MUTUAL":
        for key, value in (
            ("clientCertificate", mesh.istio.client_certificate),
            ("privateKey", mesh.istio.private_key),
        ):
            if not value:
                raise ConfigError(
                    f'serviceMesh.istio.{key}: Required value: {key} is required when tlsMode is "MUTUAL"'
                )


def progress_deadline(config: OperatorConfig) -> float | None:
    """Seconds a rollout may go without progress before it is ``Failed`` (``None``: no deadline)."""
    seconds = parse_duration(config.rollout.progress_deadline)
    return seconds if seconds > 0 else None


def termination_delay(config: OperatorConfig) -> str:
    """The Grove termination delay as Go prints it in a PodCliqueSet (``15m0s``)."""
    return format_duration(parse_duration(config.orchestrators.grove.termination_delay))
