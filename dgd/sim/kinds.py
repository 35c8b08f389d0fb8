"""The kinds the simulated cluster serves, looked up as a trace names them."""

from __future__ import annotations

from typing import Any

from dgd.cluster.resources import DEFAULT_RESOURCES, Resource

#: By (apiVersion, kind), as manifests and object references name them.
BY_KIND: dict[tuple[str, str], Resource[Any]] = {(r.api_version, r.kind): r for r in DEFAULT_RESOURCES}
#: By ``plural.group`` (``pods`` for the core group), as fault records name them.
BY_NAME: dict[str, Resource[Any]] = {str(r): r for r in DEFAULT_RESOURCES}


def kind_of(obj: dict[str, Any]) -> Resource[Any] | None:
    """The resource of a stored object (``None`` if the simulated cluster does not serve it)."""
    return BY_KIND.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
