"""The inter-pod GPU memory service layout on Grove (dgd-domain §9.3, podspec §10).

With ``experimental.gpuMemoryService.mode: InterPod`` each node rank of a component gets a GMS
weight-server clique ``<comp>-gms-<rank>`` beside its engine clique (``<comp>``, or ``<comp>-ldr`` and
``<comp>-wkr-<rank>`` multinode), all in the component's scaling group. Per rank, the PodCliqueSet
declares a claim template ``<comp>-gpu-rank-<rank>`` (main's GPUs of the GMS device class) and the
scaling group shares it, one claim per scaling-group replica, between that rank's two cliques, so the
weight server and its engines hold the same GPUs. They meet on a hostPath directory
(``/run/gms/shared``, isolated per replica and rank through ``subPathExpr``) that an init container
opens to the non-root processes. With inter-pod failover the engine clique runs ``1 + numShadows``
engines that race for a lock there, and its pods never restart in place.

Shapes follow upstream ``deploy/operator/internal/dynamo/failover.go`` (its inter-pod part:
``gmsWeightServerPodSpec``, ``augmentEngineForGMS``, ``gmsResourceClaimTemplateConfigs``,
``gmsResourceSharingEntries``) and ``graph.go`` (``generatePodSpecForRole``, ``buildCliqueForRole``).
"""

from __future__ import annotations

import copy
import re

from dgd.domain.pod_merge import JSON, field_env, value_env
from dgd.domain.render.gms import (
    SERVER_MODULE,
    SOCKET_DIR_ENV,
    device_class,
    main_gpus,
    tolerate_gpu_taint,
    without_scalar_gpus,
)
from dgd.domain.render.pod_serialization import go_shape
from dgd.domain.roles import Role, failover_mode, gms_mode
from dgd.messages.component import ComponentSpec
from dgd.messages.grove import (
    ResourceClaimTemplateConfig,
    ScalingGroupResourceSharing,
    ScalingGroupSharingFilter,
)

VOLUME = "gms-shared"
HOST_PATH = "/run/gms"
SHARED_DIR = "/run/gms/shared"
LOCK_FILE = f"{SHARED_DIR}/failover.lock"
PERMISSION_FIX = "fix-gms-perms"
POD_INDEX_LABEL = "grove.io/podclique-pod-index"
FAILOVER_GROUP_LABEL = "nvidia.com/dynamo-failover-engine-group-member"
#: The weight server: clear stale sockets, run the server, forward signals, exit with its code.
WRAPPER = (
    f"rm -f {SHARED_DIR}/gms_*.sock\n"
    "rc=1\n"
    'cleanup() { kill -- -$$ 2>/dev/null; exit "$rc"; }\n'
    "trap cleanup SIGTERM SIGINT\n"
    f"python3 -m {SERVER_MODULE} &\n"
    'echo "Started GMS server pid=$!"\n'
    "wait -n\n"
    "rc=$?\n"
    'echo "GMS server exited (code=$rc), shutting down"\n'
    "cleanup"
)


def uses_inter_pod_gms(component: ComponentSpec) -> bool:
    return gms_mode(component) == "InterPod"


def uses_inter_pod_failover(component: ComponentSpec) -> bool:
    return failover_mode(component) == "InterPod"


def claim_template_name(component_name: str, rank: int) -> str:
    """The PodCliqueSet claim template of one rank: ``<lower(component)>-gpu-rank-<rank>``."""
    return f"{re.sub(r'[^a-z0-9.-]', '-', component_name.lower())}-gpu-rank-{rank}"


def claim_templates(component: ComponentSpec, roles: list[Role]) -> list[ResourceClaimTemplateConfig]:
    """One claim template per rank: main's GPUs, exactly, of the GMS device class."""
    request = {
        "name": "gpu",
        "exactly": {
            "deviceClassName": device_class(component),
            "allocationMode": "ExactCount",
            "count": main_gpus(component),
        },
    }
    ranks = dict.fromkeys(role.rank for role in roles)
    return [
        ResourceClaimTemplateConfig(
            name=claim_template_name(component.name, rank),
            template_spec={"spec": {"devices": {"requests": [copy.deepcopy(request)]}}},
        )
        for rank in ranks
    ]


