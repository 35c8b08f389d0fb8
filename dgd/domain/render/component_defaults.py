"""What the operator puts into a pod before the user's template is laid over it (podspec §4).

One base container and one base pod spec per component type, as raw JSON. Env lists come out
unsorted here; the pod-spec renderer sorts them when it merges the user's env (podspec §5.3).
"""

from __future__ import annotations

from dgd.domain.pod_merge import JSON, field_env, value_env
from dgd.messages.component import WORKER_TYPES

MAIN_CONTAINER = "main"
FRONTEND_PORT, SYSTEM_PORT, NIXL_PORT, FORWARD_PASS_PORT, PLANNER_METRICS_PORT = (
    8000,
    9090,
    19090,
    20380,
    9085,
)
EPP_GRPC_PORT, EPP_HEALTH_PORT, EPP_METRICS_PORT = 9002, 9003, 9090
DEFAULT_FS_GROUP = 1000
TERMINATION_GRACE_SECONDS = 60
EPP_TERMINATION_GRACE_SECONDS = 130
PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"
EPP_SERVICE_ACCOUNT = "epp-serviceaccount"
EPP_CONFIG_FILE = "epp-config-dynamo.yaml"


def _port(name: str, number: int) -> JSON:
    return {"name": name, "containerPort": number, "protocol": "TCP"}


def _http_probe(
    path: str, port: str, *, delay: int | None, period: int, timeout: int | None, failure: int | None
) -> JSON:
    probe: JSON = {"httpGet": {"path": path, "port": port}}
    if delay is not None:
        probe["initialDelaySeconds"] = delay
    probe["periodSeconds"] = period
    if timeout is not None:
        probe["timeoutSeconds"] = timeout
    if failure is not None:
        probe["failureThreshold"] = failure
    return probe


def _grpc_probe(*, delay: int | None, failure: int | None) -> JSON:
    probe: JSON = {"grpc": {"port": EPP_HEALTH_PORT, "service": "inference-extension"}}
    if delay is not None:
        probe["initialDelaySeconds"] = delay
    probe["periodSeconds"] = 10
    if failure is not None:
        probe["failureThreshold"] = failure
    return probe


def _system_probes() -> JSON:
    """Liveness, readiness and startup of workers and the planner (podspec §4.3)."""
    return {
        "livenessProbe": _http_probe("/live", "system", delay=None, period=5, timeout=4, failure=1),
        "readinessProbe": _http_probe("/health", "system", delay=None, period=10, timeout=4, failure=3),
        "startupProbe": _http_probe("/live", "system", delay=None, period=10, timeout=5, failure=720),
    }


def common_env(
    component_type: str,
    *,
    dynamo_namespace: str,
    parent_dgd_name: str,
    namespace: str,
    discovery_backend: str,
    discovery_mode: str,
) -> list[JSON]:
    """Env every component gets (podspec §4.1); ``DYN_COMPONENT`` carries the type, not the name."""
    env = [
        value_env("DYN_NAMESPACE", dynamo_namespace),
        value_env("DYN_COMPONENT", component_type),
        value_env("DYN_PARENT_DGD_K8S_NAME", parent_dgd_name),
        value_env("DYN_PARENT_DGD_K8S_NAMESPACE", namespace),
        field_env("POD_NAME", "metadata.name"),
        field_env("POD_NAMESPACE", "metadata.namespace"),
        field_env("POD_UID", "metadata.uid"),
    ]
    if discovery_backend != "etcd":
        env.append(value_env("DYN_DISCOVERY_BACKEND", "kubernetes"))
    if discovery_mode == "container":
        env += [
            value_env("CONTAINER_NAME", MAIN_CONTAINER),
            value_env("DYN_KUBE_DISCOVERY_MODE", "container"),
        ]
    return env


