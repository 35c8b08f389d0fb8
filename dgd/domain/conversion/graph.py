"""The graph-level fields and status fields both versions share (supplement §1.3, §1.9).

They convert as they are, except three renames that go one way or the other: v1alpha1 ``envs`` is
v1beta1 ``env``, ``topologyConstraint.topologyProfile`` is ``clusterTopologyName``, and the rolling
update's ``updatedServices`` is ``updatedComponents``. Services and components are the callers'.
"""

from __future__ import annotations

import copy
from typing import Any

#: v1alpha1 name → v1beta1 name of each renamed field.
_RENAMES = {"envs": "env", "topologyProfile": "clusterTopologyName", "updatedServices": "updatedComponents"}


def _names(alpha: str, to_beta: bool) -> tuple[str, str]:
    # (source name, target name) of a renamed field, for the direction asked.
    beta = _RENAMES[alpha]
    return (alpha, beta) if to_beta else (beta, alpha)


def graph_fields(spec: dict[str, Any], to_beta: bool) -> dict[str, Any]:
    """The graph-level spec fields other than services/components, in the target version's names."""
    out: dict[str, Any] = {}
    for key in ("annotations", "labels", "priorityClassName", "backendFramework"):
        if spec.get(key):
            out[key] = copy.deepcopy(spec[key])
    for key in ("providerOverride", "restart", "experimental"):
        if spec.get(key) is not None:
            out[key] = copy.deepcopy(spec[key])
    if spec.get("topologyConstraint") is not None:
        constraint = spec["topologyConstraint"]
        source, target = _names("topologyProfile", to_beta)
        out["topologyConstraint"] = {target: constraint.get(source) or ""}
        if constraint.get("packDomain"):
            out["topologyConstraint"]["packDomain"] = constraint["packDomain"]
    source, target = _names("envs", to_beta)
    if spec.get(source):
        out[target] = copy.deepcopy(spec[source])
    return out


def graph_status(status: dict[str, Any], to_beta: bool) -> dict[str, Any]:
    """The status fields other than services/components, in the target version's names."""
    out: dict[str, Any] = {"state": status.get("state") or ""}
    for key in ("observedGeneration", "placement", "restart"):
        if status.get(key) is not None:
            out[key] = copy.deepcopy(status[key])
    for key in ("conditions", "checkpoints"):
        if status.get(key):
            out[key] = copy.deepcopy(status[key])
    if status.get("rollingUpdate") is not None:
        rolling = copy.deepcopy(status["rollingUpdate"])
        source, target = _names("updatedServices", to_beta)
        updated = rolling.pop(source, None)
        if updated:
            rolling[target] = updated
        out["rollingUpdate"] = rolling
    return out
