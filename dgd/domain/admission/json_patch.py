"""The JSON patch (RFC 6902) a mutating webhook answers: the operations that turn one document into
another, as ``add``, ``replace`` and ``remove`` only.

Objects are compared key by key and lists of equal length item by item, so a default filled in deep
inside a component is one ``add`` at its path, not a rewrite of the component list; a list whose
length changed is replaced whole. Keys are escaped as RFC 6901 says (``~`` → ``~0``, ``/`` → ``~1``:
``/metadata/annotations/nvidia.com~1workload-provider``).
"""

from __future__ import annotations

import copy
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


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply(document: Any, operations: list[dict[str, Any]]) -> Any:
    """``document`` with ``operations`` (``add``, ``replace``, ``remove``, as ``diff`` makes them)
    applied, as a new value (``document`` is not changed)."""
    result = copy.deepcopy(document)
    for operation in operations:
        *parents, last = [_unescape(token) for token in operation["path"].split("/")[1:]] or [""]
        if operation["path"] == "":
            result = copy.deepcopy(operation["value"])
            continue
        holder = result
        for token in parents:
            holder = holder[int(token)] if isinstance(holder, list) else holder[token]
        if isinstance(holder, list):
            index = len(holder) if last == "-" else int(last)
            if operation["op"] == "remove":
                del holder[index]
            elif operation["op"] == "add":
                holder.insert(index, copy.deepcopy(operation["value"]))
            else:
                holder[index] = copy.deepcopy(operation["value"])
        elif operation["op"] == "remove":
            del holder[last]
        else:
            holder[last] = copy.deepcopy(operation["value"])
    return result
