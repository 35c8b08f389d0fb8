"""How a program's outcome becomes the DGD status (dgd-domain §6.2–§6.3, §14.1), for both pathways.

Every function here takes the status being built and returns a new one; timestamps come in as
RFC 3339 strings, so the projections are pure. A program starts from the stored status
(``starting_status``), applies ``fail`` when it ends with an error or ``apply_reconcile_result``
when it ends without one; only the DGD actor writes the result.

Condition semantics are Kubernetes' ``SetStatusCondition``: a condition keeps its place and its
``lastTransitionTime`` until its ``status`` flips; reason, message and observedGeneration always
follow the latest projection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec
from msgspec import structs

from dgd.domain.rollout import FAILED, rollout_active
from dgd.messages.dgd import ComponentReplicaStatus, DGDStatus
from dgd.messages.meta import Condition, ConditionStatus

READY = "Ready"
#: The longest condition message the API server accepts (``metav1.Condition``).
MAX_MESSAGE = 32768

# Ready reasons of a failed program (§6.2) and of a DGD that fails validation (our own).
INVALID_SPEC = "invalid_spec"
FAILED_TO_RECONCILE = "failed_to_reconcile_the_resources"
FAILED_TO_HANDLE_FINALIZER = "failed_to_handle_the_finalizer"
UNSUPPORTED_WORKLOAD_PROVIDER = "unsupported_workload_provider"
PROVIDER_UNAVAILABLE = "selected_workload_provider_unavailable"
FAILED_TO_MIGRATE_WORKER_HASH = "failed_to_migrate_worker_hash"
FAILED_TO_INITIALIZE_WORKER_HASH = "failed_to_initialize_worker_hash"
NO_MULTINODE_ORCHESTRATOR = "no_multinode_orchestrator_available"
ROLLING_UPDATE_FAILED = "rolling_update_failed"

# Ready reasons of a program that finished (§6.3).
ALL_READY = "all_resources_are_ready"
SOME_NOT_READY = "some_resources_are_not_ready"
ROLLING_UPDATE_IN_PROGRESS = "rolling_update_in_progress"


class Failure(Exception):
    """A classified program failure: the Ready reason it projects, and whether a retry can help.

    ``terminal`` failures (an unsupported value, a disabled provider, a spec this release cannot
    render) wait for the next spec change instead of being retried with backoff.
    """

    def __init__(self, reason: str, message: str, *, terminal: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.terminal = terminal


def starting_status(status: DGDStatus | None) -> DGDStatus:
    """The status a reconcile starts from: the stored one, or the CRD default before the first write."""
    return status if status is not None else DGDStatus(state="initializing")


def condition_of(status: DGDStatus | None, kind: str) -> Condition | None:
    """The condition of type ``kind``, if the status has one."""
    for condition in (status.conditions if status is not None else None) or ():
        if condition.type == kind:
            return condition
    return None


def condition_at(
    type: str, status: ConditionStatus, reason: str, message: str, *, now: str, generation: int | None = None
) -> Condition:
    """A condition as observed ``now`` (for ``generation``, when it records one); upserted, it keeps
    an earlier transition time while its status does not flip."""
    return Condition(
        type=type,
        status=status,
        last_transition_time=now,
        reason=reason,
        message=message,
        observed_generation=generation,
    )


def upsert_condition(conditions: Sequence[Condition] | None, condition: Condition) -> list[Condition]:
    """``conditions`` with ``condition`` set (its transition time kept unless its status flips)."""
    out: list[Condition] = []
    found = False
    for existing in conditions or ():
        if existing.type != condition.type:
            out.append(existing)
            continue
        found = True
        since = existing.last_transition_time if existing.status == condition.status else None
        out.append(condition if since is None else structs.replace(condition, last_transition_time=since))
    if not found:
        out.append(condition)
    return out


def with_condition(
    status: DGDStatus,
    kind: str,
    value: ConditionStatus,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: str,
) -> DGDStatus:
    """``status`` with the condition ``kind`` upserted."""
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1] + "…"
    condition = condition_at(kind, value, reason, message, now=now, generation=generation)
    return structs.replace(status, conditions=upsert_condition(status.conditions, condition))


def fail(status: DGDStatus, *, generation: int | None, reason: str, message: str, now: str) -> DGDStatus:
    """§6.2: ``failed``, ``Ready=False`` with the reason and message; observedGeneration stays."""
    failed = structs.replace(status, state="failed")
    return with_condition(failed, READY, "False", reason, message, generation=generation, now=now)


class ResourceReadiness(msgspec.Struct, frozen=True):
    """One resource a program waited for: ready or why not, and the component statuses it reports."""

    name: str
    ready: bool
    reason: str = ""
    components: Mapping[str, ComponentReplicaStatus] = msgspec.field(default_factory=dict)


class ReconcileResult(msgspec.Struct, frozen=True):
    """A provider-neutral outcome of a finished program (§6.3 input)."""

    state: Literal["pending", "successful"]
    reason: str
    message: str
    components: Mapping[str, ComponentReplicaStatus] = msgspec.field(default_factory=dict)


def check_resources_readiness(resources: Sequence[ResourceReadiness]) -> ReconcileResult:
    """Aggregate readiness: all ready is ``successful``; otherwise every reason, by resource name."""
    components: dict[str, ComponentReplicaStatus] = {}
    not_ready: list[str] = []
    for resource in sorted(resources, key=lambda r: r.name):
        components.update(resource.components)
        if not resource.ready:
            not_ready.append(f"{resource.name}: {resource.reason}")
    if not not_ready:
        return ReconcileResult("successful", ALL_READY, "All resources are ready", components)
    return ReconcileResult(
        "pending", SOME_NOT_READY, f"Resources not ready: {'; '.join(not_ready)}", components
    )


def apply_reconcile_result(
    status: DGDStatus,
    result: ReconcileResult,
    *,
    generation: int | None,
    now: str,
    rollout_failure: str | None = None,
) -> DGDStatus:
    """§6.3: state, components (replaced), Ready, and observedGeneration advanced.

    A rollout that passed its progress deadline (``rollingUpdate.phase`` ``Failed``, our addition)
    makes the DGD ``failed`` with ``Ready=False/rolling_update_failed`` and ``rollout_failure`` as the
    message."""
    # A running rollout holds the DGD pending; past its progress deadline it reports it failed.
    failed = status.rolling_update is not None and status.rolling_update.phase == FAILED
    rolling = rollout_active(status.rolling_update) and not failed
    state = "pending" if rolling else ("failed" if failed else result.state)
    components = dict(sorted(result.components.items())) or None
    projected = structs.replace(status, state=state, components=components, observed_generation=generation)
    if failed:
        message = rollout_failure or "Rolling update made no progress"
        return with_condition(
            projected, READY, "False", ROLLING_UPDATE_FAILED, message, generation=generation, now=now
        )
    if rolling:
        return with_condition(
            projected, READY, "False", ROLLING_UPDATE_IN_PROGRESS, "Rolling update in progress",
            generation=generation, now=now,
        )  # fmt: skip
    ready: ConditionStatus = "True" if result.state == "successful" else "False"
    return with_condition(
        projected, READY, ready, result.reason, result.message, generation=generation, now=now
    )
