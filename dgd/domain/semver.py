"""Semantic versions, parsed leniently like upstream's admission does (``v`` prefix, partial versions)."""

from __future__ import annotations

import re

_LENIENT = re.compile(
    r"^v?(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?(?:\.(0|[1-9][0-9]*))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$",
    re.IGNORECASE,
)


def parse_lenient(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of ``1.5``, ``v1.5.0`` or ``1.5.0-rc1``; ``None`` if it is not a version."""
    match = _LENIENT.match(text.strip())
    if match is None:
        return None
    major, minor, patch = match.group(1), match.group(2), match.group(3)
    return int(major), int(minor or 0), int(patch or 0)
