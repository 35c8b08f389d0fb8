"""The kinds, upstream CRD versions and schema walks that the generated-CRD tests share."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from dgd.domain.crds import (
    RESOURCES,
    CustomResource,
)
from tests.upstream import CRD_DIR, GROVE, load_documents

GROVE_CRD_DIR = GROVE / "operator" / "api" / "core" / "v1alpha1" / "crds"


KINDS = [resource.kind for resource in RESOURCES]

#: The kinds served in v1alpha1 too, converted by the operator's webhook (supplement §1.11).
CONVERTED_KINDS = (
    "DynamoGraphDeployment",
    "DynamoComponentDeployment",
    "DynamoGraphDeploymentScalingAdapter",
)


def _resource(kind: str) -> CustomResource:
    return next(resource for resource in RESOURCES if resource.kind == kind)


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    """The stored version (the one every kind has)."""
    (version,) = [v for v in crd["spec"]["versions"] if v["storage"]]
    return version  # type: ignore[no-any-return]


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    return _version(crd)["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


@functools.cache
def _upstream_versions(kind: str) -> dict[str, dict[str, Any]]:
    """Every version of upstream's CRD of a kind, by name (parsed once: the files are large)."""
    resource = _resource(kind)
    directory = GROVE_CRD_DIR if resource.group == "grove.io" else CRD_DIR
    (crd,) = load_documents(directory / f"{resource.group}_{resource.plural}.yaml")
    return {version["name"]: version for version in crd["spec"]["versions"]}


def _upstream_version(kind: str) -> dict[str, Any]:
    """Upstream's CRD version that matches ours."""
    return _upstream_versions(kind)[_resource(kind).version]


def _field_paths(node: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every field below ``node`` as (path, schema): ``a.b``, ``a[]`` for items, ``a{}`` for map values."""
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, child
        yield from _nested(child, path)


def _nested(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield from _field_paths(node, path)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        child = node.get(key)
        if isinstance(child, dict):
            yield path + suffix, child
            yield from _nested(child, path + suffix)


def _covers(prefix: str, path: str) -> bool:
    if prefix.endswith("."):
        return path.startswith(prefix)
    return path == prefix or path.startswith((prefix + ".", prefix + "[", prefix + "{"))
