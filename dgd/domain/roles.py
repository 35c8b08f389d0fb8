"""The Grove roles of a component: which PodCliques it becomes (domain spec §9.3)."""

from __future__ import annotations

from typing import Literal

import msgspec

from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment

RoleKind = Literal["main", "leader", "worker", "gms"]


class Role(msgspec.Struct, frozen=True):
    """One clique of a component: its lowercase name, its role, its replicas and, in the inter-pod GMS
    layout, the node rank its pods serve (0 otherwise)."""

    name: str
    kind: RoleKind
    replicas: int
    rank: int = 0


def node_count(component: ComponentSpec) -> int:
    """Nodes one replica of the component spans (1 unless multinode)."""
    if component.multinode is None:
        return 1
    return component.multinode.node_count if component.multinode.node_count is not None else 2


def is_multinode(component: ComponentSpec) -> bool:
    return node_count(component) > 1


def has_multinode(dgd: DynamoGraphDeployment) -> bool:
    """Whether any component of ``dgd`` spans several nodes."""
    return any(is_multinode(c) for c in dgd.spec.components or [])


def gms_mode(component: ComponentSpec) -> str | None:
    """The GPU memory service mode, ``None`` when the component does not use it."""
    experimental = component.experimental
    if experimental is None or experimental.gpu_memory_service is None:
        return None
    return experimental.gpu_memory_service.mode or "IntraPod"


def failover_mode(component: ComponentSpec) -> str | None:
    """The failover mode, ``None`` when the component has no failover."""
    experimental = component.experimental
    if experimental is None or experimental.failover is None:
        return None
    return experimental.failover.mode or "IntraPod"


def forces_scaling_group(component: ComponentSpec) -> bool:
    experimental = component.experimental
    return bool(experimental and experimental.grove and experimental.grove.force_scaling_group)


def uses_pcsg(component: ComponentSpec) -> bool:
    """Whether Grove backs the component with a PodCliqueScalingGroup."""
    return is_multinode(component) or gms_mode(component) == "InterPod" or forces_scaling_group(component)


def roles(component: ComponentSpec) -> list[Role]:
    """The cliques of a component, in render order."""
    base = component.name.lower()
    replicas = component.replicas if component.replicas is not None else 1
    nodes = node_count(component)
    shadows = 1 if failover_mode(component) == "InterPod" else 0
    # Inter-pod GMS: one GMS clique per rank, then the engine cliques.
    if gms_mode(component) == "InterPod":
        gms = [Role(f"{base}-gms-{rank}", "gms", 1, rank) for rank in range(nodes)]
        if nodes == 1:
            return [*gms, Role(base, "main", 1 + shadows)]
        engines = [Role(f"{base}-ldr", "leader", 1 + shadows)]
        engines += [Role(f"{base}-wkr-{rank}", "worker", 1 + shadows, rank) for rank in range(1, nodes)]
        return gms + engines
    if nodes > 1:
        return [Role(f"{base}-ldr", "leader", 1), Role(f"{base}-wkr", "worker", nodes - 1)]
    if forces_scaling_group(component):
        return [Role(base, "main", 1)]
    return [Role(base, "main", replicas)]
