"""The error value every input check returns: where, and what is wrong there."""

from __future__ import annotations

import json
from typing import Any

import msgspec

_MAX_VALUE_CHARS = 80


class FieldError(msgspec.Struct, frozen=True, order=True):
    """One problem in a document: the JSON path (``spec.components[1].type``) and a message.

    The message names the bad value and what is allowed, so a user can fix it without reading code.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def show(value: Any) -> str:
    """A short JSON rendering of a user value for an error message (``"wroker"``, ``3``, ``null``)."""
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def child(path: str, key: str | int, *, map_key: bool = False) -> str:
    """The path of a field, list item or map entry below ``path``."""
    if isinstance(key, int) or map_key:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key
