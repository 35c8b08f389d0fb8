"""Backend-specific changes to a worker's main container and pod: vLLM and SGLang (podspec §7.3–§7.4).

``update_container`` and ``update_pod_spec`` dispatch on the backend framework (TRT-LLM lives in
``render_trtllm``); ``noop`` changes nothing. Every function returns new objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from dgd.domain.metadata_keys import ORIGIN_VERSION, VLLM_EXECUTOR_BACKEND
from dgd.domain.pod_merge import JSON, field_env, value_env
from dgd.domain.render import command_line as cl
from dgd.domain.render import multinode_hosts as hosts
from dgd.domain.render import trtllm as render_trtllm
from dgd.domain.render.gpu_count import container_gpus
from dgd.domain.render.multinode_hosts import Deployer
from dgd.domain.semver import parse_lenient

Backend = Literal["vllm", "sglang", "trtllm", "noop"]
#: The inter-pod GMS layout of a component: without failover (``standalone``), with it, or none.
GMSLayout = Literal["standalone", "failover"] | None
RenderRole = Literal["main", "leader", "worker"]

RAY_PORT, MP_MASTER_PORT, DP_RPC_PORT, SGLANG_DIST_PORT = "6379", "29500", "13445", "29500"
SYSTEM_PORT = 9090
WAIT_LEADER_VOLUME, WAIT_LEADER_MOUNT, WAIT_LEADER_KEY = (
    "wait-leader-script",
    "/scripts",
    "wait-for-leader.py",
)
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_K8S_VAR = re.compile(r"\$\((\w+)\)")
_MP_SINCE = (1, 0, 0)


def update_container(
    backend: Backend,
    container: JSON,
    *,
    role: RenderRole,
    nodes: int,
    service: str,
    deployer: Deployer,
    annotations: dict[str, str],
    cache_mount_path: str | None,
    mpi_secret: str,
    count_gpus: Callable[[JSON], int] = container_gpus,
    gms_layout: GMSLayout = None,
) -> JSON:
    """The main container after the backend's changes (step 8 of podspec §3); ``count_gpus`` counts the
    container's GPUs (DRA claims included) when a multinode launch needs them; ``gms_layout`` says
    whether the component runs the inter-pod GMS layout, and with failover."""
    if backend == "vllm":
        return _vllm_container(
            container, role, nodes, service, deployer, annotations, cache_mount_path, count_gpus, gms_layout
        )
    if backend == "sglang":
        return _sglang_container(container, role, nodes, service, deployer)
    if backend == "trtllm":
        if nodes <= 1:
            return dict(container)
        return render_trtllm.update_container(
            container, role=role, nodes=nodes, service=service, deployer=deployer, mpi_secret=mpi_secret,
            count_gpus=count_gpus,
        )  # fmt: skip
    return dict(container)


def update_pod_spec(
    backend: Backend, pod_spec: JSON, *, role: RenderRole, nodes: int, service: str, deployer: Deployer,
    parent_dgd_name: str, mpi_secret: str,
) -> JSON:  # fmt: skip
    """The pod spec after the backend's pod-level changes (step 18 of podspec §3)."""
    if backend == "trtllm" and nodes > 1:
        return render_trtllm.update_pod_spec(pod_spec, mpi_secret=mpi_secret)
    if backend != "vllm" or nodes <= 1 or role != "worker" or not parent_dgd_name:
        return pod_spec
    containers = pod_spec.get("containers") or []
    if not containers or not cl.command_line_has_arg(containers[0], "--distributed-executor-backend", "mp"):
        return pod_spec
    # mp workers wait for the leader's master port before the engine starts.
    leader = _K8S_VAR.sub(r"${\1}", hosts.leader_host(deployer, service))
    init = {
        "name": "wait-for-leader-mp",
        "image": containers[0].get("image", ""),
        "command": [
            "sh",
            "-c",
            f'export LEADER_HOST="{leader}" LEADER_PORT="{MP_MASTER_PORT}" && '
            f"exec python3 {WAIT_LEADER_MOUNT}/{WAIT_LEADER_KEY}",
        ],
        "volumeMounts": [{"name": WAIT_LEADER_VOLUME, "mountPath": WAIT_LEADER_MOUNT, "readOnly": True}],
    }
    volume = {"name": WAIT_LEADER_VOLUME, "configMap": {"name": f"{parent_dgd_name}-wait-leader-script"}}
    out = dict(pod_spec)
    out["volumes"] = [*(pod_spec.get("volumes") or []), volume]
    out["initContainers"] = [*(pod_spec.get("initContainers") or []), init]
    return out


