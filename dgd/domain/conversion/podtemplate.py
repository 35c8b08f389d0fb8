"""v1alpha1 pod-level fields → the v1beta1 ``podTemplate`` (supplement §1.5) and resources (§1.6).

Inputs are v1alpha1 service objects already checked by ``dgd.domain.conversion.dgd``; nothing here
mutates them. The composed template always has the ``main`` container first, the user's other
containers after it in their order, and the frontend sidecar last.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.go_types import is_zero
from dgd.domain.conversion.layout import MAIN_CONTAINER, restore_layout
from dgd.domain.quantity import canonical_quantity

FRONTEND_SIDECAR_CONTAINER = "sidecar-frontend"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"


def needs_pod_template(service: dict[str, Any], payload_has_pod_template: bool) -> bool:
    """Whether the service carries anything that only a v1beta1 ``podTemplate`` can hold: a mount
    other than the compilation cache (the first flagged one, §1.7) is main's, flagged or not."""
    mounts = service.get("volumeMounts") or []
    cache = next((mount for mount in mounts if mount.get("useAsCompilationCache")), None)
    return (
        service.get("resources") is not None
        or bool(service.get("envs"))
        or service.get("envFromSecret") is not None
        or any(mount is not cache for mount in mounts)
        or service.get("livenessProbe") is not None
        or service.get("readinessProbe") is not None
        or not extra_pod_spec_is_zero(service.get("extraPodSpec"))
        or service.get("extraPodMetadata") is not None
        or service.get("frontendSidecar") is not None
        or payload_has_pod_template
    )


