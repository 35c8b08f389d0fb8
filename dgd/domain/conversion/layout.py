"""What of a v1beta1 pod template the flat v1alpha1 fields cannot say, and laying it back (§1.5, §1.7).

The v1alpha1 view of a component holds its pod template as flat fields, and composing those again
gives the ``main`` container first, the other containers in their order, and plain
``{name, mountPath}`` mounts on ``main``. A v1beta1 template may say more: template metadata other
than labels and annotations, another container order, no ``main`` container at all, mount details
(``readOnly``, ``subPath``, …), or a compilation cache that is not mounted on ``main``.

``leftover_template`` records that difference as a sparse v1beta1 ``podTemplate`` for the view's
``nvidia.com/dgd-spec`` payload; ``restore_layout`` lays it back over a composed template, piece by
piece, and each piece only while the live v1alpha1 fields still say what they said when it was
recorded (supplement §1.12, "edits in between").
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.conversion.go_types import without_zeros

MAIN_CONTAINER = "main"

#: Template metadata the v1alpha1 view holds itself, as ``extraPodMetadata``.
POD_METADATA = ("annotations", "labels")


def compilation_cache_mount(service: dict[str, Any]) -> dict[str, Any] | None:
    """The first volume mount flagged ``useAsCompilationCache``, if any (it becomes the cache, §1.7)."""
    for mount in service.get("volumeMounts") or []:
        if mount.get("useAsCompilationCache"):
            return dict(mount)
    return None


def flat_volume_mounts(cache: dict[str, Any] | None, mounts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The v1alpha1 ``volumeMounts`` for a compilation cache and ``main``'s mounts (§1.7 ←).

    The cache comes first, flagged; each mount follows as ``{name, mountPoint}`` unless the same
    name and path is already listed.
    """
    flat: list[dict[str, Any]] = []
    if cache is not None:
        flat.append({"name": cache.get("pvcName") or "", "useAsCompilationCache": True})
        if cache.get("mountPath"):
            flat[0]["mountPoint"] = cache["mountPath"]
    for mount in mounts:
        entry = {"name": mount.get("name") or "", "mountPoint": mount.get("mountPath") or ""}
        if _name_and_path(entry) not in {_name_and_path(item) for item in flat}:
            flat.append(entry)
    return flat


def leftover_template(template: dict[str, Any], composed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sparse ``podTemplate`` a view must carry so that composing gives ``template`` back.

    ``composed`` is the template the view's flat fields compose (``None`` when they compose none).
    The result is ``None`` when nothing needs carrying, ``{}`` when only the template's existence
    does, and otherwise holds the extra metadata and the container order, with ``main``'s exact
    mounts when the flat form loses them.
    """
    leftover: dict[str, Any] = {}
    metadata = {
        key: copy.deepcopy(value)
        for key, value in (template.get("metadata") or {}).items()
        if key not in POD_METADATA
    }
    if metadata:
        leftover["metadata"] = metadata

    # The container order (a missing main shows as a list without it), and main's exact mounts.
    containers, rebuilt = _containers(template), _containers(composed)
    names = [container.get("name") for container in containers]
    main = _main(containers)
    mounts_differ = main is not None and without_zeros(main.get("volumeMounts")) != without_zeros(
        (_main(rebuilt) or {}).get("volumeMounts")
    )
    if mounts_differ or names != [container.get("name") for container in rebuilt]:
        entries: list[dict[str, Any]] = [{"name": name} for name in names]
        if main is not None and mounts_differ:
            entries[names.index(MAIN_CONTAINER)]["volumeMounts"] = copy.deepcopy(
                main.get("volumeMounts") or []
            )
        leftover["spec"] = {"containers": entries}
    if leftover or composed is None:
        return leftover
    return None


def restore_layout(template: dict[str, Any], saved: dict[str, Any], service: dict[str, Any]) -> None:
    """Lay a recorded ``leftover_template`` back over ``template``, composed from ``service``."""
    metadata = {key: value for key, value in (saved.get("metadata") or {}).items() if key not in POD_METADATA}
    if metadata:
        template["metadata"] = {**copy.deepcopy(metadata), **(template.get("metadata") or {})}
    entries = (saved.get("spec") or {}).get("containers")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        return
    containers: list[dict[str, Any]] = template["spec"]["containers"]

    # main's exact mounts, while the flat mounts still say what they said.
    saved_main = _main(entries)
    main = _main(containers)
    if saved_main is not None and main is not None and _mounts_still_match(saved_main, service):
        main.pop("volumeMounts", None)
        if saved_main["volumeMounts"]:
            main["volumeMounts"] = copy.deepcopy(saved_main["volumeMounts"])

    # No main container: drop the empty one composing added. Then the recorded order, same names only.
    names = [str(entry.get("name") or "") for entry in entries]
    if MAIN_CONTAINER not in names and containers and _holds_only_the_cache(containers[0], service):
        containers.pop(0)
    if sorted(names) == sorted(str(item.get("name") or "") for item in containers):
        containers.sort(key=lambda item: names.index(str(item.get("name") or "")))


def _holds_only_the_cache(main: dict[str, Any], service: dict[str, Any]) -> bool:
    # Composing always adds main, and mounts the compilation cache on it: nothing else is the user's.
    flat = service.get("volumeMounts") or []
    only_cache = all(mount.get("useAsCompilationCache") for mount in flat)
    return only_cache and {key: value for key, value in main.items() if key != "volumeMounts"} == {
        "name": MAIN_CONTAINER
    }


def _mounts_still_match(saved_main: dict[str, Any], service: dict[str, Any]) -> bool:
    # The recorded mounts flatten to exactly the live flat mounts, and main has no mounts of its own.
    recorded = saved_main.get("volumeMounts")
    overlay = ((service.get("extraPodSpec") or {}).get("mainContainer") or {}).get("volumeMounts")
    if not isinstance(recorded, list) or overlay:
        return False
    cache = compilation_cache_mount(service)
    cache_block = (
        None if cache is None else {"pvcName": cache.get("name"), "mountPath": cache.get("mountPoint")}
    )
    flat = flat_volume_mounts(cache_block, recorded)
    return [mount_key(item) for item in flat] == [
        mount_key(item) for item in service.get("volumeMounts") or []
    ]


def _name_and_path(mount: dict[str, Any]) -> tuple[str, str]:
    return (mount.get("name") or "", mount.get("mountPoint") or "")


def mount_key(mount: dict[str, Any]) -> tuple[str, str, bool]:
    """A flat mount as name, mount point and cache flag, empties as their zero values."""
    return (mount.get("name") or "", mount.get("mountPoint") or "", bool(mount.get("useAsCompilationCache")))


def _containers(template: dict[str, Any] | None) -> list[dict[str, Any]]:
    containers = ((template or {}).get("spec") or {}).get("containers") or []
    return [item for item in containers if isinstance(item, dict)]


def _main(containers: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((item for item in containers if item.get("name") == MAIN_CONTAINER), None)
