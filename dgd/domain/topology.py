"""The ``TopologyLevelsAvailable`` condition of a Grove DGD (dgd-domain §9.7).

Projected from Grove's ``TopologyLevelsUnavailable`` condition on the PodCliqueSet, the same
observation the Grove program synced (never a second read). When the projection turns ``False``
(or its reason or message changes while ``False``) a Warning event is queued with it, to be emitted
only once the status that carries it is written.
"""

from __future__ import annotations

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.projection import condition_at, condition_of, upsert_condition
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.messages.meta import Condition, ConditionStatus

TOPOLOGY_LEVELS_AVAILABLE = "TopologyLevelsAvailable"
_GROVE_CONDITION = "TopologyLevelsUnavailable"
_CLUSTER_TOPOLOGY_NOT_FOUND = "ClusterTopologyNotFound"
_TOPOLOGY = "topologyConstraint"


class TopologyProjection(msgspec.Struct, frozen=True):
    """The condition to upsert and, when it newly turned ``False``, the Warning to queue with it."""

    condition: Condition
    warning: EventRecord | None = None


def uses_topology(dgd: DynamoGraphDeployment) -> bool:
    """Any typed topology constraint, or any Grove provider override that writes one."""
    spec = dgd.spec
    if spec.topology_constraint is not None:
        return True
    overrides = [spec.provider_override]
    for component in spec.components or []:
        if component.topology_constraint is not None:
            return True
        overrides.append(component.provider_override)
        if component.multinode is not None:
            for role in (component.multinode.leader, component.multinode.worker):
                overrides.append(role.provider_override if role is not None else None)
    return any(o is not None and _writes_topology(o.value) for o in overrides)


def _writes_topology(value: object) -> bool:
    if isinstance(value, dict):
        return _TOPOLOGY in value or any(_writes_topology(v) for v in value.values())
    return False


def project_topology(
    dgd: DynamoGraphDeployment, pcs: PodCliqueSet | None, previous: DGDStatus | None, *, now: str
) -> TopologyProjection | None:
    """The projection, or ``None`` when there is nothing to project (no constraint, or no PCS)."""
    if pcs is None or not uses_topology(dgd):
        return None
    grove = next(
        (c for c in (pcs.status.conditions if pcs.status else None) or () if c.type == _GROVE_CONDITION), None
    )
    generation = dgd.metadata.generation

    # Every outcome is the one condition, stamped with this generation at ``now``.
    def condition(status: ConditionStatus, reason: str, message: str) -> Condition:
        return condition_at(
            TOPOLOGY_LEVELS_AVAILABLE, status, reason, message, now=now, generation=generation
        )

    if grove is None:
        pending = "Waiting for topology condition from the scheduling framework"
        return TopologyProjection(condition("Unknown", "TopologyConditionPending", pending))
    if grove.status != "True":
        available = "All required topology levels are available in the cluster topology"
        return TopologyProjection(condition("True", "AllTopologyLevelsAvailable", available))
    reason = (
        "TopologyDefinitionNotFound"
        if grove.reason == _CLUSTER_TOPOLOGY_NOT_FOUND
        else "TopologyLevelsUnavailable"
    )
    before = condition_of(previous, TOPOLOGY_LEVELS_AVAILABLE)
    repeated = (
        before is not None
        and before.status == "False"
        and before.reason == reason
        and before.message == grove.message
    )
    warning = None
    if not repeated:
        warning = EventRecord(
            "Warning", reason, "Update", f"Topology constraints no longer enforced: {grove.message}"
        )
    return TopologyProjection(condition("False", reason, grove.message), warning)


def apply_topology(status: DGDStatus, projection: TopologyProjection) -> DGDStatus:
    """``status`` with the projected condition upserted."""
    return msgspec.structs.replace(
        status, conditions=upsert_condition(status.conditions, projection.condition)
    )
