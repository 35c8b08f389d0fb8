"""The GPU memory service inside a pod (intra-pod GMS, podspec §3 step 21 and §10; dgd-domain §7 row 4).

With ``experimental.gpuMemoryService`` (mode ``IntraPod``) the pod's GPUs come from one shared DRA
claim instead of scalar GPU resources: the main container (and every extra client container) uses
the pod claim ``intrapod-shared-gpu``, made from the component's ResourceClaimTemplate
``<dgd>-<lower(component)>-gpu``, and a ``gms-server`` native sidecar (an init container that keeps
running) serves the GPU memory over Unix sockets in the ``gms-intrapod-control`` emptyDir. Since DRA
bypasses the device plugin, the pod tolerates the ``nvidia.com/gpu`` taint itself.

Shapes follow upstream ``deploy/operator/internal/gms/gms.go`` and ``internal/dra`` (the
``gms-intrapod-control`` / ``intrapod-shared-gpu`` generation). Every function is pure and returns new
JSON; none of them mutates its argument.
"""

from __future__ import annotations

import copy
from typing import Literal

from dgd.domain.pod_merge import JSON, value_env
from dgd.domain.render.errors import RenderError
from dgd.domain.render.gpu_count import is_gpu_resource, scalar_gpus
from dgd.domain.roles import failover_mode, gms_mode
from dgd.messages.component import ComponentSpec

CLAIM = "intrapod-shared-gpu"
SOCKET_VOLUME = "gms-intrapod-control"
SOCKET_DIR = "/gms-intrapod-control"
SOCKET_DIR_ENV = "GMS_SOCKET_DIR"
USE_V1_ENV = "DYN_GMS_USE_V1"
SERVER = "gms-server"
SERVER_MODULE = "gpu_memory_service.cli.server"
DEFAULT_DEVICE_CLASS = "gpu.nvidia.com"
GPU_TAINT = "nvidia.com/gpu"
RESOURCE_API_VERSION = "resource.k8s.io/v1"


def claim_template_name(dgd_name: str, component_name: str) -> str:
    """The component's ResourceClaimTemplate: ``<dgd>-<lower(component)>-gpu`` (dgd-domain §18)."""
    return f"{dgd_name}-{component_name.lower()}-gpu"


def device_class(component: ComponentSpec) -> str:
    """The DRA DeviceClass the component's GPUs are claimed from (default ``gpu.nvidia.com``)."""
    experimental = component.experimental
    gms = experimental.gpu_memory_service if experimental else None
    return (gms.device_class_name if gms else None) or DEFAULT_DEVICE_CLASS


def main_gpus(component: ComponentSpec) -> int:
    """GPUs of the component's main container: its scalar GPU limit, else request (0: none)."""
    spec = (component.pod_template or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict) and container.get("name") == "main":
            return scalar_gpus(container, "podTemplate.spec.containers[main]")
    return 0


def render_claim_template(component: ComponentSpec, *, dgd_name: str, namespace: str) -> JSON:
    """The ResourceClaimTemplate of a GMS component: exactly its main container's GPUs of its device
    class, as one request named ``gpus`` (upstream ``dra.GenerateResourceClaimTemplate``)."""
    request = {
        "name": "gpus",
        "exactly": {
            "deviceClassName": device_class(component),
            "allocationMode": "ExactCount",
            "count": main_gpus(component),
        },
    }
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": claim_template_name(dgd_name, component.name), "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def needs_dra(component: ComponentSpec) -> bool:
    """Whether the component needs the DRA API: it uses GMS, or inter-pod failover (dgd-domain §7 row 4)."""
    return gms_mode(component) is not None or failover_mode(component) == "InterPod"


def gms_layout(component: ComponentSpec) -> Literal["standalone", "failover"] | None:
    """The component's inter-pod GMS layout for its backend: with failover, without, or none."""
    if gms_mode(component) != "InterPod":
        return None
    return "failover" if failover_mode(component) == "InterPod" else "standalone"


def uses_intra_pod_gms(component: ComponentSpec) -> bool:
    return gms_mode(component) == "IntraPod"


