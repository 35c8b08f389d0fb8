"""Label selectors, as the API server parses and matches them (``k8s.io/apimachinery/pkg/labels``).

The string form: requirements separated by commas, each one of

- ``key=value``, ``key==value``, ``key!=value`` (equality; ``!=`` also matches when the key is absent)
- ``key in (v1,v2)``, ``key notin (v1,v2)`` (set-based; ``notin`` also matches when absent)
- ``key``, ``!key`` (exists, does not exist)
- ``key>n``, ``key<n`` (integer comparison)

An empty selector matches everything. A malformed one is ``Invalid`` (a 400 from the API server).
``from_label_selector`` turns a ``metav1.LabelSelector`` object (``matchLabels`` and
``matchExpressions``) into the same thing, and ``str()`` gives the canonical string form.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from dgd.cluster.errors import Cause, Invalid

Operator = Literal["=", "!=", "in", "notin", "exists", "!", ">", "<"]

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")
_TOKEN = re.compile(r"\s*(==|!=|=|>|<|!|\(|\)|,|[^\s=!<>(),]+)")


class Requirement(msgspec.Struct, frozen=True):
    """One condition on one label key."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        match self.operator:
            case "=" | "in":
                return value is not None and value in self.values
            case "!=" | "notin":
                return value is None or value not in self.values
            case "exists":
                return value is not None
            case "!":
                return value is None
            case ">" | "<":
                if value is None or not _is_int(value):
                    return False
                bound = int(self.values[0])
                return int(value) > bound if self.operator == ">" else int(value) < bound

    def __str__(self) -> str:
        match self.operator:
            case "exists":
                return self.key
            case "!":
                return f"!{self.key}"
            case "in" | "notin":
                return f"{self.key} {self.operator} ({','.join(sorted(self.values))})"
            case _:
                return f"{self.key}{self.operator}{self.values[0]}"


class Selector(msgspec.Struct, frozen=True):
    """All of ``requirements`` (sorted by key); no requirements matches every object."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        found = labels or {}
        # A plain loop, not all() over a generator: every write is matched against every watch.
        for requirement in self.requirements:  # noqa: SIM110
            if not requirement.matches(found):
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


EVERYTHING = Selector()


def parse(text: str | None) -> Selector:
    """The selector written as ``text`` (``None`` or blank: everything); ``Invalid`` if malformed."""
    if text is None or not text.strip():
        return EVERYTHING
    return _parsed(text)


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> Selector:
    # Remembered (a Selector is immutable): the same few selectors are listed and watched again and again.
    tokens = _tokenize(text)
    requirements: list[Requirement] = []
    position = 0
    while True:
        requirement, position = _requirement(text, tokens, position)
        requirements.append(requirement)
        if position == len(tokens):
            break
        if tokens[position] != ",":
            raise _invalid(text, f"expected ',' but found {tokens[position]!r}")
        position += 1
    return Selector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


def from_label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """The selector a ``metav1.LabelSelector`` stands for (``{}`` selects everything)."""
    if not selector:
        return EVERYTHING
    requirements = [
        _checked(Requirement(str(key), "=", (str(value),)))
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    operators: dict[str, Operator] = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expression in selector.get("matchExpressions") or ():
        operator = operators.get(str(expression.get("operator")))
        if operator is None:
            raise _invalid(
                str(selector), f"{expression.get('operator')!r} is not a valid label selector operator"
            )
        values = tuple(str(value) for value in expression.get("values") or ())
        if operator in ("in", "notin") and not values:
            raise _invalid(str(selector), "In/NotIn needs at least one value")
        requirements.append(_checked(Requirement(str(expression.get("key")), operator, values)))
    return Selector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:
            raise _invalid(text, f"unexpected character at {position}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _requirement(text: str, tokens: list[str], position: int) -> tuple[Requirement, int]:
    # `!key`: the label must be absent.
    if tokens[position] == "!":
        if position + 1 >= len(tokens):
            raise _invalid(text, "'!' must be followed by a key")
        return _checked(Requirement(tokens[position + 1], "!")), position + 2
    key = tokens[position]
    position += 1
    # A bare key (end, or a comma next): the label must exist.
    if position == len(tokens) or tokens[position] == ",":
        return _checked(Requirement(key, "exists")), position
    operator = tokens[position]
    position += 1
    if operator in ("in", "notin"):
        values, position = _value_set(text, tokens, position)
        return _checked(Requirement(key, "in" if operator == "in" else "notin", values)), position
    if operator not in ("=", "==", "!=", ">", "<"):
        raise _invalid(text, f"{operator!r} is not a valid operator for key {key!r}")
    value = ""
    if position < len(tokens) and tokens[position] not in (",", "(", ")"):
        value = tokens[position]
        position += 1
    symbol: Operator = "=" if operator == "==" else operator  # type: ignore[assignment]
    return _checked(Requirement(key, symbol, (value,))), position


def _value_set(text: str, tokens: list[str], position: int) -> tuple[tuple[str, ...], int]:
    if position >= len(tokens) or tokens[position] != "(":
        raise _invalid(text, "expected '(' after in/notin")
    position += 1
    values: list[str] = []
    while position < len(tokens) and tokens[position] != ")":
        if tokens[position] == ",":
            position += 1
            continue
        values.append(tokens[position])
        position += 1
    if position >= len(tokens):
        raise _invalid(text, "missing ')'")
    # An empty set parses, as the API server parses it: `in ()` matches nothing, `notin ()` everything.
    return tuple(values), position + 1


def _checked(requirement: Requirement) -> Requirement:
    """The requirement, after the API server's checks on its key and values."""
    if not _KEY.match(requirement.key) or len(requirement.key) > 317:
        raise _invalid(requirement.key, f"invalid label key {requirement.key!r}")
    if requirement.operator in ("exists", "!") and requirement.values:
        raise _invalid(requirement.key, "exists/does-not-exist takes no values")
    for value in requirement.values:
        if requirement.operator in (">", "<"):
            if not _is_int(value):
                raise _invalid(requirement.key, f"{value!r} is not an integer for {requirement.operator}")
        elif not _VALUE.match(value):
            raise _invalid(requirement.key, f"invalid label value {value!r}")
    return requirement


def _is_int(value: str) -> bool:
    return re.fullmatch(r"-?[0-9]+", value) is not None


def _invalid(text: str, why: str) -> Invalid:
    return Invalid(
        f"unable to parse requirement: {why} (selector {text!r})",
        causes=(Cause(field="labelSelector", message=why),),
        bad_request=True,
    )
