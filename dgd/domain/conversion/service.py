"""One v1beta1 component → one v1alpha1 service (supplement §1.4–§1.7, the "←" direction).

``service_of`` is the inverse of ``component.component_of``. It reads the sparse v1alpha1 service
the stored object saved (``nvidia.com/dgd-spec`` / ``nvidia.com/dcd-spec``) and restores from it
what v1beta1 cannot hold; live v1beta1 values always win, and a saved value comes back only while
the live value still is what the saved one converts to. What of the component the v1alpha1 service
cannot hold in turn comes back as a sparse v1beta1 component, for the view's own payload.

Inputs are components already checked by the caller; they are never mutated.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from dgd.domain.conversion.component import PROMOTED_SUB_TYPES, shared_memory_size
from dgd.domain.conversion.go_types import is_zero, without_zeros
from dgd.domain.conversion.layout import MAIN_CONTAINER, POD_METADATA, flat_volume_mounts, leftover_template
from dgd.domain.conversion.podtemplate import (
    FRONTEND_SIDECAR_CONTAINER,
    build_pod_template,
    canonical_resources,
    frontend_sidecar_container,
    main_container,
    needs_pod_template,
    resource_item_of,
)
from dgd.domain.conversion.shapes import PROVIDER_OVERRIDE, STRINGS, Shape
from dgd.domain.quantity import canonical_quantity

_MODES = {"IntraPod": "intraPod", "InterPod": "interPod"}

#: v1alpha1-only service fields, restored as saved.
_ALPHA_ONLY = ("annotations", "labels", "dynamoNamespace", "autoscaling", "ingress")

#: Fields both versions share, copied as they are.
_SHARED = ("replicas", "minAvailable", "multinode", "modelRef", "eppConfig", "topologyConstraint")

#: (dedicated v1alpha1 field, main-container field) pairs: the origin splits of §1.5.
_PAIRS = (
    ("envs", "env"),
    ("envFromSecret", "envFrom"),
    ("resources", "resources"),
    ("volumeMounts", "volumeMounts"),
    ("livenessProbe", "livenessProbe"),
    ("readinessProbe", "readinessProbe"),
)


class ServiceView(NamedTuple):
    """A component as v1alpha1 sees it: the service, and the sparse v1beta1 rest (no ``name``)."""

    service: dict[str, Any]
    leftover: dict[str, Any]


def service_of(component: dict[str, Any], saved: dict[str, Any]) -> ServiceView:
    """The v1alpha1 service for ``component``; ``saved`` is its sparse v1alpha1 service, or ``{}``.

    ``serviceName`` is the caller's: a DGD keys services by name, a DCD carries it.
    """
    service: dict[str, Any] = {}
    leftover: dict[str, Any] = {}
    if component.get("providerOverride") is not None:
        service["providerOverride"] = copy.deepcopy(component["providerOverride"])
    service.update(_types(component.get("type") or "", saved))
    if component.get("runtimeVersionOverride"):
        service["runtimeVersionOverride"] = component["runtimeVersionOverride"]
    if component.get("globalDynamoNamespace"):
        service["globalDynamoNamespace"] = True
    for key in _SHARED:
        if component.get(key) is not None:
            service[key] = copy.deepcopy(component[key])

    # Shapes that changed: shared memory, the adapter marker, the experimental features.
    shared_memory = _shared_memory(component.get("sharedMemorySize"), saved.get("sharedMemory"))
    if shared_memory is not None:
        service["sharedMemory"] = shared_memory
    if component.get("scalingAdapter") is not None:
        service["scalingAdapter"] = {"enabled": True}
    elif saved.get("scalingAdapter") is not None:
        service["scalingAdapter"] = copy.deepcopy(saved["scalingAdapter"])
    service.update(_features(component.get("experimental") or {}, saved))
    grove = (component.get("experimental") or {}).get("grove")
    if grove is not None:
        leftover["experimental"] = {"grove": copy.deepcopy(grove)}

    # The pod template splits into flat fields; the frontend sidecar may come back as v1alpha1's block.
    service.update(_split_pod_template(component, saved))
    sidecar = component.get("frontendSidecar")
    if sidecar == FRONTEND_SIDECAR_CONTAINER and saved.get("frontendSidecar") is not None:
        service["frontendSidecar"] = copy.deepcopy(saved["frontendSidecar"])
        _drop_generated_sidecar(service, saved)
    elif sidecar:
        leftover["frontendSidecar"] = sidecar

    # v1alpha1-only fields come back as saved.
    service.update({key: copy.deepcopy(saved[key]) for key in _ALPHA_ONLY if saved.get(key) is not None})

    # What composing the service again would not give back.
    template = component.get("podTemplate")
    if template is not None:
        composed = build_pod_template(service, None) if needs_pod_template(service, False) else None
        layout = leftover_template(template, composed)
        if layout is not None:
            leftover["podTemplate"] = layout
    return ServiceView(service, leftover)


def _types(component_type: str, saved: dict[str, Any]) -> dict[str, Any]:
    # prefill/decode are worker sub-types; a saved legacy type or sub-type comes back.
    if component_type in PROMOTED_SUB_TYPES:
        return {"componentType": "worker", "subComponentType": component_type}
    out: dict[str, Any] = {}
    if component_type:
        out["componentType"] = component_type
    elif saved.get("componentType"):
        out["componentType"] = saved["componentType"]
    if saved.get("subComponentType"):
        out["subComponentType"] = saved["subComponentType"]
    return out


def _shared_memory(size: Any, saved: Any) -> dict[str, Any] | None:
    # A saved block comes back while it still converts to the live size; else zero means disabled.
    if isinstance(saved, dict) and shared_memory_size(saved) == _canonical(size):
        return copy.deepcopy(saved)
    if size is None:
        return None
    if canonical_quantity(size) == "0":
        return {"disabled": True, "size": size}
    return {"size": size}


def _canonical(size: Any) -> str | None:
    return None if size is None else canonical_quantity(size)


def _features(experimental: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    # GMS and failover exist in v1beta1 only when enabled; disabled blocks come back as saved.
    out: dict[str, Any] = {}
    for key in ("gpuMemoryService", "failover"):
        feature = experimental.get(key)
        if feature is not None:
            out[key] = {"enabled": True, **copy.deepcopy(feature)}
            if feature.get("mode"):
                out[key]["mode"] = _MODES.get(feature["mode"], feature["mode"])
        elif saved.get(key) is not None:
            out[key] = copy.deepcopy(saved[key])
    if experimental.get("checkpoint") is not None:
        out["checkpoint"] = copy.deepcopy(experimental["checkpoint"])
    return out


def _split_pod_template(component: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """The flat v1alpha1 fields of the pod template and the compilation cache (§1.5 ←, §1.7 ←)."""
    template = component.get("podTemplate") or {}
    spec = template.get("spec") or {}
    containers = spec.get("containers") or []
    main_index = next((i for i, item in enumerate(containers) if item.get("name") == MAIN_CONTAINER), None)
    main: dict[str, Any] = containers[main_index] if main_index is not None else {}
    out: dict[str, Any] = {}

    # Pod metadata: labels and annotations only, and only when either is set.
    metadata = {key: copy.deepcopy(value) for key, value in (template.get("metadata") or {}).items() if value}
    pod_metadata = {key: metadata[key] for key in POD_METADATA if key in metadata}
    if pod_metadata:
        out["extraPodMetadata"] = pod_metadata
    elif saved.get("extraPodMetadata") is not None:
        out["extraPodMetadata"] = copy.deepcopy(saved["extraPodMetadata"])

    # main gives up its resources, env, probes and mounts; the rest stays as mainContainer.
    mounts = flat_volume_mounts(component.get("compilationCache"), main.get("volumeMounts") or [])
    dedicated: dict[str, Any] = {"volumeMounts": mounts} if mounts else {}
    resources = _alpha_resources(main.get("resources") or {})
    if resources:
        dedicated["resources"] = resources
    if main.get("env"):
        dedicated["envs"] = copy.deepcopy(main["env"])
    for probe in ("livenessProbe", "readinessProbe"):
        if main.get(probe) is not None:
            dedicated[probe] = copy.deepcopy(main[probe])
    own = {
        key: copy.deepcopy(value)
        for key, value in main.items()
        if key not in ("name", "resources", "env", "volumeMounts", "livenessProbe", "readinessProbe")
    }
    _restore_origin_splits(dedicated, own, main, component.get("compilationCache"), saved)
    out.update({key: value for key, value in dedicated.items() if value is not None})

    # Every other container and every pod-level field go to extraPodSpec.
    pod = {key: copy.deepcopy(value) for key, value in spec.items() if key != "containers"}
    saved_pod = {
        key: value for key, value in (saved.get("extraPodSpec") or {}).items() if key != "mainContainer"
    }
    restore_saved_pod = not pod and saved.get("extraPodSpec") is not None and is_zero(saved_pod)
    if restore_saved_pod:
        pod = copy.deepcopy(saved_pod)
    others = [copy.deepcopy(item) for i, item in enumerate(containers) if i != main_index]
    if others:
        pod["containers"] = others
    # A mainContainer the v1alpha1 original had stays, even when nothing is left on it.
    if own or isinstance((saved.get("extraPodSpec") or {}).get("mainContainer"), dict):
        pod["mainContainer"] = own
    if pod or restore_saved_pod:
        out["extraPodSpec"] = pod
    return out


def _restore_origin_splits(
    dedicated: dict[str, Any],
    own: dict[str, Any],
    main: dict[str, Any],
    cache: dict[str, Any] | None,
    saved: dict[str, Any],
) -> None:
    """Put each saved (dedicated, mainContainer) pair back while it still composes ``main``'s value.

    This also turns ``envFrom`` back into ``envFromSecret`` (a pair with no mainContainer side) and
    brings back resources and mount lists the v1beta1 form loses (§1.6, §1.7).
    """
    saved_main = (saved.get("extraPodSpec") or {}).get("mainContainer") or {}
    if saved_main.get("name"):
        own["name"] = saved_main["name"]
    for field, main_field in _PAIRS:
        if saved.get(field) is None and is_zero(saved_main.get(main_field)):
            continue
        pair = {
            field: saved.get(field),
            "extraPodSpec": {"mainContainer": {main_field: saved_main.get(main_field)}},
        }
        expected = main_container(pair).get(main_field)
        if not _same(expected, main.get(main_field), main_field):
            continue
        if field == "volumeMounts" and not _same_cache(saved.get(field) or [], cache):
            continue
        dedicated[field] = copy.deepcopy(saved.get(field))
        own.pop(main_field, None)
        if not is_zero(saved_main.get(main_field)):
            own[main_field] = copy.deepcopy(saved_main[main_field])


def _same(expected: Any, actual: Any, field: str) -> bool:
    # As Go compares what it decoded: zero values equal absent, quantities by canonical spelling.
    if field == "resources":
        expected, actual = canonical_resources(expected), canonical_resources(actual)
    return bool(without_zeros(expected) == without_zeros(actual))


def _same_cache(mounts: list[dict[str, Any]], cache: dict[str, Any] | None) -> bool:
    # The saved flat mounts make the live compilation cache (the first flagged mount, §1.7).
    first = next((mount for mount in mounts if mount.get("useAsCompilationCache")), None)
    if first is None or cache is None:
        return first is None and cache is None
    return bool((first.get("name") or "") == (cache.get("pvcName") or "")) and (
        (first.get("mountPoint") or "") == (cache.get("mountPath") or "")
    )


def _alpha_resources(native: dict[str, Any]) -> dict[str, Any]:
    # Kubernetes ResourceRequirements → v1alpha1 resources (§1.6 ←).
    out: dict[str, Any] = {}
    for key in ("requests", "limits"):
        item = resource_item_of(native.get(key) or {})
        if item:
            out[key] = item
    if native.get("claims"):
        out["claims"] = copy.deepcopy(native["claims"])
    return out


def _drop_generated_sidecar(service: dict[str, Any], saved: dict[str, Any]) -> None:
    # The container v1alpha1's sidecar block generates is the block's, not the user's: drop it.
    pod = service.get("extraPodSpec") or {}
    containers = pod.get("containers") or []
    saved_names = {item.get("name") for item in (saved.get("extraPodSpec") or {}).get("containers") or []}
    generated = frontend_sidecar_container(service["frontendSidecar"])
    if FRONTEND_SIDECAR_CONTAINER in saved_names or generated not in containers:
        return
    containers.remove(generated)
    if not containers:
        pod.pop("containers")
    if not pod and saved.get("extraPodSpec") is None:
        service.pop("extraPodSpec")


_QUANTITIES: Shape = ("map", "quantity")
_CONTAINER: Shape = {
    "name": "string",
    "env": ("list", {"name": "string"}),
    "envFrom": ("list", "object"),
    "volumeMounts": ("list", {"name": "string", "mountPath": "string"}),
    "resources": {"limits": _QUANTITIES, "requests": _QUANTITIES, "claims": ("list", "object")},
    "livenessProbe": "object",
    "readinessProbe": "object",
    "startupProbe": "object",
}
_FEATURE: Shape = {"mode": "string"}

#: The v1beta1 component fields ``service_of`` reads, as the caller checks them (see ``shapes``).
COMPONENT_SHAPE: dict[str, Shape] = {
    "providerOverride": PROVIDER_OVERRIDE,
    "name": "string",
    "type": "string",
    "runtimeVersionOverride": "string",
    "globalDynamoNamespace": "boolean",
    "podTemplate": {
        "metadata": {"annotations": STRINGS, "labels": STRINGS},
        "spec": {"containers": ("list", _CONTAINER)},
    },
    "replicas": "integer",
    "minAvailable": "integer",
    "multinode": "object",
    "sharedMemorySize": "quantity",
    "modelRef": "object",
    "scalingAdapter": "object",
    "eppConfig": "object",
    "frontendSidecar": "string",
    "compilationCache": {"pvcName": "string", "mountPath": "string"},
    "topologyConstraint": "object",
    "experimental": {"gpuMemoryService": _FEATURE, "failover": _FEATURE, "checkpoint": "object"},
}
