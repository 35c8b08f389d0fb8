"""The preservation payloads, encoded byte for byte as the upstream Go operator writes them.

Upstream stores its preservation annotations with Go's ``encoding/json``: struct fields in
declaration order, map keys sorted, ``omitempty`` fields left out when empty, pointer fields kept
when set (even to ``""`` or ``{}``), a few non-omitempty fields always present, and ``<``, ``>``,
``&``, U+2028 and U+2029 escaped. ``encode_spec_payload`` and ``encode_status_payload`` reproduce
that for the sparse values conversion saves (the Go types are listed in ``go_types``), so a payload
written here is identical to the one upstream would write for the same input. Raw JSON the
operator does not model (probe handlers, security contexts, …) keeps the key order it arrived
with; keys a known type does not list are appended after the listed ones.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from dgd.domain.conversion.go_types import FIELDS, ZERO_BY_FIELD, Field
from dgd.domain.conversion.shapes import ConversionError
from dgd.domain.quantity import canonical_quantity


def encode_spec_payload(
    sparse_spec: dict[str, Any], envelope: str = "Envelope", raw_json: tuple[dict[str, Any], ...] = ()
) -> str:
    """A ``…-spec`` annotation value: ``{"version":1,"spec":…,"rawJSON":[…]}``.

    ``envelope`` names the Go type the sparse spec is written as: ``Envelope`` (a v1alpha1 DGD
    spec, ``nvidia.com/dgd-spec`` on a v1beta1 DGD), ``DCDEnvelope`` (v1alpha1 DCD),
    ``BetaEnvelope`` / ``BetaDCDEnvelope`` (the v1beta1 data a v1alpha1 view carries). ``rawJSON``
    is left out when there are no records.
    """
    return _go_json(_encode({"version": 1, "spec": sparse_spec, "rawJSON": list(raw_json)}, envelope))


def encode_status_payload(sparse_status: dict[str, Any], status_type: str = "Status") -> str:
    """A ``…-status`` annotation value: the plain sparse v1alpha1 status, no envelope."""
    return _go_json(_encode(sparse_status, status_type))


class SpecPayload(NamedTuple):
    """A parsed ``…-spec`` annotation: the sparse spec and its ``rawJSON`` records."""

    spec: dict[str, Any]
    raw_json: list[dict[str, Any]]


def read_spec_payload(raw: Any) -> SpecPayload | None:
    """Parse a ``…-spec`` annotation value; ``None`` when absent or unparseable (then it is ignored).

    A value without a ``spec`` key is read as a bare legacy spec (supplement §1.2).
    """
    if not isinstance(raw, str) or not raw:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    spec = parsed.get("spec") if "spec" in parsed else parsed
    records = parsed.get("rawJSON") if "spec" in parsed else None
    if not isinstance(spec, dict):
        return None
    raw_json = [item for item in records if isinstance(item, dict)] if isinstance(records, list) else []
    return SpecPayload(spec, raw_json)


def read_status_payload(raw: Any, key: str) -> dict[str, Any]:
    """Parse a ``…-status`` annotation value (``{}`` when absent).

    Unlike a spec payload, an unreadable status payload is an error (supplement §1.2): the
    conversion fails rather than drop status it cannot read.
    """
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as error:
        raise ConversionError(
            f"metadata.annotations[{key}]", f"unmarshal {key} annotation: {error}"
        ) from None
    if not isinstance(parsed, dict):
        raise ConversionError(
            f"metadata.annotations[{key}]", f"unmarshal {key} annotation: not a JSON object"
        )
    return parsed


def _encode(value: dict[str, Any], type_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in FIELDS[type_name]:
        item = value.get(field.name)
        # Absent values appear only for always-emitted fields, as their Go zero value.
        if item is None:
            if field.marker != "!":
                continue
            item = _zero(field)
        # omitempty drops empty scalars, maps and lists; struct pointers and ``*`` fields stay.
        elif field.marker == "" and field.kind != "struct" and _is_empty(item):
            continue
        out[field.name] = _encode_value(item, field.kind, field.element)
    # Keys the type does not list (fields newer than this table) follow in arrival order.
    listed = {field.name for field in FIELDS[type_name]}
    out.update({key: item for key, item in value.items() if key not in listed and item is not None})
    return out


def _encode_value(value: Any, kind: str, element: str) -> Any:
    if kind == "quantity":
        return canonical_quantity(value) or str(value)
    if kind == "map" and isinstance(value, dict):
        return {key: _encode_value(value[key], _kind_of(element), element) for key in sorted(value)}
    if kind == "list" and isinstance(value, list):
        return [_encode_value(item, _kind_of(element), element) for item in value]
    if kind == "struct" and isinstance(value, dict):
        return _encode(value, element)
    return value


def _zero(field: Field) -> Any:
    if field.kind == "struct":
        return {}
    return "0" if field.kind == "quantity" else ZERO_BY_FIELD.get(field.name, "")


def _kind_of(element: str) -> str:
    if element == "#":
        return "quantity"
    return "struct" if element else "raw"


def _is_empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value == "" or value == [] or value == {}


def _go_json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it: UTF-8 kept, HTML-significant characters escaped."""
    text = json.dumps(_go_numbers(value), separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _go_numbers(value: Any) -> Any:
    # Go prints whole floats without a fractional part.
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {key: _go_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_go_numbers(item) for item in value]
    return value
