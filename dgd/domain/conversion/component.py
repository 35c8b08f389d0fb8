"""One v1alpha1 service → one v1beta1 component (supplement §1.4, §1.7).

Inputs are service objects already checked by ``dgd.domain.conversion.dgd``; they are never mutated.
What v1beta1 cannot hold is not dropped silently: ``dgd.domain.conversion.preservation`` decides
what of the same service goes into the ``nvidia.com/dgd-spec`` payload.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.layout import compilation_cache_mount
from dgd.domain.conversion.podtemplate import FRONTEND_SIDECAR_CONTAINER, build_pod_template
from dgd.domain.quantity import canonical_quantity, is_zero_quantity

#: Worker sub-types that v1beta1 promotes to component types of their own.
PROMOTED_SUB_TYPES = ("prefill", "decode")

_MODES = {"intraPod": "IntraPod", "interPod": "InterPod"}


def component_of(
    name: str, service: dict[str, Any], payload_component: dict[str, Any] | None
) -> dict[str, Any]:
    """The v1beta1 component for service ``name``.

    ``payload_component`` is the entry for ``name`` in a v1beta1 payload the v1alpha1 input
    carried (from an earlier read), or ``None``: it forces a pod template and restores the
    v1beta1-only ``experimental.grove`` block.
    """
    component: dict[str, Any] = {}
    if service.get("providerOverride") is not None:
        component["providerOverride"] = copy.deepcopy(service["providerOverride"])
    component["name"] = name
    component_type = component_type_of(service)
    if component_type and not is_legacy_type(service):
        component["type"] = component_type
    if service.get("runtimeVersionOverride"):
        component["runtimeVersionOverride"] = service["runtimeVersionOverride"]
    if service.get("globalDynamoNamespace"):
        component["globalDynamoNamespace"] = True

    # The pod template, and the name of the frontend sidecar it carries (v1alpha1's, or the payload's).
    saved_template = (payload_component or {}).get("podTemplate")
    template = build_pod_template(service, saved_template if isinstance(saved_template, dict) else None)
    if template is not None:
        component["podTemplate"] = template
        sidecar = _frontend_sidecar_name(service, template, payload_component or {})
        if sidecar:
            component["frontendSidecar"] = sidecar

    # Fields both versions share, copied as they are.
    for key in ("replicas", "minAvailable", "multinode", "modelRef", "eppConfig", "topologyConstraint"):
        if service.get(key) is not None:
            component[key] = copy.deepcopy(service[key])

    # Shapes that changed: shared memory, the adapter marker, the compilation cache.
    size = shared_memory_size(service.get("sharedMemory"))
    if size is not None:
        component["sharedMemorySize"] = size
    if (service.get("scalingAdapter") or {}).get("enabled"):
        component["scalingAdapter"] = {}
    cache = compilation_cache_mount(service)
    if cache is not None:
        component["compilationCache"] = {"pvcName": cache.get("name") or ""}
        if cache.get("mountPoint"):
            component["compilationCache"]["mountPath"] = cache["mountPoint"]

    # Experimental features, plus the v1beta1-only grove block a payload may hold.
    experimental = _experimental(service)
    payload_experimental = (payload_component or {}).get("experimental")
    if isinstance(payload_experimental, dict):
        experimental = _restore_payload_experimental(experimental, payload_experimental)
    if experimental:
        component["experimental"] = experimental
    return component


#: componentType values of older releases that v1beta1 has no value for.
LEGACY_COMPONENT_TYPES = frozenset({"main", "default"})


def is_legacy_type(service: dict[str, Any]) -> bool:
    """A ``componentType`` of older releases (``main``, ``default``) that v1beta1 has no value for.

    Such a component converts without a ``type`` (a generic component) and keeps the value in the
    ``nvidia.com/dgd-spec`` annotation; see docs/decisions.md. Any other unknown value converts as
    is, and v1beta1 validation refuses it.
    """
    return component_type_of(service) in LEGACY_COMPONENT_TYPES


def component_type_of(service: dict[str, Any]) -> str:
    """``worker`` + ``prefill``/``decode`` becomes that sub-type; otherwise ``componentType`` as is."""
    component_type: str = service.get("componentType") or ""
    sub_type: str = service.get("subComponentType") or ""
    if component_type == "worker" and sub_type in PROMOTED_SUB_TYPES:
        return sub_type
    return component_type


def shared_memory_needs_preservation(shared_memory: dict[str, Any] | None) -> bool:
    """Whether ``sharedMemory`` says more than ``sharedMemorySize``: disabled+sized, or enabled+unsized."""
    if shared_memory is None:
        return False
    zero_size = is_zero_quantity(shared_memory.get("size") or 0)
    return not zero_size if shared_memory.get("disabled") else zero_size


def shared_memory_size(shared_memory: dict[str, Any] | None) -> str | None:
    """``sharedMemorySize`` for a ``sharedMemory`` block: ``"0"`` when disabled, else a non-zero size."""
    if shared_memory is None:
        return None
    if shared_memory.get("disabled"):
        return "0"
    size = shared_memory.get("size")
    if size is None or is_zero_quantity(size):
        return None
    return canonical_quantity(size)


def _frontend_sidecar_name(
    service: dict[str, Any], template: dict[str, Any], payload_component: dict[str, Any]
) -> str | None:
    # v1alpha1's sidecar block names the container it adds; a payload may name a user container.
    if service.get("frontendSidecar") is not None:
        return FRONTEND_SIDECAR_CONTAINER
    name = payload_component.get("frontendSidecar")
    containers = template["spec"]["containers"]
    if isinstance(name, str) and any(item.get("name") == name for item in containers):
        return name
    return None


def _experimental(service: dict[str, Any]) -> dict[str, Any]:
    # GMS and failover exist in v1beta1 only when enabled; checkpoint always converts.
    experimental: dict[str, Any] = {}
    gms = service.get("gpuMemoryService")
    if gms is not None and gms.get("enabled"):
        experimental["gpuMemoryService"] = _without_enabled(gms, ("deviceClassName", "extraClientContainers"))
        if gms.get("extraClientPods"):
            experimental["gpuMemoryService"]["extraClientPods"] = [
                {"name": pod.get("name"), "podTemplate": copy.deepcopy(pod.get("podTemplate"))}
                for pod in gms["extraClientPods"]
            ]
    failover = service.get("failover")
    if failover is not None and failover.get("enabled"):
        experimental["failover"] = _without_enabled(failover, ("numShadows",))
    # An enabled block that converts empty gets its schema-default mode: a server-side re-apply of
    # `{enabled: true}` would otherwise merge the empty object away (docs/decisions.md, "Admission
    # webhooks"). The API server's schema default writes the same mode into any stored object anyway.
    for key in ("gpuMemoryService", "failover"):
        if experimental.get(key) == {}:
            experimental[key] = {"mode": "IntraPod"}
    if service.get("checkpoint") is not None:
        experimental["checkpoint"] = copy.deepcopy(service["checkpoint"])
    return experimental


def _without_enabled(feature: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if feature.get("mode"):
        out["mode"] = _MODES.get(feature["mode"], feature["mode"])
    out.update({key: copy.deepcopy(feature[key]) for key in keys if feature.get(key)})
    return out


def _restore_payload_experimental(experimental: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    # A payload block without GMS/failover/checkpoint is wholly v1beta1-only; otherwise only grove is.
    features = ("gpuMemoryService", "failover", "checkpoint")
    if not experimental and all(payload.get(key) is None for key in features):
        return copy.deepcopy(payload)
    if experimental and "grove" not in experimental and payload.get("grove") is not None:
        return {**experimental, "grove": copy.deepcopy(payload["grove"])}
    return experimental
