"""How a user's pod template is laid over the operator's defaults (podspec §5.1–§5.3).

Upstream merges typed Go structs with ``mergo.Merge(..., WithOverride)``; pod specs here stay raw JSON,
so the same rules are applied to JSON values: a user scalar wins only when it is not a zero value
(``0``, ``""``, ``false``), a non-empty user list replaces the default list wholesale, and objects
merge key by key. All functions are pure and never modify their arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dgd.messages.base import copy_json

JSON = dict[str, Any]


def is_zero(value: Any) -> bool:
    """Go's zero value of a JSON field: absent/null, ``""``, ``0``, ``false``, an empty list."""
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float) and value == 0:
        return True
    return isinstance(value, str | list) and len(value) == 0


def merge(base: JSON, overlay: JSON) -> JSON:
    """``overlay`` laid over ``base`` with mergo's override rules; a new object is returned."""
    out: JSON = copy_json(base)
    for key, value in overlay.items():
        current = out.get(key)
        if isinstance(value, dict):
            # Objects (structs, maps, pointers to structs) merge key by key; a missing one is taken.
            out[key] = merge(current, value) if isinstance(current, dict) else copy_json(value)
        elif not is_zero(value):
            out[key] = copy_json(value)
    return out


def merge_env(common: Iterable[JSON], specific: Iterable[JSON]) -> list[JSON]:
    """Upstream ``MergeEnvs``: union by name, ``specific`` entries replace whole ``common`` entries,
    the result sorted by name in byte order."""
    by_name: dict[str, JSON] = {}
    for entry in (*common, *specific):
        by_name[str(entry.get("name", ""))] = copy_json(entry)
    return [by_name[name] for name in sorted(by_name, key=lambda n: n.encode("utf-8"))]


def value_env(name: str, value: str) -> JSON:
    """An env entry with a literal value (an empty value is omitted, as Go's encoder does)."""
    return {"name": name, "value": value} if value else {"name": name}


def field_env(name: str, field_path: str) -> JSON:
    """An env entry read from the pod (``fieldRef`` with only ``fieldPath``, as upstream writes it)."""
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def without_nulls(value: Any) -> Any:
    """A copy of a JSON value with null object members dropped (Go's typed decode leaves them unset)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
