"""Golden-file matching with upstream's placeholder semantics (supplement §6.2, podspec §12).

Expected documents are YAML read under YAML 1.2 rules (as upstream's go-yaml v3 reads them: only
``true``/``false`` are booleans, ``n``/``yes``/``on`` stay strings). Actual objects are plain JSON
values. Mappings are strict unless they hold ``$strict: false`` (which relaxes only that mapping);
sequences match element by element; scalars compare with their types (``"1"`` is not ``1``, ``1`` is
not ``1.0``). String directives: ``$ignore``/``$exists`` (a scalar must be there), ``$notexists``,
``$glob:<go path.Match>``, ``$pattern:<regexp, anchored>``, ``$var:<name>`` (exactly the variable's
value; an unknown name is an error). ``{$ignore: true}``/``{$exists: true}`` require a mapping,
``{$notexists: true}`` an absent key, and ``$$strict`` is a literal ``$strict`` key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

_ABSENT = object()


class _Yaml12Loader(yaml.SafeLoader):
    """SafeLoader with the YAML 1.2 core schema's implicit types (no 1.1 booleans, no timestamps)."""


_Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
):
    _Yaml12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])


def _int(loader: _Yaml12Loader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith("0x") else int(text)


_Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _int)


def load_expected(text: str) -> list[Any]:
    """Every non-empty document of an expected-output YAML stream."""
    return [doc for doc in yaml.load_all(text, Loader=_Yaml12Loader) if doc is not None]


def glob_to_regex(glob: str) -> str:
    """Go's ``path.Match`` pattern as an anchored regular expression; ``ValueError`` if malformed."""
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\":
            if i + 1 >= len(glob):
                raise ValueError(f"bad glob {glob!r}: trailing backslash")
            i += 1
            out.append(re.escape(glob[i]))
        elif c == "[":
            body, i = _glob_class(glob, i + 1)
            out.append(body)
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _glob_class(glob: str, start: int) -> tuple[str, int]:
    i, negate, parts = start, False, []
    if i < len(glob) and glob[i] == "^":
        negate, i = True, i + 1
    while True:
        if i >= len(glob):
            raise ValueError(f"bad glob {glob!r}: unterminated character class")
        if glob[i] == "]" and parts:
            break
        low, i = _class_char(glob, i)
        if i < len(glob) and glob[i] == "-":
            high, i = _class_char(glob, i + 1)
            parts.append(f"{re.escape(low)}-{re.escape(high)}")
        else:
            parts.append(re.escape(low))
    body = "".join(parts)
    return (f"[^{body}]" if negate else f"[{body}]"), i + 1


def _class_char(glob: str, i: int) -> tuple[str, int]:
    if i >= len(glob) or glob[i] in "-]":
        raise ValueError(f"bad glob {glob!r}: bad character range")
    if glob[i] == "\\":
        if i + 1 >= len(glob):
            raise ValueError(f"bad glob {glob!r}: trailing backslash")
        return glob[i + 1], i + 2
    return glob[i], i + 1


def _same_scalar(expected: Any, actual: Any) -> bool:
    return type(expected) is type(actual) and expected == actual


def match(expected: Any, actual: Any, variables: Mapping[str, str], path: str = "") -> list[str]:
    """Every way ``actual`` fails ``expected`` (empty: it matches), each as ``path: problem``."""
    where = path or "<root>"
    if isinstance(expected, str):
        return _match_directive(expected, actual, variables, where)
    if isinstance(expected, dict):
        return _match_mapping(expected, actual, variables, path)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a sequence, got {actual!r}"]
        if len(expected) != len(actual):
            return [f"{where}: expected {len(expected)} items, got {len(actual)}"]
        return [
            problem
            for index, (e, a) in enumerate(zip(expected, actual, strict=True))
            for problem in match(e, a, variables, f"{path}[{index}]")
        ]
    return [] if _same_scalar(expected, actual) else [f"{where}: expected {expected!r}, got {actual!r}"]


