"""The JSON patch (RFC 6902) a mutating webhook answers: the operations that turn one document into
another, as ``add``, ``replace`` and ``remove`` only.

Objects are compared key by key and lists of equal length item by item, so a default filled in deep
inside a component is one ``add`` at its path, not a rewrite of the component list; a list whose
length changed is replaced whole. Keys are escaped as RFC 6901 says (``~`` → ``~0``, ``/`` → ``~1``:
``/metadata/annotations/nvidia.com~1workload-provider``).
"""

from __future__ import annotations

from typing import Any


def pointer(*steps: str | int) -> str:
    """The JSON pointer of ``steps`` (``pointer("metadata", "annotations", "a/b")``)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)


def diff(before: Any, after: Any, at: tuple[str | int, ...] = ()) -> list[dict[str, Any]]:
    """The operations that turn ``before`` into ``after`` (empty when they are equal)."""
    if isinstance(before, dict) and isinstance(after, dict):
        operations: list[dict[str, Any]] = []
        for key in before:
            if key not in after:
                operations.append({"op": "remove", "path": pointer(*at, key)})
        for key, value in after.items():
            if key not in before:
                operations.append({"op": "add", "path": pointer(*at, key), "value": value})
            else:
                operations += diff(before[key], value, (*at, key))
        return operations
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            op
            for index, pair in enumerate(zip(before, after, strict=True))
            for op in diff(*pair, (*at, index))
        ]
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": pointer(*at), "value": after}]
