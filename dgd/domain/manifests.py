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
    """SafeDumper that also quotes ``y``, ``Y``, ``n`` and ``N``: PyYAML reads them as strings, but they
    are YAML 1.1 booleans to the Go YAML that kubectl and the API server read manifests with, so an
    unquoted ``value: n`` (an env var upstream renders) reached them as ``false`` and was refused."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def dump_manifests(documents: list[Any]) -> str:
    """Documents as a multi-document YAML stream, keys in their given order, every string quoted where
    Go's YAML would read it as something else."""
    return yaml.dump_all(
        documents, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )
