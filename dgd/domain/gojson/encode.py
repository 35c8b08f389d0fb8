"""Go's ``encoding/json`` output for a JSON value decoded into a Go type, byte for byte.

Upstream hashes Go values (``json.Marshal`` of a struct), not the JSON it reads: a struct's fields come
out in declaration order, zero values of fields without ``omitempty`` are written (``"containers":null``,
``"resources":{}``), keys the Go type does not know are dropped, maps come out with sorted keys,
quantities in canonical form, and strings with Go's escapes (``<``, ``>``, ``&`` as ``\\u003c``...).
``encode(value, type_ref)`` reproduces that for ``value`` as it would be after ``json.Unmarshal``
into the type ``type_ref`` names in the tables of ``dgd.domain.gojson.types``.

A type reference is a string: ``string``, ``bool``, ``int``, ``float``, ``quantity``, ``intorstring``,
``time``, ``raw`` (a value with its own MarshalJSON that writes its JSON back compacted), ``bytes``,
``ptr:<ref>``, ``list:<ref>``, ``map:<ref>`` or ``struct:<name>``.
"""

from __future__ import annotations

import decimal
import math
import re
from collections.abc import Callable
from typing import Any

import msgspec

from dgd.domain.gojson.types import Field, struct_fields
from dgd.domain.quantity import canonical_quantity

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_HTML = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
#: A string with nothing to escape (most of them), written as it is.
_PLAIN_TEXT = re.compile(r'[^\x00-\x1f"\\<>&\u2028\u2029]*')
_HTML_BYTES = [(char.encode("utf-8"), escape.encode("ascii")) for char, escape in _HTML.items()]


def encode(value: Any, type_ref: str) -> str:
    """Go's ``json.Marshal`` of ``value`` decoded into ``type_ref`` (``None`` is JSON null or absent)."""
    kind, _, rest = type_ref.partition(":")
    if kind == "ptr":
        return "null" if value is None else encode(value, rest)
    if kind == "list":
        if value is None:
            return "null"
        return "[" + ",".join(encode(item, rest) for item in value) + "]"
    if kind == "map":
        if value is None:
            return "null"
        return "{" + ",".join(f"{string(key)}:{encode(value[key], rest)}" for key in sorted(value)) + "}"
    if kind == "struct":
        return _struct(value or {}, rest)
    return _scalar(value, kind)


def is_empty(value: Any, type_ref: str) -> bool:
    """Go's ``omitempty`` test: false, 0, "", a nil pointer, an empty slice or map (never a struct)."""
    kind = type_ref.partition(":")[0]
    if kind in ("ptr", "list", "map", "bytes", "raw"):
        return value is None or (kind != "ptr" and len(value) == 0)
    if kind in ("struct", "quantity", "time", "intorstring"):
        return False
    return not value


def is_zero(value: Any, type_ref: str) -> bool:
    """Go's ``omitzero`` test: the zero value (a zero struct, an unset time, a nil pointer...)."""
    kind, _, rest = type_ref.partition(":")
    if kind == "struct":
        return value is None or all(is_zero(value.get(f.name), f.type) for f in struct_fields(rest))
    if kind in ("list", "map", "bytes", "raw", "ptr", "time"):
        return value is None
    if kind == "quantity":
        return value is None
    if kind == "intorstring":
        return value is None or value == 0
    return not value


