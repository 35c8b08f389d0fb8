"""What the DCD controller says about a DCD: its readiness, conditions, status and events
(dcd-controller §2.6, §2.7), as pure functions of the DCD and its workload as last written or observed.

The DGD's Component program reads these (``Available``, ``status.component``), as it reads what
upstream's DCD controller writes; the wording is upstream's, so a DGD reconciled by either reads the
same. Conditions follow the standard merge: a transition time moves only when the status flips; the
success path records no ``observedGeneration`` on them (§2.13 #3), the checkpoint refusal does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dgd.domain.events import EventRecord
from dgd.domain.projection import condition_at, upsert_condition
from dgd.messages.dcd import DCDStatus, DynamoComponentDeployment
from dgd.messages.dgd import ComponentKind, ComponentReplicaStatus
from dgd.messages.meta import Condition, ConditionStatus

AVAILABLE = "Available"
COMPONENT_READY = "DynamoComponentReady"
RECONCILING = "Reconciling"
STARTING = "Starting to reconcile DynamoComponentDeployment"
INVALID_CHECKPOINT = "InvalidCheckpointConfiguration"
CONTROLLER = "DynamoComponentDeployment"


def _desired(workload: Mapping[str, Any]) -> int:
    replicas = (workload.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _condition_true(workload: Mapping[str, Any], kind: str) -> bool:
    """Whether the first condition of type ``kind`` in the workload's status is ``True``."""
    for condition in (workload.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return bool(condition.get("status") == "True")
    return False


def deployment_ready(deployment: Mapping[str, Any]) -> bool:
    """§2.6.2: not paused, and either scaled to 0 or every replica updated and available at the
    observed generation, with no surplus, and ``Available=True``."""
    spec = deployment.get("spec") or {}
    if spec.get("paused"):
        return False
    desired = _desired(deployment)
    if desired == 0:
        return True
    status = deployment.get("status") or {}
    generation = (deployment.get("metadata") or {}).get("generation") or 0
    return bool(
        (status.get("observedGeneration") or 0) >= generation
        and (status.get("updatedReplicas") or 0) >= desired
        and (status.get("availableReplicas") or 0) >= desired
        and (status.get("replicas") or 0) == desired
        and _condition_true(deployment, "Available")
    )


def lws_ready(lws: Mapping[str, Any]) -> bool:
    """§2.6.2: scaled to 0, or enough ready groups and ``Available=True`` (no generation check, §2.13 #2)."""
    desired = _desired(lws)
    if desired == 0:
        return True
    ready = ((lws.get("status") or {}).get("readyReplicas") or 0) >= desired
    return ready and _condition_true(lws, "Available")


def workload_kind(workload: Mapping[str, Any]) -> ComponentKind:
    return "LeaderWorkerSet" if workload.get("kind") == "LeaderWorkerSet" else "Deployment"


def component_status(workload: Mapping[str, Any], runtime_namespace: str) -> ComponentReplicaStatus:
    """``status.component`` from the workload as the sync left it (§2.6.1): a create's answer reads 0."""
    kind = workload_kind(workload)
    status = workload.get("status") or {}
    name = str((workload.get("metadata") or {}).get("name") or "")
    return ComponentReplicaStatus(
        component_kind=kind,
        component_names=[name],
        runtime_namespace=runtime_namespace or None,
        replicas=int(status.get("replicas") or 0),
        updated_replicas=int(status.get("updatedReplicas") or 0),
        ready_replicas=int(status.get("readyReplicas") or 0),
        available_replicas=int(status.get("availableReplicas") or 0) if kind == "Deployment" else None,
    )


def _set(
    conditions: Sequence[Condition] | None,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int | None = None,
) -> list[Condition]:
    return upsert_condition(
        conditions, condition_at(type, status, reason, message, now=now, generation=generation)
    )


def reconciled(
    dcd: DynamoComponentDeployment, workload: Mapping[str, Any], runtime_namespace: str, *, now: str
) -> DCDStatus:
    """The status of a successful pass (§2.6.1): both conditions from the workload's readiness, the
    component's replicas, the generation observed."""
    kind = workload_kind(workload)
    ready = deployment_ready(workload) if kind == "Deployment" else lws_ready(workload)
    previous = dcd.status or DCDStatus()
    if ready:
        conditions = _set(previous.conditions, AVAILABLE, "True", f"{kind}Ready", f"{kind} is ready", now=now)
        conditions = _set(
            conditions, COMPONENT_READY, "True", "ComponentReady", "DynamoComponent is ready", now=now
        )
    else:
        conditions = _set(
            previous.conditions, AVAILABLE, "False", f"{kind}NotReady", f"{kind} is not ready", now=now
        )
        conditions = _set(
            conditions, COMPONENT_READY, "False", "ComponentNotReady", "DynamoComponent is not ready", now=now
        )
    return DCDStatus(
        observed_generation=dcd.metadata.generation,
        conditions=conditions,
        component=component_status(workload, runtime_namespace),
    )


def starting(dcd: DynamoComponentDeployment, *, now: str) -> DCDStatus:
    """§2.2 step 6: the first status of a DCD, both conditions ``Unknown``."""
    previous = dcd.status or DCDStatus()
    conditions = _set(previous.conditions, AVAILABLE, "Unknown", RECONCILING, STARTING, now=now)
    conditions = _set(conditions, COMPONENT_READY, "Unknown", RECONCILING, STARTING, now=now)
    return DCDStatus(
        observed_generation=previous.observed_generation, conditions=conditions, component=previous.component
    )


def failed(dcd: DynamoComponentDeployment, error: str, *, now: str) -> DCDStatus:
    """§2.6.3: ``Available=False/Reconciling`` naming the error; the rest as it was."""
    previous = dcd.status or DCDStatus()
    message = f"Failed to reconcile DynamoComponentDeployment: {error}"
    conditions = _set(previous.conditions, AVAILABLE, "False", RECONCILING, message, now=now)
    return DCDStatus(
        observed_generation=previous.observed_generation, conditions=conditions, component=previous.component
    )


def refused(dcd: DynamoComponentDeployment, violations: Sequence[str], *, now: str) -> DCDStatus:
    """§2.2 step 3: the checkpoint preflight refused the DCD (``Available=False``, the violations, one
    a line, at the DCD's generation)."""
    previous = dcd.status or DCDStatus()
    conditions = _set(
        previous.conditions,
        AVAILABLE,
        "False",
        INVALID_CHECKPOINT,
        "\n".join(violations),
        now=now,
        generation=dcd.metadata.generation,
    )
    return DCDStatus(
        observed_generation=previous.observed_generation, conditions=conditions, component=previous.component
    )


def has_conditions(dcd: DynamoComponentDeployment) -> bool:
    return bool(dcd.status is not None and dcd.status.conditions)


# Events on the DCD (§2.7).


def reconciling() -> EventRecord:
    return EventRecord("Normal", "Reconciling", "Reconcile", STARTING)


def all_updated() -> EventRecord:
    return EventRecord("Normal", "Update", "Update", "All resources updated!")


def reconcile_failed(error: str) -> EventRecord:
    return EventRecord(
        "Warning", "ReconcileError", "Reconcile", f"Failed to reconcile DynamoComponentDeployment: {error}"
    )
