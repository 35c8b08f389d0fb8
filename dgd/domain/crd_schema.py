"""Structural OpenAPI v3 schemas for CustomResourceDefinitions, derived from the message Structs.

``msgspec.json.schema`` describes a Struct in JSON Schema: shared definitions behind ``$ref``,
optional fields as ``anyOf [T, null]``, raw JSON as a bare ``object``. The API server wants a
*structural* schema instead: every node self-contained and typed, except the two escape hatches
``x-kubernetes-int-or-string`` and ``x-kubernetes-preserve-unknown-fields``. ``structural_schema``
makes that translation and refuses (``UnsupportedSchema``) anything it cannot express faithfully,
so a model change that would silently weaken the CRD fails instead.

Descriptions: a Struct's docstring describes its object (msgspec puts it there), and a field's
docstring (``field_docs``) describes its property, replacing the Struct's where both exist.
"""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect

from dgd.domain.field_docs import field_docs
from dgd.messages.base import JSONObject, Model, sorted_keys

#: The fields of every root object that belong to the API server, not to the kind's own schema.
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")

#: The only ``anyOf`` a structural schema may keep: the int-or-string form.
INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]

_NULL = {"type": "null"}

_ENUM_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
)


class UnsupportedSchema(ValueError):
    """A model uses a type that has no structural form (a union of several non-null types, a cycle)."""


def structural_schema(model: type[Model]) -> JSONObject:
    """The ``openAPIV3Schema`` of a root kind (a Struct tagged with its ``kind``).

    Guarantees: no ``$ref``/``$defs``/``title``/``default: null`` remain; every node has a ``type``
    unless it is int-or-string or preserves unknown fields; ``apiVersion`` and ``kind`` are plain
    strings (the kind's tag enum does not leak), ``metadata`` a plain object and nothing more (the API
    server refuses a description there); every other property whose field has a docstring carries it
    as its ``description``; keys are sorted, so the same models
    always give the same schema.
    """
    document = msgspec.json.schema(model)
    definitions: dict[str, Any] = document.get("$defs", {})
    root = _structural(document, definitions, frozenset())
    # The API server validates apiVersion, kind and metadata itself; the schema only names them.
    properties = root["properties"]
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string", "description": f"The kind of this object: `{_kind(model)}`."}
    properties["metadata"] = {"type": "object"}
    # Field docstrings last: they describe the properties as the steps above left them.
    _describe(root, msgspec.inspect.type_info(model))
    # The API server refuses a CRD whose root metadata says more than its type (a description too).
    properties["metadata"] = {"type": "object"}
    required = [name for name in root.get("required", []) if name not in _ROOT_FIELDS]
    if required:
        root["required"] = required
    else:
        root.pop("required", None)
    ordered: JSONObject = sorted_keys(root)
    return ordered


def node_at(schema: JSONObject, path: str) -> JSONObject:
    """The schema node at a field path; ``KeyError`` if the schema has no such node.

    A path names properties joined by dots; ``[]`` after a name steps into a list's items and
    ``{}`` into a map's values: ``spec.components[].experimental``, ``status.components{}.replicas``.
    """
    node = schema
    for segment in path.split("."):
        name, steps = segment, list[str]()
        while name.endswith(("[]", "{}")):
            steps.insert(0, "items" if name.endswith("[]") else "additionalProperties")
            name = name[:-2]
        node = node["properties"][name]
        for step in steps:
            node = node[step]
    return node


def _kind(model: type[Model]) -> str:
    tag = model.__struct_config__.tag
    assert isinstance(tag, str), f"{model.__name__} is not tagged with its kind"
    return tag


