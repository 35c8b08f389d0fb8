"""What of a v1alpha1 service the stored v1beta1 object must keep in ``nvidia.com/dgd-spec`` (§1.2, §1.5).

``preserved_service`` returns the sparse v1alpha1 service (plain JSON, any key order; the payload
encoder applies Go's order) holding exactly the data v1beta1 cannot express, plus the origin
splits that tell a later read which main-container values came from dedicated fields and which
from ``extraPodSpec.mainContainer``. Reading the stored object back as v1alpha1 needs nothing else.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.component import (
    PROMOTED_SUB_TYPES,
    component_type_of,
    is_legacy_type,
    shared_memory_needs_preservation,
)
from dgd.domain.conversion.go_types import is_zero
from dgd.domain.conversion.layout import compilation_cache_mount, flat_volume_mounts, mount_key
from dgd.domain.conversion.podtemplate import (
    FRONTEND_SIDECAR_CONTAINER,
    extra_pod_spec_is_zero,
    resource_item_of,
    resource_list_of,
)

# v1alpha1-only fields kept whenever they are set.
_KEPT_WHEN_SET = ("dynamoNamespace", "autoscaling", "ingress", "envFromSecret", "frontendSidecar")


def preserved_service(name: str, service: dict[str, Any], include_origin_splits: bool) -> dict[str, Any]:
    """The sparse v1alpha1 service to preserve for ``name``; empty when nothing needs keeping.

    ``include_origin_splits`` is true for v1alpha1-first objects (the input carried no v1beta1
    payload): the origin splits are then recorded whenever ``extraPodSpec.mainContainer`` exists.
    """
    saved: dict[str, Any] = {}

    # Fields with no v1beta1 counterpart at all.
    if is_legacy_type(service):
        saved["componentType"] = service["componentType"]
    if service.get("subComponentType") and component_type_of(service) not in PROMOTED_SUB_TYPES:
        saved["subComponentType"] = service["subComponentType"]
    saved.update({key: copy.deepcopy(service[key]) for key in _KEPT_WHEN_SET if service.get(key) is not None})
    saved.update({key: dict(service[key]) for key in ("annotations", "labels") if service.get(key)})

    # Values whose v1beta1 form loses something: the whole v1alpha1 value is kept.
    if service.get("resources") is not None and not resources_round_trip(service["resources"]):
        saved["resources"] = copy.deepcopy(service["resources"])
    mounts = service.get("volumeMounts") or []
    if not volume_mounts_round_trip(service):
        saved["volumeMounts"] = copy.deepcopy(mounts)
    if shared_memory_needs_preservation(service.get("sharedMemory")):
        saved["sharedMemory"] = copy.deepcopy(service["sharedMemory"])
    metadata = service.get("extraPodMetadata")
    if metadata is not None and not metadata.get("annotations") and not metadata.get("labels"):
        saved["extraPodMetadata"] = copy.deepcopy(metadata)
    if _extra_pod_spec_needs_preservation(service):
        saved["extraPodSpec"] = copy.deepcopy(service["extraPodSpec"])
    for feature in ("scalingAdapter", "gpuMemoryService", "failover"):
        if service.get(feature) is not None and not service[feature].get("enabled"):
            saved[feature] = copy.deepcopy(service[feature])

    # Origin splits: for a v1alpha1-first object, or whenever anything else is kept or needs them.
    if include_origin_splits or saved or _main_container_holds_dedicated_fields(service):
        _save_origin_splits(service, saved)

    # A serviceName that differs from its map key is kept too (the key is the v1beta1 name).
    if service.get("serviceName") and service["serviceName"] != name:
        saved["serviceName"] = service["serviceName"]
    return saved


def resources_round_trip(resources: dict[str, Any]) -> bool:
    """Whether v1alpha1 → Kubernetes → v1alpha1 gives ``resources`` back exactly.

    It does not for a non-default ``gpuType``, a value that is not a quantity or is not spelled
    canonically, an empty item or an empty ``custom`` map, or when nothing at all survives.
    """
    requests = _normalized_item(resource_item_of(resource_list_of(resources.get("requests"))) or None)
    limits = _normalized_item(resource_item_of(resource_list_of(resources.get("limits"))) or None)
    claims = resources.get("claims")
    if requests is None and limits is None and not claims:
        return False
    return (
        _normalized_item(resources.get("requests")) == requests
        and _normalized_item(resources.get("limits")) == limits
        and claims == resources.get("claims")
    )


def volume_mounts_round_trip(service: dict[str, Any]) -> bool:
    """Whether the flat mounts come back from v1beta1 (a compilation cache and main's mounts) as they are.

    They do not when more than one mount is flagged as the cache (§1.7), nor when the flagged one
    is not first or a name and path repeat (see docs/decisions.md).
    """
    mounts = service.get("volumeMounts") or []
    cache = compilation_cache_mount(service)
    cache_block = (
        None if cache is None else {"pvcName": cache.get("name"), "mountPath": cache.get("mountPoint")}
    )
    on_main = [{"name": mount.get("name"), "mountPath": mount.get("mountPoint")} for mount in mounts]
    flat = flat_volume_mounts(cache_block, on_main)
    return [mount_key(mount) for mount in flat] == [mount_key(mount) for mount in mounts]


def _normalized_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    if item is None:
        return None
    custom = item.get("custom")
    return {
        "cpu": str(item.get("cpu") or ""),
        "memory": str(item.get("memory") or ""),
        "gpu": str(item.get("gpu") or ""),
        "gpuType": item.get("gpuType") or "",
        "custom": None if custom is None else {key: str(value) for key, value in custom.items()},
    }


def _extra_pod_spec_needs_preservation(service: dict[str, Any]) -> bool:
    # An extraPodSpec that sets nothing (or only a main container name) vanishes in v1beta1, and a
    # user container named like the frontend sidecar must stay visible to v1alpha1 admission.
    extra_pod_spec = service.get("extraPodSpec")
    if extra_pod_spec is None:
        return False
    if extra_pod_spec_is_zero(extra_pod_spec):
        return True
    containers = extra_pod_spec.get("containers") or []
    return service.get("frontendSidecar") is not None and any(
        container.get("name") == FRONTEND_SIDECAR_CONTAINER for container in containers
    )


def _main_container_holds_dedicated_fields(service: dict[str, Any]) -> bool:
    main = (service.get("extraPodSpec") or {}).get("mainContainer")
    if main is None:
        return False
    return bool(
        main.get("name")
        or main.get("env")
        or not is_zero(main.get("resources"))
        or main.get("volumeMounts")
        or main.get("livenessProbe") is not None
        or main.get("readinessProbe") is not None
    )


def _save_origin_splits(service: dict[str, Any], saved: dict[str, Any]) -> None:
    # Each (dedicated field, mainContainer field) pair is saved when either side is set.
    main = (service.get("extraPodSpec") or {}).get("mainContainer")
    if main is None:
        return
    pairs = (
        ("envs", "env", bool(service.get("envs")) or bool(main.get("env"))),
        ("envFromSecret", "envFrom", service.get("envFromSecret") is not None or bool(main.get("envFrom"))),
        (
            "resources",
            "resources",
            service.get("resources") is not None or not is_zero(main.get("resources")),
        ),
        ("volumeMounts", "volumeMounts", bool(service.get("volumeMounts")) or bool(main.get("volumeMounts"))),
        ("livenessProbe", "livenessProbe", _either_set(service, main, "livenessProbe")),
        ("readinessProbe", "readinessProbe", _either_set(service, main, "readinessProbe")),
    )
    split = main.get("name") or any(is_set for _, _, is_set in pairs)
    if not split:
        return
    saved_main = saved.setdefault("extraPodSpec", {}).setdefault("mainContainer", {})
    if main.get("name"):
        saved_main["name"] = main["name"]
    for dedicated, own, is_set in pairs:
        if not is_set:
            continue
        saved.pop(dedicated, None)
        if service.get(dedicated) is not None:
            saved[dedicated] = copy.deepcopy(service[dedicated])
        saved_main.pop(own, None)
        if main.get(own) is not None:
            saved_main[own] = copy.deepcopy(main[own])


def _either_set(service: dict[str, Any], main: dict[str, Any], probe: str) -> bool:
    return service.get(probe) is not None or main.get(probe) is not None
