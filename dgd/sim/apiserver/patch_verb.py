"""PATCH on a resource path of the HTTP facade: how each patch flavour reaches the memory cluster.

``ResourceVerbs`` (``dgd.sim.apiserver.resources``) hands every PATCH of an object, of its
``status``, or of its ``scale`` here. A JSON merge patch goes to the port as it is; a JSON patch or
a strategic merge patch (built-in kinds only) is applied (``dgd.sim.apiserver.patch``) to the object
read, then written back as a merge patch conditional on the resourceVersion read (retried if the
object changed meanwhile, as the API server retries internally); server-side apply merge-patches the
applied configuration, or creates the object (``facade_patch``). A Scale is patched the same way,
then written back whole.

A kind served at a version other than the stored one (``Target.converted``): a patch of any flavour
is applied to the object as the client sees it, then written back converted (``facade_conversion``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from dgd.cluster import merge_patch
from dgd.cluster.errors import Cause, Conflict, Invalid, NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import ObjectKey
from dgd.messages.base import JSONObject
from dgd.sim.apiserver.conversion import Converted
from dgd.sim.apiserver.patch import json_patch, strategic_merge
from dgd.sim.apiserver.wire import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_PATCH,
    HttpError,
    body,
    in_namespace,
    media_type,
    named,
    object_body,
    respond,
    to_scale,
)

if TYPE_CHECKING:
    from dgd.sim.apiserver.resources import Target

#: How often a JSON patch or strategic merge patch is retried when the object changed under it.
REWRITE_ATTEMPTS = 5


async def patch_object(cluster: MemoryCluster, request: web.Request, target: Target) -> web.StreamResponse:
    """PATCH of an object or its ``status``, in the flavour the request's media type names."""
    key, kind, status = target.key(), media_type(request), target.subresource == "status"
    if kind == APPLY_PATCH and not request.query.get("fieldManager"):
        cause = Cause("fieldManager", "Required value: is required for apply patch")
        raise Invalid('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value', causes=(cause,))
    if target.converted is not None:
        return await _patch_converted(cluster, request, target, target.converted)
    patch = cluster.patch_status if status else cluster.patch
    if kind == MERGE_PATCH:
        return respond(await patch(key, await object_body(request)))
    if kind == APPLY_PATCH:
        return await _apply(cluster, key, await object_body(request), status=status)
    if kind == JSON_PATCH:
        operations = await body(request)
        return respond(await _rewrite(cluster, key, lambda current: json_patch(current, operations), status))
    if kind == STRATEGIC_PATCH and _builtin(key.resource.group):
        change = await object_body(request)
        return respond(await _rewrite(cluster, key, lambda current: strategic_merge(current, change), status))
    raise _unsupported_patch(kind, key.resource.group)


async def _patch_converted(
    cluster: MemoryCluster, request: web.Request, target: Target, converted: Converted
) -> web.StreamResponse:
    """A patch at a served version that is not stored: applied to the object as the client sees
    it, the result converted back and written (as the API server patches through conversion)."""
    key, kind, status = target.key(), media_type(request), target.subresource == "status"
    if kind == JSON_PATCH:
        operations = await body(request)

        def change(current: JSONObject) -> Any:
            return json_patch(converted.to_shown(current), operations)

    elif kind in (MERGE_PATCH, APPLY_PATCH):
        patch = await object_body(request)

        def change(current: JSONObject) -> Any:
            return merge_patch.apply(converted.to_shown(current), patch)

    else:
        raise _unsupported_patch(kind, key.resource.group)

    def write(current: JSONObject) -> Any:
        changed = change(current)
        return converted.to_stored(changed) if isinstance(changed, dict) else changed

    try:
        return respond(converted.to_shown(await _rewrite(cluster, key, write, status)))
    except NotFound:
        # Server-side apply creates what is not there yet.
        if kind != APPLY_PATCH or status:
            raise
    created = named(in_namespace(patch, key.namespace), key.name)
    stored = await cluster.create(key.resource, converted.to_stored(created))
    return respond(converted.to_shown(stored), status=201)


async def _apply(
    cluster: MemoryCluster, key: ObjectKey[JSONObject], applied: JSONObject, *, status: bool
) -> web.Response:
    """Server-side apply, approximated: merge-patch the applied configuration, or create it."""
    try:
        if status:
            return respond(await cluster.patch_status(key, applied))
        return respond(await cluster.patch(key, applied))
    except NotFound:
        if status:
            raise
    created = named(in_namespace(applied, key.namespace), key.name)
    return respond(await cluster.create(key.resource, created), status=201)


async def _rewrite(
    cluster: MemoryCluster, key: ObjectKey[JSONObject], change: Callable[[JSONObject], Any], status: bool
) -> JSONObject:
    """Read, change, write back as a merge patch conditional on the version read; retried on conflict."""
    patch = cluster.patch_status if status else cluster.patch
    for attempt in range(REWRITE_ATTEMPTS):
        current = await cluster.get(key)
        changed = change(current)
        if not isinstance(changed, dict):
            raise Invalid("the patched object is not a JSON object", bad_request=True)
        version = current["metadata"].get("resourceVersion")
        asked = (changed.get("metadata") or {}).get("resourceVersion")
        difference = merge_patch.diff(current, changed)
        difference.setdefault("metadata", {})["resourceVersion"] = asked or version
        try:
            result: JSONObject = await patch(key, difference)
            return result
        except Conflict:
            if asked not in (None, version) or attempt == REWRITE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


async def patch_scale(cluster: MemoryCluster, request: web.Request, target: Target) -> web.StreamResponse:
    """PATCH of the ``scale`` subresource: the Scale read, patched, replaced; retried on conflict."""
    key, kind = target.key(), media_type(request)
    change = await body(request)
    for attempt in range(REWRITE_ATTEMPTS):
        current = msgspec.to_builtins(await cluster.get_scale(key))
        if kind == JSON_PATCH:
            patched = json_patch(current, change)
        elif kind in (MERGE_PATCH, APPLY_PATCH, STRATEGIC_PATCH):
            patched = merge_patch.apply(current, change)
        else:
            raise HttpError(415, "UnsupportedMediaType", f"unsupported patch type {kind}")
        try:
            return respond(await cluster.replace_scale(key, to_scale(patched)))
        except Conflict:
            if attempt == REWRITE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _unsupported_patch(kind: str, group: str) -> HttpError:
    return HttpError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}" + (f", {STRATEGIC_PATCH}" if _builtin(group) else ""),
    )


def _builtin(group: str) -> bool:
    """Whether ``group`` is one of Kubernetes' own (strategic merge patch applies) or a custom one."""
    return group in ("", "apps", "autoscaling", "batch", "policy") or group.endswith(".k8s.io")
