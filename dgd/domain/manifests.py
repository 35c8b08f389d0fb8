"""Reading manifests: multi-document YAML or JSON, parsed the way Kubernetes tooling reads them; and
writing them so that Kubernetes tooling reads back the same values."""

from __future__ import annotations

import math
import re
from typing import Any

import yaml


class ManifestError(ValueError):
    """A manifest that is not YAML or JSON; the message says where (line, column) and what."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads plain scalars as kubectl sends them and refuses duplicate keys, as the API
    server does.

    kubectl and the API server read YAML with go-yaml v2 (through ``sigs.k8s.io/yaml``) and send it on as
    JSON. A plain scalar is a boolean, null, integer or float exactly when go-yaml v2's ``resolve`` says
    so (``y``/``n``/``on``/``off``... are booleans; ``1e3``, ``0o17`` and ``08`` are numbers; ``1:30`` and
    timestamps are strings), and a float with an integral value reaches the server as a JSON integer.
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _go_tag(value)
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


_BOOL, _NULL, _INT, _FLOAT, _STR = (f"tag:yaml.org,2002:{t}" for t in ("bool", "null", "int", "float", "str"))
_MERGE = "tag:yaml.org,2002:merge"
#: go-yaml v2's table of plain scalars with a fixed meaning.
_TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
_FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
_INFINITIES = {f"{sign}{text}": -math.inf if sign == "-" else math.inf
               for sign in ("", "+", "-") for text in (".inf", ".Inf", ".INF")}  # fmt: skip
_GO_FIXED: dict[str, tuple[str, Any]] = {
    **{text: (_BOOL, True) for text in _TRUE},
    **{text: (_BOOL, False) for text in _FALSE},
    **{text: (_NULL, None) for text in ("", "~", "null", "Null", "NULL")},
    **{text: (_FLOAT, math.nan) for text in (".nan", ".NaN", ".NAN")},
    **{text: (_FLOAT, value) for text, value in _INFINITIES.items()},
    "<<": (_MERGE, None),
}
#: What Go's ``strconv.ParseInt(s, 0, 64)`` parses (go-yaml drops underscores first).
_GO_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
#: go-yaml v2's ``yamlStyleFloat``.
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_GO_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")


def _go_tag(text: str) -> str:
    """The tag go-yaml v2 resolves the plain scalar ``text`` to."""
    if text in _GO_FIXED:
        return _GO_FIXED[text][0]
    if text[:1] == ".":
        return _FLOAT if _GO_DOT_FLOAT.fullmatch(text) else _STR
    if text[:1] not in set("+-0123456789"):
        return _STR
    plain = text.replace("_", "")
    if _GO_INT.fullmatch(plain) and -(2**63) <= _go_int(plain) < 2**64:
        return _INT
    if _GO_FLOAT.fullmatch(plain) and math.isfinite(float(plain)):
        return _FLOAT
    return _STR


def _go_int(plain: str) -> int:
    """The value of an integer ``_GO_INT`` matched, as Go reads it (a leading ``0`` is octal)."""
    sign = -1 if plain[:1] == "-" else 1
    digits = plain.lstrip("+-")
    prefix = digits[:2].lower()
    if prefix in ("0x", "0o", "0b"):
        return sign * int(digits[2:], {"0x": 16, "0o": 8, "0b": 2}[prefix])
    return sign * int(digits, 8 if digits.startswith("0") else 10)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    return _go_int(text.replace("_", "")) if node.tag == _INT and _go_tag(text) == _INT else int(text)


def _construct_float(loader: _Loader, node: yaml.ScalarNode) -> int | float:
    """A float as the API server receives it: JSON has no NaN or infinity, and Go writes an integral
    float64 below 1e21 without a fraction, which the server then reads as an integer."""
    text = str(loader.construct_scalar(node))
    value = _GO_FIXED[text][1] if text in _GO_FIXED else float(text.replace("_", ""))
    if not math.isfinite(value):
        mark = node.start_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}"
        why = "is a YAML float JSON cannot hold: quote it to make it a string"
        raise ManifestError(f"{where}: {text!r} {why}")
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    text = str(loader.construct_scalar(node))
    tag, value = _GO_FIXED.get(text, (None, None))
    if tag != _BOOL:
        mark = node.start_mark
        raise ManifestError(f"line {mark.line + 1}, column {mark.column + 1}: {text!r} is not a boolean")
    return bool(value)


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[str, Any]:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:  # a merged key may be overridden: not a duplicate
            continue
        key = _json_key(loader.construct_object(key_node))
        if key in seen:
            mark = key_node.start_mark
            raise ManifestError(f"line {mark.line + 1}, column {mark.column + 1}: duplicate key {key!r}")
        seen.add(key)
    # Merged pairs come first, so the mapping's own keys override them.
    loader.flatten_mapping(node)
    return {_json_key(loader.construct_object(k)): loader.construct_object(v) for k, v in node.value}


def _json_key(key: Any) -> Any:
    """A mapping key as ``sigs.k8s.io/yaml`` writes it into JSON: always a string."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return key if isinstance(key, str) else str(key)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(_INT, _construct_int)
_Loader.add_constructor(_FLOAT, _construct_float)
_Loader.add_constructor(_BOOL, _construct_bool)


def load_manifests(text: str) -> list[Any]:
    """Every non-empty document of a YAML (or JSON) stream, in order."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(f"{where}not valid YAML: {problem}") from exc


class _Dumper(yaml.SafeDumper):
    """SafeDumper that also quotes what PyYAML reads as a string but Go's YAML (kubectl, the API server:
    go-yaml v2 through sigs.k8s.io/yaml) reads as something else: ``y``/``Y``/``n``/``N`` (booleans) and
    numbers PyYAML's YAML 1.1 resolvers do not know (``1e5``, ``123456e7``, ``0o17``, ``08``). Upstream's
    ``NIXL_TELEMETRY_ENABLE=n`` and a worker hash such as ``123456e7`` reached them as ``false`` and a
    float, and the object was refused."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
# Anything go-yaml v2 may parse as an int or a float once it drops underscores (strconv.ParseInt with
# base 0, or its float syntax with an optional exponent); quoting more than it parses changes nothing.
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^[-+]?(?:0[xX][0-9a-fA-F_]+|0[oObB][0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9_]+)?"
        r"|\.[0-9_]+(?:[eE][-+]?[0-9_]+)?)$"
    ),
    list("-+0123456789."),
)


def dump_manifests(documents: list[Any]) -> str:
    """Documents as a multi-document YAML stream, keys in their given order, every string quoted where
    Go's YAML would read it as something else."""
    return yaml.dump_all(
        documents, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