def build_pod_template(
    service: dict[str, Any], saved_template: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The composed ``podTemplate``, or ``None`` when the service needs none (§1.5 build steps 1–6).

    ``saved_template`` is the sparse v1beta1 ``podTemplate`` a v1alpha1 view carried for this
    component (``layout.leftover_template``): it forces a template and its layout is laid back.
    """
    if not needs_pod_template(service, saved_template is not None):
        return None
    extra_pod_spec = service.get("extraPodSpec") or {}

    # 1. Pod metadata comes from extraPodMetadata, non-empty maps only.
    template: dict[str, Any] = {}
    metadata = {
        key: copy.deepcopy(value)
        for key, value in (service.get("extraPodMetadata") or {}).items()
        if key in ("annotations", "labels") and value
    }
    if metadata:
        template["metadata"] = metadata

    # 2. The pod spec is the inline extraPodSpec, without its mainContainer.
    spec = {key: copy.deepcopy(value) for key, value in extra_pod_spec.items() if key != "mainContainer"}

    # 3–4. The main container: dedicated fields, then mainContainer laid over them.
    main = main_container(service)

    # 5. main first, then every other user container in order; a user container named main is dropped.
    containers = [main]
    containers += [item for item in spec.get("containers") or [] if item.get("name") != MAIN_CONTAINER]

    # 6. The frontend sidecar goes last, unless the user already declared a container with its name.
    sidecar = service.get("frontendSidecar")
    if sidecar is not None and all(item.get("name") != FRONTEND_SIDECAR_CONTAINER for item in containers):
        containers.append(frontend_sidecar_container(sidecar))
    spec["containers"] = containers
    template["spec"] = spec
    if saved_template is not None:
        restore_layout(template, saved_template, service)
    return template


def main_container(service: dict[str, Any]) -> dict[str, Any]:
    """The merged ``main`` container: dedicated fields overlaid by ``extraPodSpec.mainContainer``.

    The overlay wins field by field (non-empty values only; objects merge key by key, lists are
    replaced). Env vars are the dedicated ones followed by the overlay's, de-duplicated by name
    with an overlay entry replacing the earlier one in place; volume mounts are the overlay's
    followed by the dedicated ones; ``startupProbe`` can only come from the overlay.
    """
    dedicated = _dedicated_container(service)
    overlay = (service.get("extraPodSpec") or {}).get("mainContainer")
    if overlay is None:
        return dedicated
    merged = _merge(dedicated, overlay)
    if isinstance(merged.get("resources"), dict):
        merged["resources"] = canonical_resources(merged["resources"])
    env = merge_env(dedicated.get("env") or [], overlay.get("env") or [])
    mounts = copy.deepcopy(overlay.get("volumeMounts") or []) + (dedicated.get("volumeMounts") or [])
    merged.pop("env", None)
    merged.pop("volumeMounts", None)
    if env:
        merged["env"] = env
    if mounts:
        merged["volumeMounts"] = mounts
    merged["name"] = MAIN_CONTAINER
    return merged


def merge_env(common: list[dict[str, Any]], specific: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``common`` then ``specific``; a ``specific`` entry replaces the earlier one of its name in place."""
    out: list[dict[str, Any]] = []
    index_by_name: dict[str, int] = {}
    for entry in common:
        index_by_name[entry.get("name", "")] = len(out)
        out.append(copy.deepcopy(entry))
    for entry in specific:
        name = entry.get("name", "")
        if name in index_by_name:
            out[index_by_name[name]] = copy.deepcopy(entry)
        else:
            index_by_name[name] = len(out)
            out.append(copy.deepcopy(entry))
    return out


def native_resources(resources: dict[str, Any]) -> dict[str, Any]:
    """v1alpha1 ``resources`` as a Kubernetes ResourceRequirements (§1.6); unparseable values dropped."""
    out: dict[str, Any] = {}
    for key in ("limits", "requests"):
        resource_list = resource_list_of(resources.get(key))
        if resource_list:
            out[key] = resource_list
    if resources.get("claims"):
        out["claims"] = copy.deepcopy(resources["claims"])
    return out


def resource_list_of(item: dict[str, Any] | None) -> dict[str, str]:
    """One requests/limits item as resource name → canonical quantity; ``gpu`` counts ``gpuType``."""
    if not item:
        return {}
    entries: list[tuple[str, Any]] = [("cpu", item.get("cpu")), ("memory", item.get("memory"))]
    entries.append((item.get("gpuType") or DEFAULT_GPU_RESOURCE, item.get("gpu")))
    entries += list((item.get("custom") or {}).items())
    out: dict[str, str] = {}
    for name, value in entries:
        quantity = canonical_quantity(value) if value not in (None, "") else None
        if quantity is not None:
            out[name] = quantity
    return out


def resource_item_of(resource_list: dict[str, Any]) -> dict[str, Any]:
    """The inverse of ``resource_list_of``: ``cpu``, ``memory`` and ``nvidia.com/gpu`` by name,
    every other resource under ``custom``, quantities in canonical spelling (§1.6 ←)."""
    named = {"cpu": "cpu", "memory": "memory", DEFAULT_GPU_RESOURCE: "gpu"}
    item: dict[str, Any] = {}
    for resource, value in resource_list.items():
        quantity = canonical_quantity(value) or str(value)
        if resource in named:
            item[named[resource]] = quantity
        else:
            item.setdefault("custom", {})[resource] = quantity
    return item


def extra_pod_spec_is_zero(extra_pod_spec: dict[str, Any] | None) -> bool:
    """Whether extraPodSpec sets nothing: an empty pod spec and a main container with at most a name."""
    if extra_pod_spec is None:
        return True
    pod_spec = {key: value for key, value in extra_pod_spec.items() if key != "mainContainer"}
    return is_zero(pod_spec) and container_is_empty(extra_pod_spec.get("mainContainer"))


def container_is_empty(container: dict[str, Any] | None) -> bool:
    """Whether a container sets nothing but (possibly) its name."""
    return container is None or is_zero({key: value for key, value in container.items() if key != "name"})


def _dedicated_container(service: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": MAIN_CONTAINER}
    if service.get("resources") is not None:
        resources = native_resources(service["resources"])
        if resources:
            container["resources"] = resources
    if service.get("envs"):
        container["env"] = copy.deepcopy(service["envs"])
    if service.get("envFromSecret"):
        container["envFrom"] = [{"secretRef": {"name": service["envFromSecret"]}}]
    for probe in ("livenessProbe", "readinessProbe"):
        if service.get(probe) is not None:
            container[probe] = copy.deepcopy(service[probe])
    mounts = service.get("volumeMounts") or []
    if mounts:
        container["volumeMounts"] = [
            {"name": mount.get("name") or "", "mountPath": mount.get("mountPoint") or ""} for mount in mounts
        ]
    return container


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    # Non-empty overlay values win; objects present on both sides merge key by key.
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if is_zero(value):
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def canonical_resources(resources: Any) -> Any:
    """ResourceRequirements with quantities in canonical spelling; anything unparseable is kept as
    it is (admission rejects it)."""
    if not isinstance(resources, dict):
        return resources
    out = dict(resources)
    for key in ("limits", "requests"):
        if isinstance(out.get(key), dict):
            out[key] = {name: canonical_quantity(value) or value for name, value in out[key].items()}
    return out


def frontend_sidecar_container(sidecar: dict[str, Any]) -> dict[str, Any]:
    """The container v1alpha1's ``frontendSidecar`` block adds to the pod (§1.4)."""
    container: dict[str, Any] = {"name": FRONTEND_SIDECAR_CONTAINER}
    if sidecar.get("image"):
        container["image"] = sidecar["image"]
    if sidecar.get("args"):
        container["args"] = list(sidecar["args"])
    if sidecar.get("envs"):
        container["env"] = copy.deepcopy(sidecar["envs"])
    if sidecar.get("envFromSecret"):
        container["envFrom"] = [{"secretRef": {"name": sidecar["envFromSecret"]}}]
    return container
