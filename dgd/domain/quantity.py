"""Kubernetes resource quantities (``500m``, ``8Gi``, ``1e3``): exact values and canonical spelling.

``parse_quantity`` gives the exact value; ``canonical_quantity`` the spelling the Kubernetes API
machinery prints back (``2048Mi`` → ``2Gi``, ``1000`` → ``1k``, ``0.5Gi`` → ``512Mi``). Both parse
exactly as Kubernetes does: same grammar, same rounding up to nano units, same BinarySI cap. A value
that is not a quantity gives ``None``; conversion drops such values rather than guessing.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_NUMBER = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {exponent: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}
_BINARY_MAX = Fraction(2**63 - 1)
_NANO = 10**9

_DECIMAL_SI, _BINARY_SI, _DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"


def canonical_quantity(value: str | int) -> str | None:
    """The canonical spelling of a quantity, or ``None`` when it is not a valid quantity."""
    parsed = _parse(str(value))
    if parsed is None:
        return None
    amount, form = parsed
    return _format(amount, form)


def parse_quantity(value: str | int) -> Fraction | None:
    """The exact value of a quantity (rounded up to nano units, as Kubernetes does), or ``None``."""
    parsed = _parse(str(value))
    return None if parsed is None else parsed[0]


def is_zero_quantity(value: str | int) -> bool:
    """Whether a valid quantity is zero (``0``, ``0Gi``, ``0.0``); invalid values are not zero."""
    return canonical_quantity(value) == "0"


def _parse(text: str) -> tuple[Fraction, str] | None:
    # Split sign, digits and suffix; the suffix picks the format, base and exponent.
    match = _NUMBER.fullmatch(text)
    if match is None:
        return None
    sign, digits, suffix = match.groups()
    if suffix in _BINARY_SUFFIXES:
        form, scale = _BINARY_SI, Fraction(2) ** _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        form, scale = _DECIMAL_SI, Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
    elif (exponent := _EXPONENT.fullmatch(suffix)) is not None:
        form, scale = _DECIMAL_EXPONENT, Fraction(10) ** int(exponent.group(1))
    else:
        return None
    whole, _, fraction = digits.partition(".")
    magnitude = Fraction(int(whole or "0") * 10 ** len(fraction) + int(fraction or "0"), 10 ** len(fraction))
    magnitude *= scale

    # Non-zero amounts round up to whole nano units; BinarySI is capped and falls back below one.
    magnitude = Fraction(math.ceil(magnitude * _NANO), _NANO)
    if form == _BINARY_SI and magnitude > _BINARY_MAX:
        magnitude = _BINARY_MAX
    if form == _BINARY_SI and 0 < magnitude < 1:
        form = _DECIMAL_SI
    return (-magnitude if sign == "-" else magnitude), form


def _format(amount: Fraction, form: str) -> str:
    if amount == 0:
        return "0"
    sign = "-" if amount < 0 else ""
    magnitude = abs(amount)

    # BinarySI prints in powers of 1024 only for whole amounts of at least 1024.
    if form == _BINARY_SI and magnitude >= 1024 and magnitude.denominator == 1:
        mantissa, exponent = magnitude.numerator, 0
        while mantissa % 1024 == 0:
            mantissa //= 1024
            exponent += 10
        return f"{sign}{mantissa}{_BINARY_BY_EXPONENT[exponent]}"

    # Decimal: move factors of ten into the exponent, then step down to a multiple of three.
    mantissa, exponent = magnitude.numerator * (_NANO // magnitude.denominator), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    step = exponent % 3
    mantissa, exponent = mantissa * 10**step, exponent - step
    if form == _DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
    else:
        suffix = _DECIMAL_BY_EXPONENT.get(exponent, f"e{exponent}")
    return f"{sign}{mantissa}{suffix}"
