"""What a request must meet before the memory API server applies its verb, and the errors it is
answered with when it does not.

A request's object carries metadata (a namespace exactly when the kind is namespaced) and a name; a
PUT of a custom resource carries the resourceVersion it was read at, and a resourceVersion given
must be the stored object's. A missing object or subresource is ``NotFound``, a failed precondition
``Conflict``, in the API server's wording. Pure checks: they read what they are given and raise,
nothing else.
"""

from __future__ import annotations

from typing import Any

from dgd.cluster.errors import Cause, Conflict, Invalid, NotFound
from dgd.cluster.memory.store import Stored, StoreKey
from dgd.cluster.memory.validation import invalid
from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject


def require_metadata(resource: Resource[Any], data: JSONObject) -> JSONObject:
    """The object's metadata, with a namespace exactly when ``resource`` is namespaced."""
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        raise invalid(resource, {}, [Cause("metadata", "Required value")])
    if resource.namespaced and not metadata.get("namespace"):
        raise invalid(resource, metadata, [Cause("metadata.namespace", "Required value")])
    if not resource.namespaced:
        metadata.pop("namespace", None)
    return metadata


def require_name(metadata: JSONObject) -> str:
    name = metadata.get("name")
    if not name:
        raise Invalid("metadata.name: Required value", bad_request=True)
    return str(name)


def require_version(resource: Resource[Any], current: Stored, resource_version: Any) -> None:
    """A custom resource takes no unconditional update: a PUT must carry the resourceVersion read."""
    if resource.custom and not resource_version:
        cause = Cause("metadata.resourceVersion", "Invalid value: 0: must be specified for an update")
        raise invalid(resource, current.metadata, [cause])


def check_version(resource: Resource[Any], current: Stored, resource_version: Any) -> None:
    if resource_version and str(resource_version) != str(current.rv):
        raise conflict(
            resource,
            current.key,
            "the object has been modified; please apply your changes to the latest version and try again",
        )


def not_found(resource: Resource[Any], namespace: str | None, name: str, subresource: str = "") -> NotFound:
    what = (
        f'{resource} "{name}" not found'
        if not subresource
        else f"{resource} has no {subresource} subresource"
    )
    return NotFound(what, kind=resource.kind, namespace=namespace, name=name)


def conflict(resource: Resource[Any], key: StoreKey, why: str) -> Conflict:
    _, namespace, name = key
    return Conflict(
        f'Operation cannot be fulfilled on {resource} "{name}": {why}',
        kind=resource.kind,
        namespace=namespace,
        name=name,
    )
