"""How many GPUs one container asks for (podspec §2 "Container GPU count")."""

from __future__ import annotations

from dgd.domain.pod_merge import JSON
from dgd.domain.quantity import parse_quantity
from dgd.domain.render.errors import RenderError


def container_gpus(container: JSON) -> int:
    """GPUs of one container: the first GPU-like resource in limits, else requests (podspec §2)."""
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        for name, value in (resources.get(section) or {}).items():
            if not _is_gpu_resource(str(name)):
                continue
            amount = parse_quantity(value) if isinstance(value, int | str) else None
            if amount is None or amount.denominator != 1 or amount < 0:
                raise RenderError(
                    f"containers[main].resources.{section}[{name}]",
                    f"{value!r} is not a whole number of GPUs",
                )
            return int(amount)
    if resources.get("claims"):
        raise RenderError(
            "containers[main].resources.claims", "counting GPUs of DRA resource claims is not supported yet"
        )
    return 0


def _is_gpu_resource(name: str) -> bool:
    lower = name.lower()
    return (
        lower in ("nvidia.com/gpu", "gpu")
        or lower.endswith("/gpu")
        or "/mig-" in lower
        or lower.startswith("gpu.")
    )