def uses_mp_backend(annotations: dict[str, str]) -> bool:
    """vLLM multinode launch: ``mp`` by annotation, else for DGDs created by ≥ 1.0.0 (supplement §3)."""
    override = annotations.get(VLLM_EXECUTOR_BACKEND, "").lower()
    if override in ("mp", "ray"):
        return override == "mp"
    origin = annotations.get(ORIGIN_VERSION)
    parsed = parse_lenient(origin) if origin else None
    # A pre-release (1.0.0-rc1) sorts before its release.
    prerelease = origin is not None and "-" in origin.split("+", 1)[0]
    return parsed is not None and (parsed > _MP_SINCE or (parsed == _MP_SINCE and not prerelease))


def _vllm_container(
    container: JSON,
    role: RenderRole,
    nodes: int,
    service: str,
    deployer: Deployer,
    annotations: dict[str, str],
    cache_mount_path: str | None,
    count_gpus: Callable[[JSON], int],
    gms_layout: GMSLayout,
) -> JSON:
    out = dict(container)
    env = list(container.get("env") or [])
    if gms_layout is not None:
        # Inter-pod GMS engines load their weights from the GMS weight server (podspec §7.3).
        if not cl.command_line_has_arg(out, "--load-format", "gms"):
            out = cl.inject_flags(out, "--load-format gms", needs_shell=False, framework="vllm")
        if gms_layout == "failover":
            env.append(value_env("DYN_VLLM_GMS_SHADOW_MODE", "true"))
    if nodes > 1:
        gpus = count_gpus(container)
        out = _vllm_multinode(out, role, nodes, service, deployer, gpus, uses_mp_backend(annotations))
        if uses_mp_backend(annotations):
            env.append(field_env("VLLM_NIXL_SIDE_CHANNEL_HOST", "status.podIP"))
        if role == "worker":
            out = {k: v for k, v in out.items() if k not in _PROBES}
    elif role == "main" and _is_elastic_ray_launch(container) and cl.command(container):
        # A single-pod elastic-EP component still heads a Ray cluster for followers to join.
        out = _elastic(out, "main", service, deployer)
        env += [field_env("POD_IP", "status.podIP"), field_env("VLLM_DP_MASTER_IP", "status.podIP")]
    if cache_mount_path:
        env.append(value_env("VLLM_CACHE_ROOT", cache_mount_path))
    out["env"] = env
    return out