def resource_sharing(component: ComponentSpec, roles: list[Role]) -> list[ScalingGroupResourceSharing]:
    """Per rank, its claim shared by that rank's cliques, one claim per scaling-group replica."""
    by_rank: dict[int, list[str]] = {}
    for role in roles:
        by_rank.setdefault(role.rank, []).append(role.name)
    return [
        ScalingGroupResourceSharing(
            name=claim_template_name(component.name, rank),
            scope="PerReplica",
            filter=ScalingGroupSharingFilter(child_clique_names=names),
        )
        for rank, names in by_rank.items()
    ]


def starts_after(roles: list[Role]) -> dict[str, list[str]]:
    """Each engine clique starts after its rank's GMS clique (dgd-domain §9.3)."""
    servers = {role.rank: role.name for role in roles if role.kind == "gms"}
    return {role.name: [servers[role.rank]] for role in roles if role.kind != "gms" and role.rank in servers}


def weight_server_pod(base: JSON, rank: int, gpus: int) -> JSON:
    """The GMS weight server of one rank, from the component's single-node engine pod: the server
    instead of the engine, probed until its two sockets per GPU exist."""
    pod = copy.deepcopy(base)
    server = pod["containers"][0]
    server["command"], server["args"] = ["bash", "-c"], [WRAPPER]
    ready = f"test $(ls {SHARED_DIR}/gms_*.sock 2>/dev/null | wc -l) -ge {2 * gpus}"
    server["startupProbe"] = {
        "exec": {"command": ["sh", "-c", ready]},
        "timeoutSeconds": 2,
        "periodSeconds": 2,
        "failureThreshold": 150,
    }
    server.pop("livenessProbe", None)
    server.pop("readinessProbe", None)
    server["env"] = [*(server.get("env") or []), value_env(SOCKET_DIR_ENV, SHARED_DIR)]
    return go_shape(_with_shared_directory(pod, rank))


def engine_pod(pod: JSON, rank: int, *, failover: bool) -> JSON:
    """An engine of one rank: its identity in the engine group and the shared directory; with failover,
    a pod that is never restarted in place (its whole group is recreated instead)."""
    pod = copy.deepcopy(pod)
    engine = pod["containers"][0]
    env = [e for e in engine.get("env") or [] if e.get("name") != "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS"]
    env += [
        field_env("ENGINE_ID", f"metadata.labels['{POD_INDEX_LABEL}']"),
        value_env(SOCKET_DIR_ENV, SHARED_DIR),
        value_env("FAILOVER_LOCK_PATH", LOCK_FILE),
        value_env("DYN_SYSTEM_STARTING_HEALTH_STATUS", "notready"),
    ]
    engine["env"] = env
    pod = _with_shared_directory(pod, rank)
    if failover:
        pod["restartPolicy"] = "Never"
    return go_shape(pod)


def _with_shared_directory(pod: JSON, rank: int) -> JSON:
    """No scalar GPUs (the shared claim has them), the GPU toleration, and the rank's host directory
    mounted in the first container and opened up by an init container."""
    container = pod["containers"][0]
    container["resources"] = without_scalar_gpus(container.get("resources"))
    tolerate_gpu_taint(pod)
    volume = {"name": VOLUME, "hostPath": {"path": HOST_PATH, "type": "DirectoryOrCreate"}}
    pod["volumes"] = [*(pod.get("volumes") or []), volume]
    mount = {
        "name": VOLUME,
        "mountPath": SHARED_DIR,
        "subPathExpr": f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)/rank-{rank}",
    }
    container["volumeMounts"] = [*(container.get("volumeMounts") or []), mount]
    fix = {
        "name": PERMISSION_FIX,
        "image": container.get("image", ""),
        "command": ["sh", "-c", f"chmod 1777 {SHARED_DIR}"],
        "resources": {},
        "volumeMounts": [copy.deepcopy(mount)],
        "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
    }
    pod["initContainers"] = [*(pod.get("initContainers") or []), fix]
    return pod
