"""User ``providerOverride`` fragments spliced into the rendered PodCliqueSet (dgd-domain §2.1, §9.2).

Admission allows an override to set only a topology constraint: the PodCliqueSet's
(``spec.template.topologyConstraint``), a single-node clique's, a scaling group's, or a multinode
leader's/worker's clique. The fragment replaces the rendered subtree; it is not merged into it.
"""

from __future__ import annotations

import copy
from typing import Any

from dgd.domain.pod_merge import JSON
from dgd.domain.roles import is_multinode, roles, uses_pcsg
from dgd.messages.dgd import DynamoGraphDeployment

TOPOLOGY = "topologyConstraint"


def _has_overrides(dgd: DynamoGraphDeployment) -> bool:
    if dgd.spec.provider_override is not None:
        return True
    for component in dgd.spec.components or []:
        if component.provider_override is not None:
            return True
        multinode = component.multinode
        if multinode is not None and any(
            role is not None and role.provider_override is not None
            for role in (multinode.leader, multinode.worker)
        ):
            return True
    return False


def apply_provider_overrides(pcs: JSON, dgd: DynamoGraphDeployment) -> JSON:
    """The PodCliqueSet JSON with every override of the DGD applied: a new object, or ``pcs`` itself
    when the DGD has none (no copy of a whole PodCliqueSet for nothing)."""
    if not _has_overrides(dgd):
        return pcs
    out = copy.deepcopy(pcs)
    template = out["spec"]["template"]
    root = dgd.spec.provider_override
    if root is not None:
        value = ((root.value.get("spec") or {}).get("template") or {}).get(TOPOLOGY)
        _replace(template, value)
    cliques = {c["name"]: c for c in template.get("cliques") or []}
    groups = {g["name"]: g for g in template.get("podCliqueScalingGroups") or []}
    for component in dgd.spec.components or []:
        if component.provider_override is not None:
            target = groups if uses_pcsg(component) else cliques
            item = target.get(component.name.lower())
            if item is not None:
                _replace(item, component.provider_override.value.get(TOPOLOGY))
        if component.multinode is None or not is_multinode(component):
            continue
        names = {r.kind: r.name for r in roles(component)}
        for kind, role in (("leader", component.multinode.leader), ("worker", component.multinode.worker)):
            if role is not None and role.provider_override is not None and kind in names:
                clique = cliques.get(names[kind])
                if clique is not None:
                    _replace(clique, role.provider_override.value.get(TOPOLOGY))
    return out


def _replace(target: JSON, value: Any) -> None:
    if value is None:
        target.pop(TOPOLOGY, None)
    else:
        target[TOPOLOGY] = copy.deepcopy(value)
