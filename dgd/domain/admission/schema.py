"""Structural checking of raw documents against the JSON schema of our models.

msgspec stops at the first problem it meets; users want every problem at once. So before a
document is decoded, it is walked against the schema msgspec generates for the model, which is
the same schema the CRDs are generated from, and every type, enum, pattern, bound, required and
unknown-field problem is collected. A document that passes decodes without error.

``null`` counts as absent, as it does for the API server, which prunes nulls in structural schemas.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any

import msgspec

from dgd.domain.admission.errors import FieldError, child, show
from dgd.messages.component import BACKEND_FRAMEWORKS, COMPONENT_TYPES
from dgd.messages.dgd import DGD_STATES, LABEL_KEY_PATTERN

Schema = dict[str, Any]

#: Words for the patterns users meet, so messages say what is allowed instead of a regex.
_ENDS = "starting and ending with a letter or digit"
_PATTERN_WORDS: dict[str, str] = {
    r"^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$": f"letters, digits and '-', {_ENDS}",
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": f"lowercase letters, digits and '-', {_ENDS}",
    r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$": f"lowercase letters, digits and '-', {_ENDS}",
    LABEL_KEY_PATTERN: (
        "an optional DNS-subdomain prefix and '/', then a name of at most 63 letters, digits, "
        "'-', '_' and '.', " + _ENDS
    ),
    r"^(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})\.(0|[1-9][0-9]{0,3})$": (
        "MAJOR.MINOR.PATCH, each a number from 0 to 9999 without leading zeros"
    ),
}

#: Enums shown in their declared order (msgspec sorts them in the schema).
_ENUM_ORDERS: tuple[tuple[str, ...], ...] = (COMPONENT_TYPES, BACKEND_FRAMEWORKS, DGD_STATES)

_JSON_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


@functools.cache
def schema_of(model: Any) -> tuple[Schema, Schema]:
    """The (root schema, definitions) msgspec generates for ``model``."""
    full = msgspec.json.schema(model)
    defs: Schema = full.pop("$defs", {})
    return full, defs


#: The hint for a boolean or number where a string belongs.
_QUOTE_IT = (
    " (kubectl reads a plain y, n, yes, no, on, off, true, false or number as YAML 1.1 does, not as a "
    "string: quote the value)"
)


def check(document: Any, model: Any, path: str = "") -> list[FieldError]:
    """Every structural problem of ``document`` against ``model``'s schema, in document order."""
    root, defs = schema_of(model)
    errors: list[FieldError] = []
    _Walker(defs, errors).walk(document, root, path)
    return errors


class _Walker:
    def __init__(self, defs: Schema, errors: list[FieldError]) -> None:
        self.defs = defs
        self.errors = errors

    def fail(self, path: str, message: str) -> None:
        self.errors.append(FieldError(path, message))

    def resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            schema = self.defs[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def walk(self, value: Any, schema: Schema, path: str) -> None:
        schema = self.resolve(schema)
        if value is None:
            return
        # Optional fields are `anyOf [X, null]`; int-or-string is `anyOf [integer, string]`.
        if "anyOf" in schema:
            branches = [self.resolve(b) for b in schema["anyOf"] if self.resolve(b).get("type") != "null"]
            if schema.get("x-kubernetes-int-or-string"):
                self.int_or_string(value, schema, path)
            elif len(branches) == 1:
                self.walk(value, branches[0], path)
            else:
                self.any_of(value, branches, path)
            return
        if schema.get("x-kubernetes-int-or-string"):
            self.int_or_string(value, schema, path)
            return
        if "enum" in schema:
            if value not in schema["enum"]:
                allowed = ", ".join(str(v) if v != "" else '""' for v in _in_declared_order(schema["enum"]))
                self.fail(path, f"{show(value)} is not one of {allowed}")
            return
        kind = schema.get("type")
        if kind is None:
            return  # any JSON value is accepted here
        if not _has_type(value, kind):
            # A boolean or number where a string belongs is most often a plain YAML scalar kubectl reads
            # as one (`n`, `off`, `1e3`): say how to write the string.
            quote = _QUOTE_IT if kind == "string" and isinstance(value, bool | int | float) else ""
            self.fail(path, f"{show(value)} is not {_JSON_TYPES.get(kind, kind)}{quote}")
            return
        if kind == "object":
            self.object(value, schema, path)
        elif kind == "array":
            self.array(value, schema, path)
        elif kind == "string":
            self.string(value, schema, path)
        elif kind in ("integer", "number"):
            self.number(value, schema, path)

    def any_of(self, value: Any, branches: list[Schema], path: str) -> None:
        for branch in branches:
            probe: list[FieldError] = []
            _Walker(self.defs, probe).walk(value, branch, path)
            if not probe:
                return
        kinds = " or ".join(_JSON_TYPES.get(b.get("type", ""), "a value") for b in branches)
        self.fail(path, f"{show(value)} is not {kinds}")

    def int_or_string(self, value: Any, schema: Schema, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int | str):
            self.fail(path, f"{show(value)} is not an integer or a string")
            return
        pattern = schema.get("pattern")
        if isinstance(value, str) and pattern and not _matches(pattern, value):
            self.fail(path, f"{show(value)} is not a quantity (such as 1, 500m, 8Gi or 2.5G)")

    def object(self, value: dict[str, Any], schema: Schema, path: str) -> None:
        properties: Schema = schema.get("properties", {})
        for name in schema.get("required", []):
            if value.get(name) is None and name != "kind":
                self.fail(child(path, name), "is required")
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                self.walk(item, properties[key], child(path, key))
            elif isinstance(additional, dict):
                self.walk(item, additional, child(path, key, map_key=True))
            elif "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
                self.fail(child(path, key), _unknown(key, properties))

    def array(self, value: list[Any], schema: Schema, path: str) -> None:
        most = schema.get("maxItems")
        if most is not None and len(value) > most:
            self.fail(path, f"has {len(value)} items: at most {most} are allowed")
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                self.walk(item, items, child(path, index))

    def string(self, value: str, schema: Schema, path: str) -> None:
        least, most, pattern = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
        if least is not None and len(value) < least:
            self.fail(
                path,
                "must not be empty" if least == 1 else f"{show(value)} is shorter than {least} characters",
            )
        elif most is not None and len(value) > most:
            self.fail(path, f"{show(value)} is {len(value)} characters long: at most {most} are allowed")
        elif pattern and not _matches(pattern, value):
            words = _PATTERN_WORDS.get(pattern, f"the pattern {pattern}")
            self.fail(path, f"{show(value)} is not allowed: use {words}")

    def number(self, value: float, schema: Schema, path: str) -> None:
        least, most = schema.get("minimum"), schema.get("maximum")
        if least is not None and value < least:
            self.fail(path, f"{show(value)} is too small: must be at least {least}")
        elif most is not None and value > most:
            self.fail(path, f"{show(value)} is too large: must be at most {most}")


def _has_type(value: Any, kind: str) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _unknown(key: str, properties: Schema) -> str:
    close = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.75)
    if close:
        hint = f' (did you mean "{close[0]}"?)'
    elif properties:
        hint = f"; allowed fields are {', '.join(sorted(properties))}"
    else:
        hint = "; this field takes no settings: write {}"
    return f"unknown field {show(key)}{hint}"


def _in_declared_order(values: list[Any]) -> list[Any]:
    for order in _ENUM_ORDERS:
        if sorted(order) == sorted(values):
            return list(order)
    return values


def _matches(pattern: str, value: str) -> bool:
    """JSON-schema (ECMA) pattern semantics: unlike Python's, ``$`` does not match before a final newline."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return re.search(pattern, value) is not None
