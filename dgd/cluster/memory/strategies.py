"""How each verb may change an object: the API server's REST strategies, as pure functions on JSON.

- create: the server owns uid, resourceVersion, creationTimestamp and generation (1); a kind with
  a status subresource starts without status; deletion fields are dropped.
- update (main resource): system metadata is kept from the stored object; with a status
  subresource, ``status`` is kept too (the client's is ignored).
- update (status subresource): everything but ``status`` is kept from the stored object.
- generation: +1 when ``spec`` changed (for a kind without a spec: anything outside ``metadata``,
  and outside ``status`` if status is a subresource), and when a deletionTimestamp is first set;
  never otherwise.
- scale: reads and writes the paths of the kind's scale subresource.
"""

from __future__ import annotations

from typing import Any

from dgd.cluster.errors import Cause, ClusterError, Conflict, Invalid
from dgd.cluster.memory.selectors import from_label_selector
from dgd.cluster.resources import Resource, ScalePaths
from dgd.messages.base import JSONObject

#: The garbage collector's finalizers (``metav1.FinalizerOrphanDependents`` and ``...DeleteDependents``).
ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"

#: Metadata only the server writes: a client's values are replaced by the stored ones on update.
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


def prepare_create(resource: Resource[Any], data: JSONObject, *, uid: str, now: str) -> JSONObject:
    """``data`` as the server stores a new object (mutated in place and returned)."""
    metadata: JSONObject = data["metadata"]
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        metadata.pop(field, None)
    metadata.pop("generation", None)
    metadata.update(uid=uid, creationTimestamp=now)
    if resource.generation:
        metadata["generation"] = 1
    if resource.status:
        data.pop("status", None)
    if (resource.group, resource.plural) == ("", "namespaces"):
        # The namespace lifecycle's defaults: held by the ``kubernetes`` finalizer, active.
        data["spec"] = {"finalizers": ["kubernetes"], **(data.get("spec") or {})}
        data["status"] = {"phase": "Active"}
    return data


def prepare(resource: Resource[Any], old: JSONObject, new: JSONObject, *, status: bool) -> JSONObject:
    """``new`` as the server stores an update of ``old``: of its status subresource, or of the object."""
    return prepare_status_update(old, new) if status else prepare_update(resource, old, new)