def _vllm_multinode(
    container: JSON, role: RenderRole, nodes: int, service: str, deployer: Deployer, gpus: int, mp: bool
) -> JSON:
    tokens = cl.expanded(cl.args(container))
    world = cl.flag_value(tokens, "--tensor-parallel-size") * cl.flag_value(
        tokens, "--pipeline-parallel-size"
    )
    leader = hosts.leader_host(deployer, service)
    if gpus > 0 and world > gpus and mp:
        flags = (
            f"--distributed-executor-backend mp --nnodes {nodes} "
            f"--master-addr {leader} --master-port {MP_MASTER_PORT}"
        )
        if role == "leader":
            return cl.inject_flags(container, flags + " --node-rank 0", needs_shell=False, framework="vllm")
        rank, shell = hosts.node_rank(deployer)
        return cl.inject_flags(
            container, f"{flags} --node-rank {rank} --headless", needs_shell=shell, framework="vllm"
        )
    if gpus > 0 and world > gpus:
        return _ray(container, role, leader)
    if cl.has_flag(tokens, "--enable-elastic-ep"):
        if role == "leader" and not cl.command(container):
            return container
        return _elastic(container, role, service, deployer)
    dp = cl.flag_value(tokens, "--data-parallel-size")
    if gpus > 0 and world * dp > gpus:
        return _data_parallel(container, role, tokens, leader, deployer, gpus // world, nodes)
    return container


def _ray(container: JSON, role: RenderRole, leader: str) -> JSON:
    out = dict(container)
    if role == "leader":
        cmd = " ".join(cl.quote_bash_c(t) for t in cl.command(container))
        arguments = " ".join(cl.quote_bash_c(a) for a in cl.args(container))
        out["args"] = [
            f"ray start --head --port={RAY_PORT} && {cmd} {arguments} --distributed-executor-backend ray"
        ]
    else:
        out["args"] = [f"ray start --address={leader}:{RAY_PORT} --block"]
    out["command"] = ["/bin/sh", "-c"]
    return out


def _elastic(container: JSON, role: RenderRole, service: str, deployer: Deployer) -> JSON:
    out = dict(container)
    if role == "worker":
        leader = hosts.leader_host(deployer, service)
        url = f"http://{leader}:{SYSTEM_PORT}/live"
        gate = (
            f"i=0; until python3 -c \"import urllib.request; urllib.request.urlopen('{url}', timeout=5)\" "
            '2>/dev/null; do i=$((i+1)); [ "$i" -ge 720 ] && '
            '{ echo "ERROR: leader /live did not become ready within 3h" >&2; exit 1; }; '
            "echo 'waiting for leader dynamo.vllm /live to return 200...'; sleep 15; done"
        )
        out["args"] = [f"{gate} && ray start --address={leader}:{RAY_PORT} --block"]
    else:
        engine = " ".join(cl.quote_posix(t) for t in cl.command(container))
        engine = (engine + " " + " ".join(cl.quote_posix(a) for a in cl.args(container))).strip()
        node_ip = ' --node-ip-address="$POD_IP"' if role == "main" else ""
        run = f"exec {engine}" if role == "main" else engine
        out["args"] = [
            f'ray start --head --port={RAY_PORT}{node_ip} --block & i=0; until python3 -c "import socket; '
            f"s=socket.create_connection(('127.0.0.1',{RAY_PORT}),timeout=1); s.close()\" 2>/dev/null; do "
            'i=$((i+1)); [ "$i" -ge 150 ] && '
            '{ echo "ERROR: Ray head did not start within 300s" >&2; exit 1; }; '
            f"sleep 2; done && {run}"
        ]
    out["command"] = ["/bin/sh", "-c"]
    return out


def _data_parallel(
    container: JSON,
    role: RenderRole,
    tokens: list[str],
    leader: str,
    deployer: Deployer,
    local: int,
    nodes: int,
) -> JSON:
    total = cl.flag_value(tokens, "--data-parallel-size")
    if total == 1:
        total = local * nodes
    flags = ["--data-parallel-hybrid-lb"]
    if not cl.has_flag(tokens, "--data-parallel-size"):
        flags += ["--data-parallel-size", str(total)]
    start, shell = "0", False
    if role == "worker":
        rank, _ = hosts.node_rank(deployer)
        start, shell = f"$(( {local} * {rank} ))", True
    flags += ["--data-parallel-size-local", str(local), "--data-parallel-start-rank", start]
    flags += ["--data-parallel-address", leader, "--data-parallel-rpc-port", DP_RPC_PORT]
    return cl.inject_flags(container, " ".join(flags), needs_shell=shell, framework="vllm")


def _is_elastic_ray_launch(container: JSON) -> bool:
    tokens = cl.expanded([*cl.command(container), *cl.args(container)])
    ray = cl.has_arg(tokens, "--data-parallel-backend", "ray") or cl.has_arg(tokens, "-dpb", "ray")
    return cl.has_flag(tokens, "--enable-elastic-ep") and ray


def launches_ray_head(container: JSON, nodes: int) -> bool:
    """Whether a single-pod vLLM main container heads an elastic-EP Ray cluster (needs a Service)."""
    return nodes == 1 and _is_elastic_ray_launch(container) and bool(cl.command(container))


def _sglang_container(
    container: JSON, role: RenderRole, nodes: int, service: str, deployer: Deployer
) -> JSON:
    if nodes <= 1:
        return dict(container)
    leader = hosts.leader_host(deployer, service)
    rank, shell = ("0", False) if role == "leader" else hosts.node_rank(deployer)
    flags = f"--dist-init-addr {leader}:{SGLANG_DIST_PORT} --nnodes {nodes} --node-rank {rank}"
    out = cl.inject_flags(container, flags, needs_shell=shell, framework="sglang")
    if role == "worker":
        out = {k: v for k, v in out.items() if k not in _PROBES}
    return out
