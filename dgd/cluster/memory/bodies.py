"""The memory port's bodies: what a request sends the server, and the scale view it answers with.

A request body is a Struct or raw JSON, sent as a fresh JSON object (so the caller's value is never
shared with the store) and refused as the API server refuses it: ``Invalid`` if it is not a JSON
object, ``RequestEntityTooLarge`` over ``REQUEST_LIMIT``. A patch carries its resourceVersion
precondition in its metadata, as the API expresses it. A stored object's scale subresource is read
through its kind's scale paths into a ``Scale``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.cluster.errors import Invalid, NotFound, RequestEntityTooLarge
from dgd.cluster.memory.store import Stored
from dgd.cluster.memory.strategies import read_scale
from dgd.cluster.protocol import SCALE_API_VERSION, Scale, ScaleSpec, ScaleStatus
from dgd.cluster.resources import ObjectKey
from dgd.messages.base import JSONObject
from dgd.messages.meta import ObjectMeta
from dgd.messages.meta_validation import REQUEST_LIMIT


def to_json(obj: Any) -> JSONObject:
    """A fresh JSON copy of a request body, a Struct or raw JSON (``Invalid`` if it is not JSON,
    ``RequestEntityTooLarge`` over the API server's limit)."""
    try:
        encoded = msgspec.json.encode(obj)
    except (TypeError, msgspec.EncodeError) as error:
        raise Invalid(f"the object is not JSON: {error}", bad_request=True) from None
    if len(encoded) > REQUEST_LIMIT:
        raise RequestEntityTooLarge(f"Request entity too large: limit is {REQUEST_LIMIT}")
    data = msgspec.json.decode(encoded)
    if not isinstance(data, dict):
        raise Invalid("the body must be a JSON object", bad_request=True)
    return data


def with_version(patch: JSONObject, resource_version: str | None) -> JSONObject:
    """The patch, carrying ``resource_version`` as its precondition (how the API expresses it)."""
    if resource_version is not None:
        patch.setdefault("metadata", {})["resourceVersion"] = resource_version
    return patch


def scale_of(key: ObjectKey[Any], stored: Stored) -> Scale:
    """The scale subresource of ``stored`` (``NotFound`` if its kind has none)."""
    paths = key.resource.scale
    if paths is None:
        raise NotFound(f"{key.resource} has no scale subresource", kind=key.resource.kind, name=key.name)
    spec, status, selector = read_scale(paths, stored.data)
    metadata = stored.metadata
    return Scale(
        api_version=SCALE_API_VERSION,
        metadata=ObjectMeta(
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            uid=metadata["uid"],
            resource_version=metadata["resourceVersion"],
            creation_timestamp=metadata.get("creationTimestamp"),
        ),
        spec=ScaleSpec(replicas=spec),
        status=ScaleStatus(replicas=status, selector=selector),
    )
