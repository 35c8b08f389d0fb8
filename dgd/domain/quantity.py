"""Kubernetes resource quantities (``500m``, ``8Gi``, ``1e3``) as exact decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from dgd.messages.base import QUANTITY_PATTERN

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_SPLIT = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")


def parse_quantity(value: int | str) -> Decimal | None:
    """The value of a quantity, or ``None`` when it is not one."""
    if isinstance(value, int):
        return Decimal(value)
    text = value.strip()
    if not re.match(QUANTITY_PATTERN, text):
        return None
    match = _SPLIT.match(text)
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * (Decimal(10) ** int(suffix[1:]))
        return Decimal(number) * _SUFFIXES[suffix]
    except (KeyError, InvalidOperation, ValueError):
        return None
