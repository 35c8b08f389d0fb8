"""One rule of when a rollout runs (``rollout_active``), and every caller that waits for one.

``Failed`` is a rollout past its progress deadline that keeps being driven and goes back to
``InProgress`` by itself: it runs, for the restart logic and admission as for the rollout itself.
"""

from __future__ import annotations

import pytest

from dgd.domain.projection import ReconcileResult, apply_reconcile_result
from dgd.domain.restart import restart_status
from dgd.domain.rollout import rollout_active
from dgd.messages.dgd import DGDStatus, Restart, RestartStatus, RollingUpdatePhase, RollingUpdateStatus

T0 = "2026-01-01T00:00:00Z"
READY = ReconcileResult("successful", "all_resources_are_ready", "All resources are ready")


def test_a_rollout_runs_from_pending_until_completed_failed_included() -> None:
    running: list[RollingUpdatePhase] = ["Pending", "InProgress", "Failed"]
    resting: list[RollingUpdatePhase] = ["", "Completed"]
    assert [rollout_active(RollingUpdateStatus(phase=p)) for p in running] == [True, True, True]
    assert [rollout_active(RollingUpdateStatus(phase=p)) for p in resting] == [False, False]
    assert rollout_active(RollingUpdateStatus()) is False
    assert rollout_active(None) is False


@pytest.mark.parametrize("phase", ["Pending", "InProgress", "Failed"])
def test_a_restart_requested_while_a_rollout_runs_is_superseded(phase: RollingUpdatePhase) -> None:
    # given a new restart request while the rollout is in ``phase``
    rolling = RollingUpdateStatus(phase=phase)
    # when the restart status is resolved
    status = restart_status(Restart(id="r1"), None, rolling, ["Frontend", "Worker"], {"Worker"})
    # then the rollout supersedes it (a Failed one would turn InProgress again under a running restart)
    assert status == RestartStatus(observed_id="r1", phase="Superseded")


def test_a_restart_requested_after_a_rollout_completed_restarts() -> None:
    rolling = RollingUpdateStatus(phase="Completed")
    status = restart_status(Restart(id="r1"), None, rolling, ["Frontend", "Worker"], {"Worker"})
    assert status == RestartStatus(observed_id="r1", phase="Restarting", in_progress=["Frontend"])


@pytest.mark.parametrize(
    ("phase", "state", "reason"),
    [
        ("Pending", "pending", "rolling_update_in_progress"),
        ("InProgress", "pending", "rolling_update_in_progress"),
        ("Failed", "failed", "rolling_update_failed"),
        ("Completed", "successful", "all_resources_are_ready"),
    ],
)
def test_a_running_rollout_holds_the_dgd_back_and_a_failed_one_says_so(
    phase: RollingUpdatePhase, state: str, reason: str
) -> None:
    status = DGDStatus(state="pending", rolling_update=RollingUpdateStatus(phase=phase))
    projected = apply_reconcile_result(status, READY, generation=2, now=T0)
    assert projected.conditions is not None
    assert (projected.state, projected.conditions[0].reason) == (state, reason)