def _describe(node: JSONObject, info: msgspec.inspect.Type) -> None:
    """Give each property below ``node`` its field's docstring, following the model's types."""
    if isinstance(info, msgspec.inspect.Metadata):
        _describe(node, info.type)
    elif isinstance(info, msgspec.inspect.UnionType):
        # Only ``T | None`` has fields below it; int-or-string has none.
        branches = [branch for branch in info.types if not isinstance(branch, msgspec.inspect.NoneType)]
        if len(branches) == 1:
            _describe(node, branches[0])
    elif isinstance(info, msgspec.inspect.StructType):
        docs = field_docs(info.cls)
        properties = node.get("properties", {})
        # Fields of a node the schema leaves unexpanded (``metadata``, a plain object) are not shown.
        for field in (field for field in info.fields if field.encode_name in properties):
            child = properties[field.encode_name]
            if field.name in docs:
                child["description"] = _markup(docs[field.name])
            _describe(child, field.type)
    elif isinstance(info, msgspec.inspect.ListType | msgspec.inspect.SetType | msgspec.inspect.VarTupleType):
        _describe(node.get("items", {}), info.item_type)
    elif isinstance(info, msgspec.inspect.DictType) and isinstance(node.get("additionalProperties"), dict):
        _describe(node["additionalProperties"], info.value_type)


def _markup(text: str) -> str:
    """reStructuredText's inline code (double backticks) as Markdown's, which kubectl users read."""
    return text.replace("``", "`")


def _structural(node: JSONObject, definitions: dict[str, Any], seen: frozenset[str]) -> JSONObject:
    # A reference is replaced by its definition; the referring node's own keys (if any) win.
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise UnsupportedSchema(f"recursive type {name!r} has no structural schema")
        merged = {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, definitions, seen | {name})

    # An optional field is ``anyOf [T, null]``: the API server expresses "absent" by omission.
    if "anyOf" in node and not node.get("x-kubernetes-int-or-string"):
        branches = [branch for branch in node["anyOf"] if branch != _NULL]
        if len(branches) != 1:
            raise UnsupportedSchema(f"a union of {len(branches)} types has no structural schema: {node}")
        outer = {k: v for k, v in node.items() if k != "anyOf" and not (k == "default" and v is None)}
        return _structural({**outer, **branches[0]}, definitions, seen)

    out: JSONObject = {}
    for key, value in node.items():
        if key in ("title", "$defs") or (key == "default" and value is None):
            continue
        if key == "additionalProperties" and value is False:
            # Unknown fields are pruned anyway; the API server rejects an explicit false.
            continue
        if key == "description":
            out[key] = _markup(value)
        elif key == "properties":
            out[key] = {name: _structural(child, definitions, seen) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, definitions, seen)
        elif key == "anyOf":
            # Reached only with x-kubernetes-int-or-string: the one anyOf a structural schema allows.
            out[key] = _int_or_string_any_of(value)
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            # JSON Schema's numeric bound becomes OpenAPI v3.0's bound plus a boolean flag.
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
        else:
            out[key] = value
    return _typed(out)


def _int_or_string_any_of(branches: list[Any]) -> list[JSONObject]:
    if [branch for branch in branches if branch != _NULL] != INT_OR_STRING_ANY_OF:
        raise UnsupportedSchema(f"x-kubernetes-int-or-string on a union other than int | str: {branches}")
    return [dict(branch) for branch in INT_OR_STRING_ANY_OF]


def _typed(node: JSONObject) -> JSONObject:
    # A Literal gives an untyped enum; its values say which type it is.
    if "enum" in node and "type" not in node:
        node["type"] = _enum_type(node["enum"])
    # Raw JSON: an object without a property list (a Struct always has one) or any value at all.
    if node.get("type") == "object" and "properties" not in node and "additionalProperties" not in node:
        node["x-kubernetes-preserve-unknown-fields"] = True
    if "type" not in node and not node.get("x-kubernetes-int-or-string"):
        node["x-kubernetes-preserve-unknown-fields"] = True
    # An empty property list (a marker Struct) and an empty required list say nothing.
    if node.get("properties") == {}:
        del node["properties"]
    if node.get("required") == []:
        del node["required"]
    return node


def _enum_type(values: list[Any]) -> str:
    for python_type, schema_type in _ENUM_TYPES:
        if all(isinstance(v, python_type) and (python_type is bool) == isinstance(v, bool) for v in values):
            return schema_type
    raise UnsupportedSchema(f"an enum of mixed types has no structural schema: {values}")
