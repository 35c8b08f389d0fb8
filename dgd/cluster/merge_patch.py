"""JSON merge patch (RFC 7386): how ``patch`` changes an object, and how to compute a patch.

``apply(target, patch)``: an object patch merges key by key, recursively; ``null`` removes a key;
any other value (a list, a string, a number) replaces the target's value whole. A patch that is not
an object replaces the target. Neither argument is modified.

``diff(original, modified)`` is the smallest merge patch that turns ``original`` into ``modified``
(``apply(original, diff(original, modified)) == modified`` whenever ``modified`` holds no ``null``).
"""

from __future__ import annotations

from typing import Any


def apply(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` applied (RFC 7386, section 2)."""
    if not isinstance(patch, dict):
        return _copy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply(result.get(key), value)
    return result


def diff(original: Any, modified: Any) -> Any:
    """The merge patch from ``original`` to ``modified`` (``{}`` when they are equal objects)."""
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return _copy(modified)
    patch: dict[str, Any] = {}
    for key in original.keys() - modified.keys():
        patch[key] = None
    for key, value in modified.items():
        if key not in original:
            patch[key] = _copy(value)
        elif original[key] != value:
            if isinstance(value, dict) and isinstance(original[key], dict):
                patch[key] = diff(original[key], value)
            else:
                patch[key] = _copy(value)
    return {key: patch[key] for key in sorted(patch)}


def _copy(value: Any) -> Any:
    """A deep copy of JSON (dicts and lists copied, scalars shared)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
