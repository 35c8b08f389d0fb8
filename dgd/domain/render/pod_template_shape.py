"""The shape of a component's pod template, as far as rendering reads it.

Pod templates travel as raw JSON; the API server's schema would refuse a wrongly typed field, and
rendering must not trip over one either. ``shape_errors`` lists every field rendering reads whose JSON
type is wrong, at its path, so a bad manifest gets an error instead of a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dgd.domain.admission.errors import show

_OBJECT, _LIST, _STRING, _STRINGS, _OBJECTS, _STRING_MAP = (
    "object",
    "list",
    "string",
    "strings",
    "objects",
    "map",
)

#: Container fields rendering reads, and their JSON type.
_CONTAINER = {
    "name": _STRING,
    "image": _STRING,
    "command": _STRINGS,
    "args": _STRINGS,
    "env": _OBJECTS,
    "envFrom": _OBJECTS,
    "ports": _OBJECTS,
    "volumeMounts": _OBJECTS,
    "resources": _OBJECT,
    "livenessProbe": _OBJECT,
    "readinessProbe": _OBJECT,
    "startupProbe": _OBJECT,
}
#: Pod-spec fields rendering reads, and their JSON type.
_POD = {
    "containers": _OBJECTS,
    "initContainers": _OBJECTS,
    "volumes": _OBJECTS,
    "imagePullSecrets": _OBJECTS,
    "securityContext": _OBJECT,
    "serviceAccountName": _STRING,
    "schedulerName": _STRING,
}
#: Items that rendering looks up by a string key.
_NAMED = {
    "env": "name",
    "volumeMounts": "name",
    "volumes": "name",
    "containers": "name",
    "initContainers": "name",
}


def shape_errors(pod_template: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, problem) for every wrongly typed field of a pod template that rendering reads."""
    if pod_template is None:
        return
    if not isinstance(pod_template, dict):
        yield path, f"{show(pod_template)} is not an object"
        return
    metadata = pod_template.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            yield f"{path}.metadata", "must be an object"
        else:
            for key in ("labels", "annotations"):
                yield from _typed(metadata.get(key), _STRING_MAP, f"{path}.metadata.{key}")
    spec = pod_template.get("spec")
    if spec is None:
        return
    if not isinstance(spec, dict):
        yield f"{path}.spec", "must be an object"
        return
    yield from _fields(spec, _POD, f"{path}.spec")
    for key in ("containers", "initContainers"):
        items = spec.get(key)
        if isinstance(items, list):
            for index, container in enumerate(items):
                if isinstance(container, dict):
                    yield from _fields(container, _CONTAINER, f"{path}.spec.{key}[{index}]")


def _fields(value: dict[str, Any], types: dict[str, str], path: str) -> Iterator[tuple[str, str]]:
    for key, kind in types.items():
        items = value.get(key)
        if items is None:
            continue  # absent: nothing to check (and no path to spell out)
        yield from _typed(items, kind, f"{path}.{key}")
        named = _NAMED.get(key)
        if named and isinstance(items, list):
            for index, item in enumerate(items):
                if isinstance(item, dict) and not isinstance(item.get(named), str | None):
                    yield f"{path}.{key}[{index}].{named}", "must be a string"


def _typed(value: Any, kind: str, path: str) -> Iterator[tuple[str, str]]:
    if value is None:
        return
    if kind == _STRING and not isinstance(value, str):
        yield path, f"{show(value)} must be a string"
    elif kind == _OBJECT and not isinstance(value, dict):
        yield path, f"{show(value)} must be an object"
    elif kind in (_STRINGS, _OBJECTS, _LIST) and not isinstance(value, list):
        yield path, f"{show(value)} must be a list"
    elif kind == _STRINGS and not all(isinstance(item, str) for item in value):
        yield path, "must be a list of strings"
    elif kind == _OBJECTS and not all(isinstance(item, dict) for item in value):
        yield path, "must be a list of objects"
    elif kind == _STRING_MAP and (
        not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
    ):
        yield path, "must be a map of strings"