def base_container(
    component_type: str,
    *,
    env: list[JSON],
    dynamo_namespace: str,
    worker_hash: str | None,
    dgd_name: str,
    namespace: str,
) -> JSON:
    """The operator's ``main`` container for a component type, given the common env (podspec §4.2)."""
    container: JSON = {"name": MAIN_CONTAINER, "command": ["/bin/sh", "-c"]}
    env = list(env)
    if component_type == "frontend":
        container.update(command=["python3"], args=["-m", "dynamo.frontend"])
        container["ports"] = [_port("http", FRONTEND_PORT)]
        env += [
            value_env("DYNAMO_PORT", str(FRONTEND_PORT)),
            value_env("DYN_HTTP_PORT", str(FRONTEND_PORT)),
            value_env("DYN_NAMESPACE_PREFIX", dynamo_namespace),
        ]
        container["livenessProbe"] = _http_probe("/live", "http", delay=15, period=10, timeout=1, failure=3)
        container["readinessProbe"] = _http_probe(
            "/health", "http", delay=10, period=10, timeout=3, failure=3
        )
    elif component_type in WORKER_TYPES:
        container["ports"] = [_port("system", SYSTEM_PORT), _port("nixl", NIXL_PORT)]
        env += [
            value_env("DYN_SYSTEM_ENABLED", "true"),
            value_env("DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS", '["generate"]'),
            value_env("DYN_SYSTEM_PORT", str(SYSTEM_PORT)),
            value_env("DYN_HEALTH_CHECK_ENABLED", "false"),
            value_env("NIXL_TELEMETRY_ENABLE", "n"),
            value_env("NIXL_TELEMETRY_EXPORTER", "prometheus"),
            value_env("NIXL_TELEMETRY_PROMETHEUS_PORT", str(NIXL_PORT)),
            value_env("DYN_FORWARDPASS_METRIC_PORT", str(FORWARD_PASS_PORT)),
        ]
        if worker_hash:
            env.append(value_env("DYN_NAMESPACE_WORKER_SUFFIX", worker_hash))
        container.update(_system_probes())
    elif component_type == "planner":
        container["ports"] = [_port("metrics", PLANNER_METRICS_PORT), _port("system", SYSTEM_PORT)]
        env += [
            value_env("PLANNER_PROMETHEUS_PORT", str(PLANNER_METRICS_PORT)),
            value_env("DYN_SYSTEM_PORT", str(SYSTEM_PORT)),
        ]
        container.update(_system_probes())
    elif component_type == "epp":
        del container["command"]
        container["args"] = epp_args(dgd_name, namespace)
        container["ports"] = [
            _port("grpc", EPP_GRPC_PORT),
            _port("grpc-health", EPP_HEALTH_PORT),
            _port("metrics", EPP_METRICS_PORT),
        ]
        env += [
            value_env("USE_STREAMING", "true"),
            value_env("RUST_LOG", "info"),
            value_env("DYN_ENFORCE_DISAGG", "false"),
            value_env("DYN_NAMESPACE_PREFIX", dynamo_namespace),
        ]
        container["volumeMounts"] = [
            {"name": "epp-config", "mountPath": "/etc/epp", "readOnly": True},
            {"name": "hf-cache", "mountPath": "/home/nonroot/.cache"},
        ]
        container["livenessProbe"] = _grpc_probe(delay=5, failure=None)
        container["readinessProbe"] = _grpc_probe(delay=5, failure=None)
        container["startupProbe"] = _grpc_probe(delay=None, failure=180)
    container["env"] = env
    return container


def epp_args(dgd_name: str, namespace: str) -> list[str]:
    """The endpoint picker's command line (podspec §4.2)."""
    return [
        "--pool-name",
        f"{dgd_name}-pool",
        "--pool-namespace",
        namespace,
        "--pool-group",
        "inference.networking.k8s.io",
        "-v",
        "4",
        "--zap-encoder",
        "json",
        "--grpc-port",
        str(EPP_GRPC_PORT),
        "--grpc-health-port",
        str(EPP_HEALTH_PORT),
        "--config-file",
        f"/etc/epp/{EPP_CONFIG_FILE}",
    ]


def base_pod_spec(
    component_type: str, *, dgd_name: str, epp_config_map: str | None, epp_config_key: str | None
) -> JSON:
    """The operator's pod-level defaults for a component type (podspec §4.1–§4.2)."""
    spec: JSON = {"terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS, "restartPolicy": "Always"}
    if component_type == "planner":
        spec["serviceAccountName"] = PLANNER_SERVICE_ACCOUNT
    elif component_type == "epp":
        spec["serviceAccountName"] = EPP_SERVICE_ACCOUNT
        spec["terminationGracePeriodSeconds"] = EPP_TERMINATION_GRACE_SECONDS
        config_map = {
            "name": epp_config_map or f"{dgd_name}-epp-config",
            "items": [{"key": epp_config_key or EPP_CONFIG_FILE, "path": EPP_CONFIG_FILE}],
        }
        spec["volumes"] = [
            {"name": "epp-config", "configMap": config_map},
            {"name": "hf-cache", "emptyDir": {}},
        ]
    return spec
