"""The Go types upstream hashes, as data: each struct's JSON fields in Go declaration order.

Two tables, both data about Go packages (no code of theirs):

* ``k8s_api.json``: generated from ``k8s.io/api`` and ``k8s.io/apimachinery`` v0.36.5 by
  reflection (``hack/gotypes``); upstream builds against v0.36.2, whose types are the same.
* ``dynamo_v1beta1.json``: the ``nvidia.com/v1beta1`` component types, written down by reading
  upstream's ``api/v1beta1`` (``dynamocomponentdeployment_types.go``, ``common.go``) in the order of
  ``supplement.md`` §1.2.

A struct is named ``<package path>.<Type>`` (``api/core/v1.PodSpec``); inline embedded structs are
already flattened where they sit, as Go's encoder promotes their fields.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import msgspec

_TABLES = ("k8s_api.json", "dynamo_v1beta1.json")


class Field(msgspec.Struct, frozen=True):
    """One JSON field of a Go struct: its name, type reference, and its ``omitempty``/``omitzero``."""

    name: str
    type: str
    omitempty: bool = False
    omitzero: bool = False


@cache
def _structs() -> dict[str, tuple[Field, ...]]:
    table: dict[str, tuple[Field, ...]] = {}
    for name in _TABLES:
        text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
        for struct, fields in json.loads(text).items():
            table[struct] = tuple(msgspec.convert(field, Field) for field in fields)
    return table


def struct_fields(name: str) -> tuple[Field, ...]:
    """The fields of the Go struct ``name``, in declaration order."""
    try:
        return _structs()[name]
    except KeyError:
        raise ValueError(f"no Go type table for struct {name!r}") from None
