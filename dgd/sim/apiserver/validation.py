"""Checks the API server makes of a request before anything is stored: list options, strict fields."""

from __future__ import annotations

import functools
from typing import Any

from dgd.cluster.errors import Cause, Invalid
from dgd.domain.crds import all_crds
from dgd.messages.base import JSONObject


def check_version_match(version: str | None, match: str | None) -> None:
    """The API server's checks of ``resourceVersionMatch`` on a list (422 naming the parameter)."""
    if not match:
        return
    why = None
    if match not in ("NotOlderThan", "Exact"):
        why = f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"'
    elif not version:
        why = "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    elif match == "Exact" and version == "0":
        why = 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
    if why is not None:
        cause = Cause("resourceVersionMatch", why)
        raise Invalid(f'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: {why}', causes=(cause,))


@functools.cache
def crd_schemas() -> dict[tuple[str, str, str], JSONObject]:
    """The OpenAPI schema of each version of each CRD the facade serves, by (group, version, plural)."""
    return {
        (crd["spec"]["group"], version["name"], crd["spec"]["names"]["plural"]): version["schema"][
            "openAPIV3Schema"
        ]
        for crd in all_crds()
        for version in crd["spec"]["versions"]
    }


def unknown_fields(value: Any, schema: JSONObject, path: str) -> list[str]:
    """The paths in ``value`` its structural ``schema`` has no field for (``metadata`` is the API's)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or path == "metadata":
        return []
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties is None:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                return [
                    f
                    for key, item in value.items()
                    for f in unknown_fields(item, extra, f"{path}.{key}" if path else key)
                ]
            return []
        found = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key in ("apiVersion", "kind") and not path:
                continue
            if key not in properties:
                found.append(where)
            else:
                found += unknown_fields(item, properties[key], where)
        return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [
            f
            for index, item in enumerate(value)
            for f in unknown_fields(item, schema["items"], f"{path}[{index}]")
        ]
    return []
