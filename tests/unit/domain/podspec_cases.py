"""Builders shared by the pod-spec tests: a component from a few facts, and its rendered pod spec."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.render.backends import Backend, RenderRole
from dgd.domain.render.multinode_hosts import Deployer
from dgd.domain.render.podspec import PullSecrets, render_pod_spec
from dgd.messages.component import ComponentSpec
from dgd.messages.config import OperatorConfig

NAMESPACE, DGD = "ns", "graph"
GROVE_LEADER = "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-engine-ldr-0.$(GROVE_HEADLESS_SERVICE)"
GROVE_WORKER_0 = "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-engine-wkr-0.$(GROVE_HEADLESS_SERVICE)"
GROVE_RANK = "$((GROVE_PCLQ_POD_INDEX + 1))"

#: The common env of §4.1, every component's.
COMMON_ENV = [
    "DYN_COMPONENT",
    "DYN_DISCOVERY_BACKEND",
    "DYN_NAMESPACE",
    "DYN_PARENT_DGD_K8S_NAME",
    "DYN_PARENT_DGD_K8S_NAMESPACE",
    "POD_NAME",
    "POD_NAMESPACE",
    "POD_UID",
]
#: The common env with the worker env of §4.2, sorted (no worker hash, pod discovery).
WORKER_ENV = sorted(
    [
        *COMMON_ENV,
        "DYN_FORWARDPASS_METRIC_PORT",
        "DYN_HEALTH_CHECK_ENABLED",
        "DYN_SYSTEM_ENABLED",
        "DYN_SYSTEM_PORT",
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS",
        "NIXL_TELEMETRY_ENABLE",
        "NIXL_TELEMETRY_EXPORTER",
        "NIXL_TELEMETRY_PROMETHEUS_PORT",
    ]
)
FRONTEND_ENV = sorted([*COMMON_ENV, "DYNAMO_PORT", "DYN_HTTP_PORT", "DYN_NAMESPACE_PREFIX"])
PLANNER_ENV = sorted([*COMMON_ENV, "DYN_SYSTEM_PORT", "PLANNER_PROMETHEUS_PORT"])
EPP_ENV = sorted([*COMMON_ENV, "DYN_ENFORCE_DISAGG", "DYN_NAMESPACE_PREFIX", "RUST_LOG", "USE_STREAMING"])

WORKER_PORTS = [
    {"name": "system", "containerPort": 9090, "protocol": "TCP"},
    {"name": "nixl", "containerPort": 19090, "protocol": "TCP"},
]


def _http(
    path: str, port: str, period: int, timeout: int, failure: int, delay: int | None = None
) -> dict[str, Any]:
    probe: dict[str, Any] = {"httpGet": {"path": path, "port": port}}
    if delay is not None:
        probe["initialDelaySeconds"] = delay
    return {**probe, "periodSeconds": period, "timeoutSeconds": timeout, "failureThreshold": failure}


def _grpc(**numbers: int) -> dict[str, Any]:
    return {"grpc": {"port": 9003, "service": "inference-extension"}, **numbers}


WORKER_PROBES = {
    "livenessProbe": _http("/live", "system", 5, 4, 1),
    "readinessProbe": _http("/health", "system", 10, 4, 3),
    "startupProbe": _http("/live", "system", 10, 5, 720),
}
FRONTEND_PROBES = {
    "livenessProbe": _http("/live", "http", 10, 1, 3, delay=15),
    "readinessProbe": _http("/health", "http", 10, 3, 3, delay=10),
}
EPP_PROBES = {
    "livenessProbe": _grpc(initialDelaySeconds=5, periodSeconds=10),
    "readinessProbe": _grpc(initialDelaySeconds=5, periodSeconds=10),
    "startupProbe": _grpc(periodSeconds=10, failureThreshold=180),
}
TRTLLM_WORKER_READINESS = {
    "readinessProbe": {"tcpSocket": {"port": 2222}, "initialDelaySeconds": 20, "periodSeconds": 20,
                       "timeoutSeconds": 5, "failureThreshold": 10},
}  # fmt: skip


def component(
    type_: str,
    *,
    name: str = "engine",
    command: list[str] | None = None,
    args: list[str] | None = None,
    gpus: int | None = None,
    nodes: int = 1,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    main: dict[str, Any] | None = None,
    pod: dict[str, Any] | None = None,
    sidecars: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> ComponentSpec:
    """A component whose pod template has a ``main`` container built from the given facts."""
    container: dict[str, Any] = {"name": "main", "image": "nvcr.io/nvidia/ai-dynamo/runtime:1.4.0"}
    if command is not None:
        container["command"] = command
    if args is not None:
        container["args"] = args
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    container.update(main or {})
    template: dict[str, Any] = {"spec": {**(pod or {}), "containers": [container, *(sidecars or [])]}}
    metadata = {k: v for k, v in (("annotations", annotations), ("labels", labels)) if v}
    if metadata:
        template["metadata"] = metadata
    document: dict[str, Any] = {"name": name, "type": type_, "podTemplate": template, **fields}
    if nodes > 1:
        document["multinode"] = {"nodeCount": nodes}
    return msgspec.convert(document, ComponentSpec)


def render(
    spec: ComponentSpec,
    *,
    role: RenderRole = "main",
    backend: Backend = "noop",
    deployer: Deployer = "grove",
    config: OperatorConfig | None = None,
    pull_secrets: PullSecrets | None = None,
) -> dict[str, Any]:
    return render_pod_spec(
        spec,
        role=role,
        backend=backend,
        deployer=deployer,
        namespace=NAMESPACE,
        parent_dgd_name=DGD,
        config=config or OperatorConfig(),
        pull_secrets=pull_secrets,
    )


def env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


def probes(container: dict[str, Any]) -> dict[str, Any]:
    return {k: container[k] for k in ("livenessProbe", "readinessProbe", "startupProbe") if k in container}


ORIGIN_1_4 = {"nvidia.com/dynamo-operator-origin-version": "1.4.0"}
VLLM = ["python3", "-m", "dynamo.vllm"]
SGLANG = ["python3", "-m", "dynamo.sglang"]
TRTLLM = ["python3", "-m", "dynamo.trtllm"]
TP2 = ["--model", "Qwen/Qwen3-0.6B", "--tensor-parallel-size", "2"]
