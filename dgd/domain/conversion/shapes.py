"""Input shapes a conversion checks before it interprets a document, and the error it reports.

A conversion reads plain JSON values. Before it interprets one it checks that every field it reads
has the JSON type it expects, so a bad document fails with a ``ConversionError`` naming the JSON
path (``spec.services[Frontend].componentType``) rather than with a ``KeyError`` deep inside.

A shape is a JSON type name, an object's field shapes, ``("list", element)`` or ``("map", value)``;
``null`` always means "not set" and passes. Fields a shape does not list are not checked.
"""

from __future__ import annotations

from typing import Any

from dgd.domain.quantity import canonical_quantity

Shape = str | dict[str, Any] | tuple[str, Any]

#: Shapes several documents share.
STRINGS: Shape = ("map", "string")
PROVIDER_OVERRIDE: Shape = {"apiVersion": "string", "target": "string", "value": "object"}

#: The graph-level spec and status fields both versions of a DGD share (``graph``).
GRAPH_SPEC: dict[str, Shape] = {
    "providerOverride": PROVIDER_OVERRIDE,
    "annotations": STRINGS,
    "labels": STRINGS,
    "priorityClassName": "string",
    "backendFramework": "string",
    "restart": "object",
    "experimental": "object",
}
GRAPH_STATUS: dict[str, Shape] = {
    "state": "string",
    "conditions": ("list", "object"),
    "checkpoints": ("map", "object"),
}

_MESSAGES = {
    "object": "must be an object",
    "string": "must be a string",
    "boolean": "must be a boolean",
    "integer": "must be an integer",
    "list": "must be a list",
    "resource": "must be a string quantity such as 8Gi",
    "quantity": "must be a Kubernetes quantity such as 8Gi",
}


class ConversionError(ValueError):
    """Input the conversion cannot handle, at ``path`` (``spec.services[Frontend].componentType``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def check_shape(value: Any, shape: Shape, path: str) -> None:
    """Raise ``ConversionError`` at the first place where ``value`` does not have ``shape``."""
    if value is None:
        return
    if isinstance(shape, dict):
        _require(isinstance(value, dict), "object", path)
        for key, field_shape in shape.items():
            check_shape(value.get(key), field_shape, f"{path}.{key}")
    elif isinstance(shape, tuple) and shape[0] == "list":
        _require(isinstance(value, list), "list", path)
        for index, item in enumerate(value):
            check_shape(item, shape[1], f"{path}[{index}]")
    elif isinstance(shape, tuple):
        _require(isinstance(value, dict), "object", path)
        for key, item in value.items():
            check_shape(item, shape[1], f"{path}[{key}]")
    else:
        _require(_is_kind(value, shape), shape, path)


def check_identity(doc: dict[str, Any], api_version: str, kind: str, target: str) -> None:
    """The document is a ``kind`` at ``api_version``, the version a conversion to ``target`` reads."""
    if doc.get("apiVersion") != api_version:
        raise ConversionError(
            "apiVersion", f"must be {api_version} to convert to {target}, got {doc.get('apiVersion')!r}"
        )
    if doc.get("kind") != kind:
        raise ConversionError("kind", f"must be {kind}, got {doc.get('kind')!r}")


def check_document(
    doc: dict[str, Any], api_version: str, kind: str, target: str, parts: dict[str, Shape]
) -> None:
    """:func:`check_identity`, then each top-level part of ``doc`` (``metadata``, ``spec``, ``status``)
    against its shape in ``parts``: ``ConversionError`` at the first place that is off."""
    check_identity(doc, api_version, kind, target)
    for key, shape in parts.items():
        check_shape(doc.get(key), shape, key)


def _is_kind(value: Any, kind: str) -> bool:
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "resource":
        return isinstance(value, str) or is_int
    if kind == "quantity":
        return (isinstance(value, str) or is_int) and canonical_quantity(value) is not None
    if kind == "integer":
        return is_int
    types: dict[str, type] = {"object": dict, "string": str, "boolean": bool, "list": list}
    return isinstance(value, types[kind])


def _require(ok: bool, kind: str, path: str) -> None:
    if not ok:
        raise ConversionError(path, _MESSAGES[kind])
