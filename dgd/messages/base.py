"""The base every API model shares, the types for raw JSON and Kubernetes quantities, schema defaults.

Every model is a frozen msgspec Struct whose Python attributes are snake_case and whose JSON
names are the exact camelCase names of the Kubernetes API. Optional fields default to ``None``
and are omitted when encoding, so decoding a document and encoding it again gives back the same
document (as JSON values). Unknown fields are ignored by decoding (objects from a newer API server
still decode); input validation reports them separately (``dgd.domain.admission.schema``).
"""

from __future__ import annotations

import copy
from typing import Annotated, Any

import msgspec

#: JSON that the operator does not model (pod templates, user fields): passed through untouched.
JSONObject = dict[str, Any]

_SCALARS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value: objects and lists copied, scalars (immutable) shared. What
    ``copy.deepcopy`` gives for JSON, a few times faster (it keeps no memo of shared parts); anything
    that is not JSON is handed to ``copy.deepcopy``."""
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if kind is list:
        return [copy_json(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


#: A Kubernetes resource quantity pattern (the one the API server's CRD schemas use).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

#: An int-or-string resource quantity such as ``8Gi`` or ``1``.
Quantity = Annotated[
    int | str,
    msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]

#: An int-or-string value such as a port name or number, or ``25%``.
IntOrString = Annotated[int | str, msgspec.Meta(extra_json_schema={"x-kubernetes-int-or-string": True})]

#: Arbitrary JSON kept as-is (``x-kubernetes-preserve-unknown-fields``).
PreservedObject = Annotated[
    dict[str, Any], msgspec.Meta(extra_json_schema={"x-kubernetes-preserve-unknown-fields": True})
]

#: Any JSON value kept as-is, object or not (``x-kubernetes-preserve-unknown-fields``).
PreservedValue = Annotated[
    Any, msgspec.Meta(extra_json_schema={"x-kubernetes-preserve-unknown-fields": True})
]

#: A Kubernetes DNS-1123 label (lowercase).
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


def schema_default(value: object) -> msgspec.Meta:
    """The schema default upstream's CRD declares (the API server fills it in on every write)."""
    return msgspec.Meta(extra_json_schema={"default": value})


class Model(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    """A Kubernetes API value: frozen, camelCase on the wire, ``None`` fields omitted.

    Subclasses list required fields first (msgspec keeps declaration order for positional use).
    """


def to_builtins(value: Model) -> JSONObject:
    """Encode a model as plain JSON values (dicts, lists, strings, numbers)."""
    out = msgspec.to_builtins(value)
    assert isinstance(out, dict)
    return out


def sorted_keys(value: Any) -> Any:
    """A JSON value with every object's keys in alphabetical order, as Go writes a map (and
    controller-gen a schema); lists keep their order."""
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value
