"""Server-side printing: the ``meta.k8s.io/v1`` Table that ``kubectl get`` asks for.

A table has the ``Name`` column, then the kind's printer columns — a CRD's
``additionalPrinterColumns``, evaluated with the JSONPath subset they use (``.a.b``, ``[n]``,
``[*]``, ``[?(@.type=="Ready")]``) — or ``Age`` when the kind has none. ``date`` cells are ages in
kubectl's style (``42s``, ``3m12s``, ``5d``), as the API server renders them. Each row carries the
object as ``PartialObjectMetadata`` (``includeObject=Metadata``, the default), whole
(``Object``) or not at all (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from dgd.cluster.errors import Invalid
from dgd.messages.base import JSONObject

NAME_COLUMN: JSONObject = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
AGE_COLUMN: JSONObject = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def render_table(
    columns: Iterable[JSONObject],
    objects: Iterable[JSONObject],
    *,
    now: float,
    resource_version: str | None = None,
    include: str = "Metadata",
) -> JSONObject:
    """The Table of ``objects`` with the kind's printer ``columns`` (``()``: an Age column)."""
    printed = list(columns) or [AGE_COLUMN]
    definitions = [NAME_COLUMN] + [
        {
            "name": column.get("name", ""),
            "type": column.get("type", "string"),
            "format": column.get("format", ""),
            "description": column.get("description", ""),
            "priority": int(column.get("priority") or 0),
        }
        for column in printed
    ]
    rows = [
        {
            "cells": [obj.get("metadata", {}).get("name")] + [_cell(column, obj, now) for column in printed],
            **_row_object(obj, include),
        }
        for obj in objects
    ]
    metadata = {"resourceVersion": resource_version} if resource_version else {}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }


def human_duration(seconds: float) -> str:
    """An age as kubectl prints it (``k8s.io/apimachinery/pkg/util/duration.HumanDuration``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m" if whole % 60 == 0 else f"{minutes}m{whole % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d" if hours % 24 == 0 else f"{days}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        years, rest = divmod(days, 365)
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{days // 365}y"


def find(data: Any, path: str) -> list[Any]:
    """Every value ``path`` (the JSONPath subset of printer columns) selects in ``data``."""
    nodes = [data]
    for step in _steps(path):
        found: list[Any] = []
        for node in nodes:
            found.extend(_step(node, step))
        nodes = found
    return nodes


def _cell(column: JSONObject, obj: JSONObject, now: float) -> Any:
    values = find(obj, str(column.get("jsonPath", "")))
    if not values or values[0] is None:
        return None
    value = values[0]
    kind = column.get("type")
    if kind == "date":
        return _age(value, now) if isinstance(value, str) else None
    if kind == "string":
        return value if isinstance(value, str) else _json_text(value)
    return value


def _age(timestamp: str, now: float) -> str:
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<invalid>"
    return human_duration(now - then)


def _json_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _row_object(obj: JSONObject, include: str) -> JSONObject:
    if include == "None":
        return {}
    if include == "Object":
        return {"object": obj}
    metadata = obj.get("metadata", {})
    return {"object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}}


# The JSONPath subset.

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-]+)
      | \.\*
      | \[(?P<index>-?\d+)\]
      | \[\*\]
      | \[['"](?P<quoted>[^'"]+)['"]\]
      | \[\?\(@(?P<filter>(?:\.[A-Za-z0-9_\-]+)+)
          \s*(?:(?P<op>==|!=)\s*(?P<literal>'[^']*'|"[^"]*"|[^)\s]+))?\s*\)\]
    """,
    re.VERBOSE,
)

Step = tuple[str, Any]


def _steps(path: str) -> list[Step]:
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Step] = []
    position = 0
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            raise Invalid(f"unsupported JSONPath {path!r} at {position}", bad_request=True)
        if match.group("field") is not None or match.group("quoted") is not None:
            steps.append(("field", match.group("field") or match.group("quoted")))
        elif match.group("index") is not None:
            steps.append(("index", int(match.group("index"))))
        elif match.group("filter") is not None:
            literal = match.group("literal")
            steps.append(
                ("filter", (match.group("filter")[1:].split("."), match.group("op"), _literal(literal)))
            )
        else:
            steps.append(("all", None))
        position = match.end()
    return steps


def _literal(text: str | None) -> Any:
    if text is None:
        return None
    if text[:1] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _step(node: Any, step: Step) -> list[Any]:
    kind, argument = step
    if kind == "field":
        return [node[argument]] if isinstance(node, dict) and argument in node else []
    if kind == "index":
        if isinstance(node, list) and -len(node) <= argument < len(node):
            return [node[argument]]
        return []
    if kind == "all":
        if isinstance(node, dict):
            return list(node.values())
        return list(node) if isinstance(node, list) else []
    fields, op, literal = argument
    items = node if isinstance(node, list) else []
    return [item for item in items if _matches(item, fields, op, literal)]


def _matches(item: Any, fields: list[str], op: str | None, literal: Any) -> bool:
    value: Any = item
    for field in fields:
        if not isinstance(value, dict) or field not in value:
            return False
        value = value[field]
    if op is None:
        return True
    return bool(value == literal) if op == "==" else bool(value != literal)


class Printer:
    """Tables of one kind: its printer ``columns``, rows' objects as ``include`` says, ages by ``clock``."""

    def __init__(self, columns: Iterable[JSONObject], *, include: str, clock: Callable[[], float]) -> None:
        self._columns = tuple(columns)
        self._include = include
        self._clock = clock

    def table(self, objects: list[JSONObject], resource_version: str | None = None) -> JSONObject:
        return render_table(
            self._columns,
            objects,
            now=self._clock(),
            resource_version=resource_version,
            include=self._include,
        )

    def row(self, obj: JSONObject) -> JSONObject:
        """A table of one object (a single GET, or one watch event)."""
        return self.table([obj])
