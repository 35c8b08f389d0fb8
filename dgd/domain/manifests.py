"""Reading manifests: multi-document YAML or JSON, parsed the way Kubernetes tooling reads them; and
writing them so that Kubernetes tooling reads back the same values."""

from __future__ import annotations

import re
from typing import Any

import yaml


class ManifestError(ValueError):
    """A manifest that is not YAML or JSON; the message says where (line, column) and what."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps timestamps as strings and refuses duplicate keys, as the API server does."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            mark = key_node.start_mark
            raise ManifestError(f"line {mark.line + 1}, column {mark.column + 1}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


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
