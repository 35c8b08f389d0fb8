"""Read-only views of a component's raw ``podTemplate`` (the operator never models pod specs)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dgd.domain.quantity import parse_quantity

MAIN_CONTAINER = "main"
GPU_RESOURCE = "nvidia.com/gpu"


def containers(pod_template: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The containers of a pod template, skipping entries that are not objects."""
    spec = (pod_template or {}).get("spec")
    items = spec.get("containers") if isinstance(spec, dict) else None
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def main_container(pod_template: dict[str, Any] | None) -> tuple[int, dict[str, Any]] | None:
    """(index, container) of the container named ``main``, if any."""
    for index, container in enumerate(containers(pod_template)):
        if container.get("name") == MAIN_CONTAINER:
            return index, container
    return None


def with_main_container(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A copy of a pod template's spec whose ``containers`` are copies, one of them ``main`` (added first
    when missing), and that main container: ``(spec, main)``, both to change and put back."""
    spec = dict(template.get("spec") or {})
    copies = [dict(c) for c in spec.get("containers") or [] if isinstance(c, dict)]
    found = main_container({"spec": {"containers": copies}})
    if found is None:
        copies.insert(0, {"name": MAIN_CONTAINER})
    spec["containers"] = copies
    return spec, copies[found[0] if found is not None else 0]


def gpu_limit(container: dict[str, Any]) -> Fraction | None:
    """The ``nvidia.com/gpu`` limit of a container, ``None`` if unset or not a quantity."""
    return _gpu_quantity(container, "limits")


def gpu_count(container: dict[str, Any]) -> Fraction | None:
    """The ``nvidia.com/gpu`` a container asks for: its limit, else its request (``None``: neither)."""
    limit = gpu_limit(container)
    return limit if limit is not None else _gpu_quantity(container, "requests")


def _gpu_quantity(container: dict[str, Any], section: str) -> Fraction | None:
    resources = container.get("resources")
    amounts = resources.get(section) if isinstance(resources, dict) else None
    value = amounts.get(GPU_RESOURCE) if isinstance(amounts, dict) else None
    return parse_quantity(value) if isinstance(value, int | str) and not isinstance(value, bool) else None


def template_annotations(pod_template: dict[str, Any] | None) -> dict[str, Any]:
    metadata = (pod_template or {}).get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def image_tag(image: str) -> str | None:
    """The tag of an image reference: after the last ``:`` that follows the last ``/``, digest removed."""
    image = image.split("@", 1)[0]
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None
