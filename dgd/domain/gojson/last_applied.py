"""Upstream's ``nvidia.com/last-applied-hash`` of a desired child, byte for byte where we know its Go type.

Upstream (``controller_common.GetSpecHash``) converts the typed Go object to unstructured JSON, takes
its ``spec`` (or, without one, every field but ``apiVersion``, ``kind``, ``metadata``, ``status``),
sorts it (``SortKeys``: object keys, and every list of objects by ``name``, else by each object's
first key, stably), writes it with Go's ``encoding/json`` and hashes that with SHA-256 (64 hex).

The typed conversion is what makes the bytes Go's: zero fields without ``omitempty`` are written,
quantities are canonical. A DCD goes through its own MarshalJSON too, which drops ``{}`` where the Go
field is a struct value (``resources: {}``, ``metadata: {}``). A kind whose Go type this module has no
table for (Grove's PodCliqueSet, the DGDSA) is hashed from its JSON as it is, by the same sorting
rule: self-consistent, not upstream's bytes (``docs/decisions.md``, "Adoption").
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import msgspec

from dgd.domain.gojson.encode import encode, go_float, html_safe, map_values
from dgd.domain.gojson.types import struct_fields

_ENVELOPE = frozenset({"apiVersion", "kind", "metadata", "status"})
DCD_SPEC = "dynamo/v1beta1.DynamoComponentDeploymentSpec"
#: The Go type of every kind whose content upstream hashes from a typed object we have a table for.
TYPED_KINDS = {
    "Service": "api/core/v1.Service",
    "ServiceAccount": "api/core/v1.ServiceAccount",
    "ConfigMap": "api/core/v1.ConfigMap",
    "Secret": "api/core/v1.Secret",
    "PersistentVolumeClaim": "api/core/v1.PersistentVolumeClaim",
    "Role": "api/rbac/v1.Role",
    "RoleBinding": "api/rbac/v1.RoleBinding",
    "Ingress": "api/networking/v1.Ingress",
    "Deployment": "api/apps/v1.Deployment",
}


def last_applied_hash(obj: dict[str, Any]) -> str:
    """The hash upstream's SyncResource records for the desired object ``obj`` (a JSON document)."""
    return hashlib.sha256(html_safe(sort_keys(content(obj)))).hexdigest()


def content(obj: dict[str, Any]) -> Any:
    """What upstream hashes of ``obj``: its spec (or non-envelope fields) after the typed Go round trip."""
    kind = obj.get("kind")
    if kind == "DynamoComponentDeployment":
        spec = msgspec.json.decode(encode(obj.get("spec") or {}, "struct:" + DCD_SPEC))
        return _strip_value_structs(spec, DCD_SPEC)
    if isinstance(kind, str) and kind in TYPED_KINDS:
        obj = msgspec.json.decode(encode(obj, "struct:" + TYPED_KINDS[kind]))
    if "spec" in obj:
        return obj["spec"]
    return {key: value for key, value in obj.items() if key not in _ENVELOPE}


def sort_keys(value: Any) -> Any:
    """Upstream's ``SortKeys``: lists of objects sorted stably by ``name``, else by first key (recursively);
    object keys are sorted when written (``plain``), floats are written as Go writes a float64
    (``go_float``). ``value`` is not changed: what needs a change is copied, the rest shared."""
    kind = type(value)
    if kind is dict:
        return map_values(value, sort_keys)
    if kind is list:
        items = [sort_keys(item) for item in value]
        if items and type(value[0]) is dict:
            items.sort(key=functools.cmp_to_key(_compare))
        return items
    if kind is float:
        return go_float(value)  # an integral one is an integer, as Go writes a float64
    return value


def _before(left: Any, right: Any) -> bool:
    if not (isinstance(left, dict) and isinstance(right, dict)):
        return False
    if isinstance(left.get("name"), str) and isinstance(right.get("name"), str):
        return bool(left["name"] < right["name"])
    if left and right:
        return bool(min(left) < min(right))
    return False


def _compare(left: Any, right: Any) -> int:
    return -1 if _before(left, right) else 1 if _before(right, left) else 0


def _strip_value_structs(value: Any, struct: str) -> Any:
    """A DCD's MarshalJSON normalisation: drop ``{}`` where the Go field is a struct value, bottom up."""
    for field in struct_fields(struct):
        if field.name not in value:
            continue
        child = _strip_typed(value[field.name], field.type)
        value[field.name] = child
        if child == {} and field.type.startswith("struct:"):
            del value[field.name]
    return value


def _strip_typed(value: Any, type_ref: str) -> Any:
    kind, _, rest = type_ref.partition(":")
    if kind == "ptr":
        return _strip_typed(value, rest)
    if kind == "struct" and isinstance(value, dict):
        return _strip_value_structs(value, rest)
    if kind == "list" and isinstance(value, list):
        return [_strip_typed(item, rest) for item in value]
    if kind == "map" and isinstance(value, dict):
        return {key: _strip_typed(item, rest) for key, item in value.items()}
    return value
