"""Intra-pod active/passive failover: the main container cloned into engines (podspec §3 step 21, §10).

With ``experimental.failover`` (mode ``IntraPod``) the pod, already wired for the GPU memory service,
runs ``1 + numShadows`` copies of the main container named ``engine-<i>`` that share the GPUs: the
engines race for a lock file in the GMS socket directory, the winner serves and the others stand by.
Each engine has its own system port ``system-<i>`` = 9090 + i (its probes follow it). vLLM only
(upstream at the spec's commit): each engine is told it is a GMS shadow, gets its own NIXL side-channel
port, and every engine after the first its own torch.distributed ``--master-port``.

Shapes follow upstream ``deploy/operator/internal/dynamo/failover.go`` and ``failover_vllm.go``.
"""

from __future__ import annotations

import copy

from dgd.domain.pod_merge import JSON, value_env
from dgd.domain.render.errors import RenderError
from dgd.domain.render.gms import SOCKET_DIR
from dgd.domain.roles import failover_mode
from dgd.messages.component import ComponentSpec

SYSTEM_PORT = 9090
NIXL_SIDE_CHANNEL_PORT = 5600
MASTER_PORT, MASTER_PORT_STRIDE, MASTER_PORT_FLAG = 29500, 100, "--master-port"
LOCK_FILE = f"{SOCKET_DIR}/failover.lock"
#: Env the engines get afresh (their per-engine values) or must not inherit.
_REPLACED_ENV = frozenset(
    (
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS",
        "DYN_SYSTEM_PORT",
        "DYN_SYSTEM_ENABLED",
        "DYN_HEALTH_CHECK_ENABLED",
        "CONTAINER_NAME",
    )
)
_PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def uses_intra_pod_failover(component: ComponentSpec) -> bool:
    return failover_mode(component) == "IntraPod"


def engine_names(component: ComponentSpec) -> list[str]:
    """The engine containers of an intra-pod failover component (restore targets, dgd-domain §10.3)."""
    if not uses_intra_pod_failover(component):
        return []
    experimental = component.experimental
    shadows = (experimental.failover.num_shadows if experimental and experimental.failover else None) or 1
    return [f"engine-{i}" for i in range(1 + shadows)]


def apply_intra_pod_failover(pod: JSON, component: ComponentSpec, *, backend: str, nodes: int) -> JSON:
    """The pod with its main container replaced by the engines; the other containers are kept."""
    if backend != "vllm":
        raise RenderError(
            "experimental.failover", f"failover is currently supported only for vLLM (detected: {backend})"
        )
    pod = copy.deepcopy(pod)
    main, *sidecars = pod["containers"]
    engines = [_engine(main, index, nodes) for index, _ in enumerate(engine_names(component))]
    pod["containers"] = [*engines, *sidecars]
    return pod


def _engine(main: JSON, index: int, nodes: int) -> JSON:
    """One engine: the main container under its own name, system port and failover identity."""
    name, port_name, port = f"engine-{index}", f"system-{index}", SYSTEM_PORT + index
    engine = copy.deepcopy(main)
    engine["name"] = name
    engine["ports"] = [{"name": port_name, "containerPort": port, "protocol": "TCP"}]
    env = [e for e in engine.get("env") or [] if e.get("name") not in _REPLACED_ENV]
    env += [
        value_env("ENGINE_ID", str(index)),
        value_env("CONTAINER_NAME", name),
        value_env("FAILOVER_LOCK_PATH", LOCK_FILE),
        value_env("DYN_SYSTEM_STARTING_HEALTH_STATUS", "notready"),
        value_env("DYN_SYSTEM_PORT", str(port)),
        value_env("DYN_SYSTEM_ENABLED", "true"),
    ]
    # The probes inherited from main name main's port: each engine probes its own.
    for probe in _PROBES:
        http = (engine.get(probe) or {}).get("httpGet")
        if http is not None:
            http["port"] = port_name
    # vLLM: a shadow engine per GPU memory service; ports of engines sharing one network must differ.
    env += [
        value_env("DYN_VLLM_GMS_SHADOW_MODE", "true"),
        value_env("VLLM_NIXL_SIDE_CHANNEL_PORT", str(NIXL_SIDE_CHANNEL_PORT + index)),
    ]
    if index > 0:
        engine["args"] = _staggered_master_port(list(engine.get("args") or []), index)
    if nodes > 1:
        env.append(value_env("NNODES", str(nodes)))
    engine["env"] = env
    return engine


def _staggered_master_port(args: list[str], index: int) -> list[str]:
    """Engine ``index``'s args: its ``--master-port`` moved by ``index * 100``, added when absent."""
    offset = index * MASTER_PORT_STRIDE
    for at, arg in enumerate(args):
        if arg == MASTER_PORT_FLAG and at + 1 < len(args) and args[at + 1].isdigit():
            return [*args[: at + 1], str(int(args[at + 1]) + offset), *args[at + 2 :]]
    for at, arg in enumerate(args):
        marker = f"{MASTER_PORT_FLAG} "
        if marker in arg:
            digits = arg.split(marker, 1)[1]
            value = digits[: len(digits) - len(digits.lstrip("0123456789"))]
            if value:
                moved = arg.replace(marker + value, f"{marker}{int(value) + offset}", 1)
                return [*args[:at], moved, *args[at + 1 :]]
    if any(arg == MASTER_PORT_FLAG for arg in args):
        return args
    return [*args, MASTER_PORT_FLAG, str(MASTER_PORT + offset)]
