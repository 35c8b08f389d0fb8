"""How many GPUs one container asks for (podspec §2 "Container GPU count").

Scalar GPU resources first (limits, else requests); a container with none counts the devices of the
DRA claims it uses: each container claim names a pod ``resourceClaims`` entry, whose
ResourceClaimTemplate the caller passes in (``templates``, by name, as read from the namespace). A
device request counts when its device class names GPUs (upstream ``dra.ResolveGPUCount``, see
``deploy/operator/internal/dra``); ``exactly`` requests count ``count`` devices (1 when unset),
``firstAvailable`` alternatives must agree. Upstream classifies a DeviceClass by the driver its CEL
selectors name; here the class name itself is read the same way (``gpu.nvidia.com``, ``gpu.intel.com``
are GPUs), since rendering reads no DeviceClass.
"""

from __future__ import annotations

from collections.abc import Mapping

from dgd.domain.pod_merge import JSON
from dgd.domain.quantity import parse_quantity
from dgd.domain.render.errors import RenderError

#: ResourceClaimTemplates of the namespace by name (the whole object, as JSON).
ClaimTemplates = Mapping[str, JSON]


def counted_templates(pod_template: JSON | None) -> list[str]:
    """The ResourceClaimTemplates a GPU count of this pod template's main container may read: those of
    the pod claims its main container uses (none when it asks for scalar GPUs or claims nothing)."""
    spec = (pod_template or {}).get("spec") or {}
    main = next((c for c in spec.get("containers") or [] if c.get("name") == "main"), None)
    claims = ((main or {}).get("resources") or {}).get("claims") or []
    used = {c.get("name") for c in claims}
    names = [
        c.get("resourceClaimTemplateName") for c in spec.get("resourceClaims") or [] if c.get("name") in used
    ]
    return sorted({str(n) for n in names if n})


def container_gpus(
    container: JSON, *, pod_claims: list[JSON] | None = None, templates: ClaimTemplates | None = None
) -> int:
    """GPUs of one container: its scalar GPU resources, else the GPU devices of its DRA claims."""
    scalar = scalar_gpus(container, "containers[main]")
    claims = (container.get("resources") or {}).get("claims") or []
    if scalar > 0 or not claims:
        return scalar
    by_name = {c.get("name"): c for c in pod_claims or []}
    total, seen = 0, set()
    for claim in claims:
        key = (claim.get("name"), claim.get("request"))
        if key in seen:
            continue
        seen.add(key)
        total += _claim_gpus(claim, by_name, templates or {})
    return total


def scalar_gpus(container: JSON, where: str) -> int:
    """The first GPU-like resource in limits, else requests; it must be a whole number (0: none)."""
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        for name, value in (resources.get(section) or {}).items():
            if not is_gpu_resource(str(name)):
                continue
            amount = parse_quantity(value) if isinstance(value, int | str) else None
            if amount is None or amount.denominator != 1 or amount < 0:
                raise RenderError(
                    f"{where}.resources.{section}[{name}]", f"{value!r} is not a whole number of GPUs"
                )
            return int(amount)
    return 0


def is_gpu_resource(name: str) -> bool:
    lower = name.lower()
    return (
        lower in ("nvidia.com/gpu", "gpu")
        or lower.endswith("/gpu")
        or "/mig-" in lower
        or lower.startswith("gpu.")
    )


def _claim_gpus(claim: JSON, pod_claims: Mapping[object, JSON], templates: ClaimTemplates) -> int:
    name = claim.get("name")
    where = f"containers[main].resources.claims[{name}]"
    pod_claim = pod_claims.get(name)
    if pod_claim is None:
        raise RenderError(where, f"the container claim {name!r} has no matching pod resourceClaims entry")
    template_name = pod_claim.get("resourceClaimTemplateName")
    if not template_name:
        raise RenderError(
            where,
            f"pod resourceClaim {name!r} must name a resourceClaimTemplateName to count its GPUs "
            "(a shared ResourceClaim is not read)",
        )
    template = templates.get(template_name)
    if template is None:
        raise RenderError(where, f"ResourceClaimTemplate {template_name!r} does not exist in the namespace")
    requests = (((template.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []
    wanted = claim.get("request")
    chosen = [r for r in requests if not wanted or r.get("name") == wanted]
    if wanted and not chosen:
        raise RenderError(
            where, f"device request {wanted!r} is not in ResourceClaimTemplate {template_name!r}"
        )
    return sum(_request_gpus(request, where, template_name) for request in chosen)


def _request_gpus(request: JSON, where: str, template: str) -> int:
    exactly = request.get("exactly")
    if exactly is not None:
        gpu = looks_like_gpu(str(exactly.get("deviceClassName") or ""))
        return _devices(exactly, where, template) if gpu else 0
    alternatives = request.get("firstAvailable") or []
    gpus = [a for a in alternatives if looks_like_gpu(str(a.get("deviceClassName") or ""))]
    if not gpus:
        return 0
    name = request.get("name")
    if len(gpus) != len(alternatives):
        raise RenderError(
            where, f"ResourceClaimTemplate {template!r}: request {name!r} mixes GPU and non-GPU alternatives"
        )
    counts = {_devices(a, where, template) for a in gpus}
    if len(counts) != 1:
        raise RenderError(
            where,
            f"ResourceClaimTemplate {template!r}: request {name!r} has GPU alternatives with different "
            "counts",
        )
    return counts.pop()


def _devices(request: JSON, where: str, template: str) -> int:
    mode = request.get("allocationMode") or "ExactCount"
    if mode != "ExactCount":
        raise RenderError(
            where,
            f"ResourceClaimTemplate {template!r}: allocationMode {mode!r} has no fixed GPU count "
            "(only ExactCount has)",
        )
    count = int(request.get("count") or 0)
    return count if count > 0 else 1


def looks_like_gpu(identifier: str) -> bool:
    """A driver or device class name that names GPUs (upstream ``looksLikeGPUIdentifier``)."""
    lower = identifier.lower()
    return (
        lower == "gpu"
        or lower.startswith(("gpu.", "gpu/"))
        or lower.endswith("/gpu")
        or "/gpu." in lower
        or "/gpu-" in lower
    )