def _match_directive(expected: str, actual: Any, variables: Mapping[str, str], where: str) -> list[str]:
    if expected in ("$ignore", "$exists"):
        ok = actual is not _ABSENT and not isinstance(actual, dict | list)
        return [] if ok else [f"{where}: expected a scalar to exist"]
    if expected == "$notexists":
        return [] if actual is _ABSENT else [f"{where}: expected no value, got {actual!r}"]
    if actual is _ABSENT:
        return [f"{where}: missing (expected {expected!r})"]
    if expected.startswith("$var:"):
        name = expected[len("$var:") :]
        if name not in variables:
            raise KeyError(f"unknown golden variable {name!r} at {where}")
        ok = isinstance(actual, str) and actual == variables[name]
        return [] if ok else [f"{where}: expected variable {name} = {variables[name]!r}, got {actual!r}"]
    if expected.startswith("$glob:"):
        regex = glob_to_regex(expected[len("$glob:") :])
        ok = isinstance(actual, str) and re.fullmatch(regex, actual, re.DOTALL) is not None
        return [] if ok else [f"{where}: {actual!r} does not match glob {expected[6:]!r}"]
    if expected.startswith("$pattern:"):
        pattern = expected[len("$pattern:") :]
        ok = isinstance(actual, str) and re.fullmatch(f"(?:{pattern})", actual) is not None
        return [] if ok else [f"{where}: {actual!r} does not match pattern {pattern!r}"]
    return [] if _same_scalar(expected, actual) else [f"{where}: expected {expected!r}, got {actual!r}"]


def _match_mapping(
    expected: dict[Any, Any], actual: Any, variables: Mapping[str, str], path: str
) -> list[str]:
    where = path or "<root>"
    # One-key directive mappings.
    if len(expected) == 1:
        ((key, value),) = expected.items()
        if key in ("$ignore", "$exists", "$notexists") and value is True:
            if key == "$notexists":
                return [] if actual is _ABSENT else [f"{where}: expected no value, got {actual!r}"]
            return [] if isinstance(actual, dict) else [f"{where}: expected a mapping to exist"]
    if not isinstance(actual, dict):
        return [f"{where}: expected a mapping, got {'nothing' if actual is _ABSENT else repr(actual)}"]
    strict = True
    if "$strict" in expected:
        if not isinstance(expected["$strict"], bool):
            raise ValueError(f"{where}: $strict must be a YAML boolean")
        strict = expected["$strict"]
    problems: list[str] = []
    keys = {("$strict" if k == "$$strict" else k): v for k, v in expected.items() if k != "$strict"}
    for key, value in keys.items():
        problems += match(value, actual.get(key, _ABSENT), variables, f"{path}.{key}" if path else str(key))
    if strict:
        prefix = f"{path}." if path else ""
        problems += [f"{prefix}{k}: unexpected key" for k in actual if k not in keys]
    return problems


def _identity(document: Any) -> tuple[Any, Any]:
    return (document.get("apiVersion"), document.get("kind")) if isinstance(document, dict) else (None, None)


def match_documents(
    expected: Sequence[Any], actual: Sequence[Any], variables: Mapping[str, str]
) -> list[str]:
    """Upstream's object matching: per apiVersion+kind, each expected document matches exactly one
    actual object, no object is claimed twice, and no actual object of a checked kind is left over."""
    problems: list[str] = []
    for kind in dict.fromkeys(_identity(doc) for doc in expected):
        wanted = [doc for doc in expected if _identity(doc) == kind]
        present = [obj for obj in actual if _identity(obj) == kind]
        claimed: dict[int, int] = {}
        for index, doc in enumerate(wanted):
            hits = [i for i, obj in enumerate(present) if not match(doc, obj, variables)]
            label = f"{kind[1]} document {index}"
            if not hits:
                closest = min((match(doc, obj, variables) for obj in present), key=len, default=["no object"])
                problems.append(f"{label} matches no object: " + "; ".join(closest[:5]))
            elif len(hits) > 1:
                problems.append(f"{label} matches {len(hits)} objects")
            elif hits[0] in claimed:
                problems.append(f"{label} claims the object of document {claimed[hits[0]]}")
            else:
                claimed[hits[0]] = index
        extra = [i for i in range(len(present)) if i not in claimed]
        if not problems and extra:
            problems.append(f"{len(extra)} unexpected {kind[1]} object(s)")
    return problems