def prepare_update(resource: Resource[Any], old: JSONObject, new: JSONObject) -> JSONObject:
    """``new`` as the server stores a main-resource update of ``old`` (``new`` is mutated)."""
    old_meta: JSONObject = old["metadata"]
    new_meta: JSONObject = new["metadata"]
    # A uid that does not match is a failed precondition; every other system field is silently kept.
    if new_meta.get("uid") not in (None, old_meta["uid"]):
        conflict = Conflict(
            f'Operation cannot be fulfilled on {resource} "{old_meta["name"]}": Precondition failed: UID in '
            f"precondition: {new_meta['uid']}, UID in object meta: {old_meta['uid']}"
        )
        raise _naming(conflict, resource, old_meta)
    _keep(old_meta, new_meta, _SYSTEM_FIELDS)
    # Once deleting, finalizers may only be removed.
    added = set(new_meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
    if old_meta.get("deletionTimestamp") and added:
        refused = Invalid(
            f"{resource.kind} {old_meta['name']!r}: metadata.finalizers: no new finalizers can be added "
            f"if the object is being deleted, found new finalizers {sorted(added)}",
            causes=(Cause("metadata.finalizers", "no new finalizers can be added while deleting"),),
        )
        raise _naming(refused, resource, old_meta)
    if (resource.group, resource.plural) == ("", "pods") and _node(old) != _node(new):
        why = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, ..."
        refused = Invalid(
            f"Pod {old_meta['name']!r} is invalid: spec: {why} (spec.nodeName is set through the binding)",
            causes=(Cause("spec", why),),
        )
        raise _naming(refused, resource, old_meta)
    if resource.status:
        _keep(old, new, ("status",))
    return with_generation(resource, old, new)


def _naming(error: ClusterError, resource: Resource[Any], metadata: JSONObject) -> ClusterError:
    """``error`` naming the stored object the update was refused for."""
    error.kind, error.namespace, error.name = resource.kind, metadata.get("namespace"), metadata["name"]
    return error


def _node(pod: JSONObject) -> Any:
    return (pod.get("spec") or {}).get("nodeName")


def prepare_status_update(old: JSONObject, new: JSONObject) -> JSONObject:
    """``old`` with ``new``'s status and nothing else of ``new``."""
    result = dict(old)
    result["metadata"] = dict(old["metadata"])
    _keep(new, result, ("status",))
    return result


def with_generation(resource: Resource[Any], old: JSONObject, new: JSONObject) -> JSONObject:
    """``new`` with generation bumped if its desired state differs from ``old``'s: its ``spec``, or
    for a kind without one, everything outside metadata (and status, if it is a subresource)."""
    if not resource.generation:
        new["metadata"].pop("generation", None)
        return new
    if resource.has_spec:
        changed = old.get("spec") != new.get("spec")
    else:
        ignored = ("metadata", "status") if resource.status else ("metadata",)
        changed = _without(old, ignored) != _without(new, ignored)
    generation = int(old["metadata"].get("generation") or 0)
    new["metadata"]["generation"] = generation + 1 if changed else generation
    return new


def mark_deleting(data: JSONObject, now: str) -> JSONObject:
    """``data`` with a deletionTimestamp (the first one bumps generation, where the kind keeps one; a
    later one changes nothing)."""
    metadata: JSONObject = data["metadata"]
    if not metadata.get("deletionTimestamp"):
        metadata["deletionTimestamp"] = now
        if "generation" in metadata:
            metadata["generation"] = int(metadata["generation"]) + 1
    metadata["deletionGracePeriodSeconds"] = 0
    return data


def deletion_finalizers(finalizers: list[str], propagation: str | None) -> list[str]:
    """The finalizers after a delete request: the GC's own are set by ``propagation``; without one,
    those already on the object stand (the API server's ``deletionFinalizersForGarbageCollection``)."""
    if propagation is None:
        return finalizers
    kept = [finalizer for finalizer in finalizers if finalizer not in (ORPHAN, FOREGROUND)]
    if propagation == "Orphan":
        kept.append(ORPHAN)
    elif propagation == "Foreground":
        kept.append(FOREGROUND)
    return kept


def read_scale(paths: ScalePaths, data: JSONObject) -> tuple[int, int, str | None]:
    """(spec replicas, status replicas, selector) of a scalable object; absent counts read as 0."""
    spec = _at(data, paths.spec_replicas)
    status = _at(data, paths.status_replicas)
    selector = _at(data, paths.selector) if paths.selector else None
    if isinstance(selector, dict):
        selector = str(from_label_selector(selector))
    return (
        spec if isinstance(spec, int) else 0,
        status if isinstance(status, int) else 0,
        selector if isinstance(selector, str) else None,
    )


def write_scale(paths: ScalePaths, data: JSONObject, replicas: int) -> JSONObject:
    """``data`` with ``replicas`` at the spec replicas path (mutated and returned)."""
    *parents, leaf = _path(paths.spec_replicas)
    node = data
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = replicas
    return data


def _keep(source: JSONObject, target: JSONObject, fields: tuple[str, ...]) -> None:
    for field in fields:
        if field in source:
            target[field] = source[field]
        else:
            target.pop(field, None)


def _without(data: JSONObject, fields: tuple[str, ...]) -> JSONObject:
    return {key: value for key, value in data.items() if key not in fields}


def _path(path: str) -> list[str]:
    return path.lstrip(".").split(".")


def _at(data: JSONObject, path: str) -> Any:
    node: Any = data
    for part in _path(path):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node
