"""How a program's outcome becomes the DGD status (dgd-domain §6.2–§6.3)."""

from __future__ import annotations

from dgd.domain.projection import (
    ReconcileResult,
    ResourceReadiness,
    apply_reconcile_result,
    check_resources_readiness,
    fail,
    starting_status,
)
from dgd.messages.dgd import ComponentReplicaStatus, DGDStatus, RollingUpdateStatus
from tests.conditions import ready_condition

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def test_failing_keeps_observed_generation_and_sets_ready_false_with_the_reason() -> None:
    status = DGDStatus(state="successful", observed_generation=3)
    failed = fail(status, generation=4, reason="failed_to_reconcile_the_resources", message="boom", now=T0)
    assert failed == DGDStatus(
        state="failed",
        observed_generation=3,
        conditions=[
            ready_condition("False", "failed_to_reconcile_the_resources", "boom", at=T0, generation=4)
        ],
    )


def test_ready_keeps_its_transition_time_until_its_status_flips() -> None:
    # given a pending DGD since T0
    pending = ReconcileResult("pending", "some_resources_are_not_ready", "Resources not ready: a: x")
    first = apply_reconcile_result(starting_status(None), pending, generation=1, now=T0)
    # when it is still pending at T1, with another message, then successful at T1
    still = apply_reconcile_result(
        first, ReconcileResult("pending", "updating", "other"), generation=1, now=T1
    )
    done = apply_reconcile_result(
        still, ReconcileResult("successful", "all_resources_are_ready", "ok"), generation=1, now=T1
    )
    # then the message follows at once, the transition time only on the flip
    assert still.conditions is not None and (
        still.conditions[0].message,
        still.conditions[0].last_transition_time,
    ) == ("other", T0)
    assert done.conditions is not None and done.conditions[0].last_transition_time == T1
    assert (done.state, done.observed_generation) == ("successful", 1)


def test_a_rolling_update_in_progress_forces_pending() -> None:
    status = DGDStatus(state="pending", rolling_update=RollingUpdateStatus(phase="InProgress"))
    projected = apply_reconcile_result(
        status,
        ReconcileResult("successful", "all_resources_are_ready", "All resources are ready"),
        generation=2,
        now=T0,
    )
    assert projected.state == "pending"
    assert projected.conditions is not None
    assert (projected.conditions[0].reason, projected.conditions[0].message) == (
        "rolling_update_in_progress",
        "Rolling update in progress",
    )


def test_readiness_lists_every_not_ready_resource_by_name_and_merges_component_statuses() -> None:
    worker = ComponentReplicaStatus(component_kind="PodClique", replicas=1, updated_replicas=1)
    result = check_resources_readiness(
        [
            ResourceReadiness("svc", True),
            ResourceReadiness("b", False, "late", {"Worker": worker}),
            ResourceReadiness("a", False, "gone"),
        ]
    )
    assert result == ReconcileResult(
        "pending", "some_resources_are_not_ready", "Resources not ready: a: gone; b: late", {"Worker": worker}
    )