def apply_intra_pod_gms(pod: JSON, component: ComponentSpec, *, dgd_name: str) -> JSON:
    """The pod with the shared GPU claim, the GMS server sidecar and its clients wired (step 21).

    The snapshot-coupled GMS protocol (``DYN_GMS_USE_V1=true`` on the server and its clients) is used
    when the component has a checkpoint configuration, as upstream does."""
    experimental = component.experimental
    gms = experimental.gpu_memory_service if experimental else None
    extra = list(gms.extra_client_containers or []) if gms else []
    pod = copy.deepcopy(pod)
    containers: list[JSON] = pod["containers"]
    check_extra_clients(component, [str(c.get("name")) for c in containers], "the rendered pod")
    use_v1 = bool(experimental and experimental.checkpoint is not None)

    # The pod claim from the component's template replaces scalar GPUs; DRA skips the device
    # plugin's toleration, so the pod tolerates the GPU taint itself.
    _with_client(pod, containers[0])
    tolerate_gpu_taint(pod)
    claim = {"name": CLAIM, "resourceClaimTemplateName": claim_template_name(dgd_name, component.name)}
    pod["resourceClaims"] = upsert_named(pod.get("resourceClaims"), claim)

    # The server runs beside the main container for the pod's whole life (a native sidecar).
    server = _server(str(containers[0].get("image") or ""))
    if use_v1:
        _set_env(server, USE_V1_ENV, "true")
        _set_env(containers[0], USE_V1_ENV, "true")
    inits = list(pod.get("initContainers") or [])
    if not any(c.get("name") == SERVER for c in inits):
        inits.append(server)
    pod["initContainers"] = inits

    # The extra clients reach the same sockets and GPUs.
    for container in containers:
        if container.get("name") in extra:
            _with_client(pod, container)
            if use_v1:
                _set_env(container, USE_V1_ENV, "true")
    return pod


def with_clients(pod: JSON, names: list[str]) -> JSON:
    """The pod with the named containers wired as GMS clients (socket volume, mount, env, claim)."""
    pod = copy.deepcopy(pod)
    for container in pod.get("containers") or []:
        if container.get("name") in names:
            _with_client(pod, container)
    return pod


def check_extra_clients(component: ComponentSpec, names: list[str], where: str) -> None:
    """Intra-pod GMS clients must name containers of ``names`` once each (dgd-domain §8.3)."""
    if not uses_intra_pod_gms(component):
        return
    experimental = component.experimental
    gms = experimental.gpu_memory_service if experimental else None
    extra = list(gms.extra_client_containers or []) if gms else []
    for index, name in enumerate(extra):
        field = f"experimental.gpuMemoryService.extraClientContainers[{index}]"
        if extra.index(name) != index:
            raise RenderError(field, f"{name!r} is listed twice")
        if name not in names:
            raise RenderError(field, f"{name!r} does not name a container of {where} ({', '.join(names)})")


def _server(image: str) -> JSON:
    return {
        "name": SERVER,
        "image": image,
        "command": ["python3", "-m", SERVER_MODULE],
        "env": [value_env(SOCKET_DIR_ENV, SOCKET_DIR)],
        "resources": {"claims": [{"name": CLAIM}]},
        "restartPolicy": "Always",
        "volumeMounts": [{"name": SOCKET_VOLUME, "mountPath": SOCKET_DIR}],
    }


def _with_client(pod: JSON, container: JSON) -> None:
    """Wire one GMS client in place: the socket volume, its mount and env, the claim, no scalar GPUs."""
    pod["volumes"] = upsert_named(pod.get("volumes"), {"name": SOCKET_VOLUME, "emptyDir": {}})
    mount = {"name": SOCKET_VOLUME, "mountPath": SOCKET_DIR}
    container["volumeMounts"] = upsert_named(container.get("volumeMounts"), mount)
    _set_env(container, SOCKET_DIR_ENV, SOCKET_DIR)
    resources = without_scalar_gpus(container.get("resources"))
    claims = list(resources.get("claims") or [])
    if not any(c.get("name") == CLAIM for c in claims):
        claims.append({"name": CLAIM})
    resources["claims"] = claims
    container["resources"] = resources


def _set_env(container: JSON, name: str, value: str) -> None:
    """Set one env var in place: replaced where it is, else appended."""
    container["env"] = upsert_named(container.get("env"), value_env(name, value))


def upsert_named(items: list[JSON] | None, item: JSON) -> list[JSON]:
    """A copy of the named ``items`` with ``item`` in place of the one of its name, else appended."""
    out = list(items or [])
    at = next((i for i, existing in enumerate(out) if existing.get("name") == item.get("name")), None)
    if at is None:
        out.append(item)
    else:
        out[at] = item
    return out


def without_scalar_gpus(resources: JSON | None) -> JSON:
    """A container's resources without GPU limits and requests (a DRA claim has its GPUs); a section
    left empty goes."""
    out = dict(resources or {})
    for section in ("limits", "requests"):
        kept = {k: v for k, v in (out.get(section) or {}).items() if not is_gpu_resource(str(k))}
        if kept:
            out[section] = kept
        else:
            out.pop(section, None)
    return out


def tolerate_gpu_taint(pod: JSON) -> None:
    """Let the pod onto GPU nodes in place: DRA bypasses the device plugin that would add this."""
    tolerations = list(pod.get("tolerations") or [])
    if not any(t.get("key") == GPU_TAINT and t.get("effect") == "NoSchedule" for t in tolerations):
        tolerations.append({"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"})
    pod["tolerations"] = tolerations