def string(text: str) -> str:
    """A Go JSON string: quotes, backslashes and control characters escaped, HTML characters too."""
    if _PLAIN_TEXT.fullmatch(text):
        return f'"{text}"'
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char in _HTML:
            out.append(_HTML[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _struct(value: dict[str, Any], name: str) -> str:
    members: list[str] = []
    for field in struct_fields(name):
        member = value.get(field.name)
        if _omitted(member, field):
            continue
        members.append(f"{string(field.name)}:{encode(member, field.type)}")
    return "{" + ",".join(members) + "}"


def _omitted(value: Any, field: Field) -> bool:
    return (field.omitempty and is_empty(value, field.type)) or (
        field.omitzero and is_zero(value, field.type)
    )


def _scalar(value: Any, kind: str) -> str:
    if kind == "string":
        return string("" if value is None else str(value))
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(int(value or 0))
    if kind == "float":
        return _float(float(value or 0))
    if kind == "quantity":
        canonical = canonical_quantity(value if value is not None else "0")
        return string(canonical if canonical is not None else str(value))
    if kind == "intorstring":
        return string(value) if isinstance(value, str) else str(int(value or 0))
    if kind == "time":
        return "null" if value is None else string(str(value))
    if kind == "bytes":
        # JSON carries []byte as base64 text, and Go writes the decoded bytes back as the same text.
        return "null" if value is None else string(str(value))
    if kind == "raw":
        return "null" if value is None else _raw(value)
    raise ValueError(f"unknown Go type reference {kind!r}")


def _raw(value: Any, *, sort: bool = False) -> str:
    """A JSON value written back as it came (key order kept, or sorted), compacted, with Go's escapes."""
    if isinstance(value, dict):
        keys = sorted(value) if sort else list(value)
        return "{" + ",".join(f"{string(k)}:{_raw(value[k], sort=sort)}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_raw(item, sort=sort) for item in value) + "]"
    if isinstance(value, str):
        return string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value) if isinstance(value, int) else _float(float(value))


def plain(value: Any) -> str:
    """Go's ``json.Marshal`` of a decoded JSON value (``map[string]any``...): object keys sorted."""
    return written(value).decode("utf-8")


def written(value: Any) -> bytes:
    """``plain`` as UTF-8 bytes. msgspec's compact JSON with sorted keys is Go's but for Go's HTML-safe
    escapes, put right after, and floats, which are written as Go formats a float64 first."""
    return html_safe(_go_floats(value))


def html_safe(value: Any) -> bytes:
    """msgspec's compact JSON of ``value``, keys sorted, with Go's HTML-safe escapes: ``plain`` of a
    value whose floats are already written as Go writes them (``go_float``)."""
    try:
        data = msgspec.json.encode(value, order="sorted")
    except (TypeError, msgspec.EncodeError) as error:
        raise TypeError(f"not a JSON value: {error}") from None
    for char, escape in _HTML_BYTES:
        if char in data:
            data = data.replace(char, escape)
    return data


def go_float(value: float) -> msgspec.Raw:
    """A float64 as Go's ``encoding/json`` writes it, as raw JSON for msgspec."""
    if not math.isfinite(value):
        raise TypeError(f"not a JSON value: {value!r}")
    return msgspec.Raw(_float(value).encode("ascii"))


def map_values(value: dict[str, Any], change: Callable[[Any], Any]) -> dict[str, Any]:
    """``value`` with ``change`` applied to each of its values: the same dict when none changed, else a
    copy (``change`` returns the value itself for no change)."""
    out = None
    for key, item in value.items():
        new = change(item)
        if new is not item:
            out = out if out is not None else dict(value)
            out[key] = new
    return value if out is None else out


def _go_floats(value: Any) -> Any:
    """``value`` with every float as the raw JSON Go writes for it (the same object if it has none)."""
    kind = type(value)
    if kind is dict:
        return map_values(value, _go_floats)
    if kind is list:
        items = [_go_floats(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is float:
        return go_float(value)
    return value


def _float(number: float) -> str:
    """Go's float64 formatting (``encoding/json``'s ``floatEncoder``): the shortest round-trip digits,
    positional in [1e-6, 1e21), else an exponent of at least two digits, but one for a small negative
    exponent (``1e-7``, ``1.5e+300``)."""
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        mantissa, _, exponent = repr(number).partition("e")
        power = int(exponent)
        return f"{mantissa}e-{-power}" if power < 0 else f"{mantissa}e+{power:02d}"
    if number == int(number):
        return "-0" if number == 0 and math.copysign(1.0, number) < 0 else str(int(number))
    text = repr(number)
    return format(decimal.Decimal(text), "f") if "e" in text else text
