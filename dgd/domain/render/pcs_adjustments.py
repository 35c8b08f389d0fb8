"""What the PodCliqueSet that exists now changes in the one rendered next (dgd-domain §9.3).

Horizontal scale is driven through scale subresources, so replicas already in the PodCliqueSet are
kept; cliques and scaling groups keep their order; a clique that still selects pods with the
legacy ``worker`` type keeps doing so; restart stamps and a legacy topology constraint carry over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import TypeVar

from msgspec import structs

from dgd.domain.metadata_keys import COMPONENT, COMPONENT_TYPE, RESTART_AT, SUB_COMPONENT_TYPE, WORKER_HASH
from dgd.domain.restart import carried_stamps
from dgd.messages.component import WORKER_TYPES
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import (
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    ResourceClaimTemplateConfig,
    TopologyConstraint,
)

Named = TypeVar("Named", PodCliqueTemplateSpec, PodCliqueScalingGroupConfig, ResourceClaimTemplateConfig)


def legacy_workers(dgd: DynamoGraphDeployment, existing: PodCliqueSet | None) -> set[str]:
    """Prefill/decode components whose existing cliques still select ``component-type=worker``."""
    if existing is None:
        return set()
    found = set()
    for component in dgd.spec.components or []:
        if component.type not in ("prefill", "decode"):
            continue
        for clique in existing.spec.template.cliques:
            labels = clique.labels or {}
            sub_type = labels.get(SUB_COMPONENT_TYPE)
            if (
                labels.get(COMPONENT) == component.name
                and labels.get(COMPONENT_TYPE) == "worker"
                and sub_type in (None, "", component.type)
            ):
                found.add(component.name)
    return found


def all_workers_hashed(existing: PodCliqueSet) -> bool:
    """Whether every worker clique of the existing PodCliqueSet already carries a worker hash."""
    workers = [
        c for c in existing.spec.template.cliques if (c.labels or {}).get(COMPONENT_TYPE) in WORKER_TYPES
    ]
    return all(WORKER_HASH in (c.labels or {}) for c in workers)


def carried_restarts(existing: PodCliqueSet | None) -> dict[str, str]:
    """``nvidia.com/restartAt`` values on the existing cliques, by component name."""
    cliques = existing.spec.template.cliques if existing is not None else []
    return carried_stamps(
        ((c.labels or {}).get(COMPONENT), (c.annotations or {}).get(RESTART_AT)) for c in cliques
    )


def against_existing(
    desired: PodCliqueSet, existing: PodCliqueSet | None, *, owner: Mapping[str, str], gated: Set[str]
) -> PodCliqueSet:
    """``desired`` with existing replicas, order and legacy topology kept (``owner``: item -> component)."""
    if existing is None:
        return desired
    old = existing.spec.template
    new = desired.spec.template
    grouped = {name for g in new.pod_clique_scaling_groups or [] for name in g.clique_names}
    old_cliques = {c.name: c for c in old.cliques}
    old_groups = {g.name: g for g in old.pod_clique_scaling_groups or []}

    cliques = []
    for clique in new.cliques:
        previous = old_cliques.get(clique.name)
        if previous is not None:
            if clique.name not in grouped and owner.get(clique.name) not in gated:
                clique = structs.replace(
                    clique, spec=structs.replace(clique.spec, replicas=previous.spec.replicas)
                )
            topology = _legacy_topology(previous.topology_constraint, clique.topology_constraint)
            clique = structs.replace(clique, topology_constraint=topology)
        cliques.append(clique)
    groups = []
    for group in new.pod_clique_scaling_groups or []:
        previous_group = old_groups.get(group.name)
        if previous_group is not None:
            if owner.get(group.name) not in gated:
                group = structs.replace(group, replicas=previous_group.replicas)
            topology = _legacy_topology(previous_group.topology_constraint, group.topology_constraint)
            group = structs.replace(group, topology_constraint=topology)
        groups.append(group)
    template = structs.replace(
        new,
        cliques=_in_existing_order(cliques, [c.name for c in old.cliques]),
        pod_clique_scaling_groups=_in_existing_order(groups, list(old_groups)) or None,
        resource_claim_templates=_in_existing_order(
            new.resource_claim_templates or [], [t.name for t in old.resource_claim_templates or []]
        )
        or None,
        topology_constraint=_legacy_topology(old.topology_constraint, new.topology_constraint),
    )
    return structs.replace(desired, spec=structs.replace(desired.spec, template=template))


def _in_existing_order(items: list[Named], order: Sequence[str]) -> list[Named]:
    """Items named in ``order`` first, in that order; new ones after, in their own order."""
    rank = {name: index for index, name in enumerate(order)}
    return sorted(items, key=lambda item: (rank.get(item.name, len(rank)),))


def _legacy_topology(
    previous: TopologyConstraint | None, desired: TopologyConstraint | None
) -> TopologyConstraint | None:
    """Grove repairs a legacy ``packDomain`` in two steps: keep it one more time when a name arrives."""
    legacy = previous is not None and previous.pack_domain and not previous.topology_name
    if legacy and previous is not None and desired is not None and desired.topology_name:
        return TopologyConstraint(pack=previous.pack, pack_domain=previous.pack_domain)
    return desired
