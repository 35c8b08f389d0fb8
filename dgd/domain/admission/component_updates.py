"""What may not change in one component between two versions of its DGD or DCD (supplement §4.5 item 3).

These rules hold for every requester, and for a DGD component and a DCD alike. The DGD-only rule
(replicas under a scaling adapter) lives in :mod:`dgd.domain.admission.update`.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from dgd.domain.admission.components import POWER_LIMIT, main_image, runtime_version_problems
from dgd.domain.admission.errors import FieldError, show
from dgd.domain.podtemplate import gpu_count, main_container, template_annotations
from dgd.domain.roles import failover_mode, forces_scaling_group, gms_mode, is_multinode, node_count
from dgd.messages.component import ComponentSpec, ProviderOverride

IMMUTABLE = "field is immutable"
RECREATE = "delete and recreate the DynamoGraphDeployment"
#: Upstream warns on every backendFramework change, besides refusing it.
BACKEND_WARNING = FieldError(
    "spec.backendFramework", "Changing spec.backendFramework may cause unexpected behavior"
)


def immutable(path: str, old: object, new: object, detail: str = IMMUTABLE) -> FieldError:
    """A change of a value that may not change: the new value, the old one, and upstream's reason."""
    return FieldError(path, f"{show(new)} is not allowed (was {show(old)}): {detail}")


def backend_change(old: str | None, new: str | None) -> FieldError | None:
    """The error for a changed ``spec.backendFramework`` (of a DGD or a DCD), ``None`` if unchanged."""
    if old == new:
        return None
    return immutable("spec.backendFramework", old, new, "is immutable and cannot be changed after creation")


def check_component_update(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    """Every change of ``old`` into ``new`` (the same component, matched by name) that is not allowed."""
    yield from _provider_overrides(old, new, path)
    yield from _node_topology(old, new, path)
    yield from _topology_constraint(old, new, path)
    yield from _gpu_memory_layout(old, new, path)
    yield from _power_limit(old, new, path)
    # CEL rule of the CRD: once set, minAvailable stays.
    if old.min_available is not None and new.min_available != old.min_available:
        yield immutable(
            f"{path}.minAvailable",
            old.min_available,
            new.min_available,
            "minAvailable is immutable after creation",
        )


def runtime_version_ratchet(
    old: ComponentSpec, new: ComponentSpec, path: str, *, override_required: bool
) -> Iterator[FieldError]:
    """Upstream's runtime-version rule, ratcheted: what an update newly breaks, not what was already so.

    A main image, once set, cannot be removed; a changed (image, ``runtimeVersionOverride``) pair must
    pass the create-time rule; an unchanged pair always passes.
    """
    before, after = main_image(old), main_image(new)
    if after is None and before is None:
        return
    if (before, old.runtime_version_override) == (after, new.runtime_version_override):
        return
    yield from runtime_version_problems(new, path, override_required=override_required)


def _provider_overrides(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    pairs = [(old.provider_override, new.provider_override, f"{path}.providerOverride")]
    for role in ("leader", "worker"):
        before = getattr(old.multinode, role, None) if old.multinode else None
        after = getattr(new.multinode, role, None) if new.multinode else None
        pairs.append(
            (
                before.provider_override if before else None,
                after.provider_override if after else None,
                f"{path}.multinode.{role}.providerOverride",
            )
        )
    for before_override, after_override, where in pairs:
        yield from _override_identity(before_override, after_override, where)


def _override_identity(
    old: ProviderOverride | None, new: ProviderOverride | None, path: str
) -> Iterator[FieldError]:
    """An override's apiVersion and target stay what they were, when both versions set them."""
    if old is None or new is None:
        return
    if old.api_version and new.api_version and old.api_version != new.api_version:
        yield immutable(f"{path}.apiVersion", old.api_version, new.api_version)
    if old.target and new.target and old.target != new.target:
        yield immutable(f"{path}.target", old.target, new.target)


def _node_topology(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    # A node count change within multinode is allowed; crossing the single/multi boundary is not.
    if is_multinode(old) != is_multinode(new):
        yield FieldError(
            f"{path}.multinode",
            "cannot change node topology between single-node and multi-node after creation",
        )


def frozen_topology(path: str, what: str) -> FieldError:
    """A topology setting was added, removed or changed; ``what`` names it in the advice."""
    return FieldError(
        path,
        f"is immutable and cannot be added, removed, or changed after creation; {RECREATE} to change {what}",
    )


def _topology_constraint(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    if old.topology_constraint != new.topology_constraint:
        yield frozen_topology(f"{path}.topologyConstraint", "topology constraints")


def _gpu_memory_layout(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    """The Grove layouts of inter-pod GMS, inter-pod failover and forced scaling groups are fixed."""
    where = f"{path}.experimental"
    if (gms_mode(old) == "InterPod") != (gms_mode(new) == "InterPod"):
        yield FieldError(
            f"{where}.gpuMemoryService",
            f"the inter-pod GMS layout cannot be toggled after creation; {RECREATE}",
        )
    inter_pod_before, inter_pod_after = failover_mode(old) == "InterPod", failover_mode(new) == "InterPod"
    if inter_pod_before != inter_pod_after:
        yield FieldError(
            f"{where}.failover", f"inter-pod GMS failover cannot be toggled after creation; {RECREATE}"
        )
    elif inter_pod_after and _shadows(old) != _shadows(new):
        yield immutable(
            f"{where}.failover.numShadows",
            _shadows(old),
            _shadows(new),
            f"is immutable for inter-pod GMS failover; {RECREATE} to change it",
        )
    if forces_scaling_group(old) != forces_scaling_group(new):
        yield immutable(
            f"{where}.grove.forceScalingGroup",
            forces_scaling_group(old),
            forces_scaling_group(new),
            f"cannot be toggled after creation; {RECREATE} to change it",
        )


def _shadows(component: ComponentSpec) -> int:
    """Shadow engines per primary: unset or below one counts as one."""
    failover = component.experimental.failover if component.experimental else None
    shadows = failover.num_shadows if failover else None
    return shadows if shadows is not None and shadows >= 1 else 1


def _power_limit(old: ComponentSpec, new: ComponentSpec, path: str) -> Iterator[FieldError]:
    """Power-aware planning budgets GPUs per node: while it is on, its inputs stay fixed."""
    before = template_annotations(old.pod_template).get(POWER_LIMIT)
    after = template_annotations(new.pod_template).get(POWER_LIMIT)
    if before != after:
        yield immutable(f"{path}.podTemplate.metadata.annotations[{POWER_LIMIT}]", before, after)
        return
    if after is None:
        return
    reason = f'{IMMUTABLE} while annotation "{POWER_LIMIT}" is set'
    gpus_before, gpus_after = _main_gpus(old), _main_gpus(new)
    if gpus_before != gpus_after:
        found = main_container(new.pod_template)
        where = f"{path}.podTemplate.spec.containers[{found[0]}]" if found else f"{path}.podTemplate.spec"
        yield immutable(f"{where}.resources", _count(gpus_before), _count(gpus_after), f"GPU count: {reason}")
    if node_count(old) != node_count(new):
        yield immutable(f"{path}.multinode.nodeCount", node_count(old), node_count(new), reason)


def _main_gpus(component: ComponentSpec) -> Fraction | None:
    found = main_container(component.pod_template)
    return gpu_count(found[1]) if found else None


def _count(gpus: Fraction | None) -> int | str | None:
    """A GPU count as a message shows it: ``2``, ``"1/2"``, ``null``."""
    if gpus is None:
        return None
    return int(gpus) if gpus.denominator == 1 else str(gpus)
