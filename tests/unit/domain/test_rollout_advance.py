"""The rollout state machine advance() (dgd-domain §12.3, §12.8) with our departures from the spec: a rollout
completes only once the old worker DCDs are gone, a revert mid-rollout is rolled like any other, and a
rollout without progress for the deadline becomes Failed and keeps being driven.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgd.domain.events import EventRecord
from dgd.domain.rollout import Hashes, Step
from dgd.messages.dgd import RollingUpdateStatus
from tests.unit.domain.rollout_fixtures import (
    NEW_HASH,
    OLD_HASH,
    PROPERTY,
    RECREATE,
    T0,
    T1,
    T2,
    V1,
    V2,
    dcd,
    generations,
    in_progress,
    midway,
    step,
    updated,
)

# advance(): the state machine (§12.3, §12.8).


def test_a_triggered_rollout_starts_pending_with_a_start_time_and_an_event() -> None:
    for status in (None, RollingUpdateStatus(), RollingUpdateStatus(phase="")):
        started = step(status, [midway("worker")], now=T1)
        assert started.status == RollingUpdateStatus(phase="Pending", start_time=T1)
        assert started.events == (
            EventRecord(
                "Normal",
                "RollingUpdateStarted",
                "Update",
                f"Starting rolling update to worker hash {NEW_HASH}",
            ),
        )
        assert (started.annotations, started.delete, started.progress, started.failure) == (
            {},
            (),
            None,
            None,
        )


def test_a_pending_rollout_moves_to_in_progress_and_does_nothing_else() -> None:
    pending = RollingUpdateStatus(phase="Pending", start_time=T0)
    moved = step(pending, [updated("worker")])
    assert moved.status == RollingUpdateStatus(phase="InProgress", start_time=T0)
    assert (moved.annotations, moved.delete, moved.events, moved.failure) == ({}, (), (), None)


def test_a_rollout_in_progress_lists_its_updated_components_sorted() -> None:
    # given three components of which two are updated (given out of order)
    components = [updated("prefill"), midway("agg"), updated("decode")]
    continued = step(in_progress(), components)
    assert continued.status == in_progress(["decode", "prefill"])
    assert (continued.annotations, continued.delete, continued.events) == ({}, (), ())
    # and none updated leaves the list unset
    assert step(in_progress(), [midway("agg")]).status == in_progress()


def test_an_updated_rollout_deletes_the_old_dcds_not_yet_deleting_and_stays_in_progress() -> None:
    # given every component updated, with old DCDs at 0 ready, one of them already being deleted
    prefill_old = [
        dcd("g-prefill-a", component="prefill", replicas=0),
        dcd("g-prefill-b", component="prefill", replicas=0, deleting=True),
    ]
    decode_old = [dcd("g-decode-a", component="decode", replicas=0)]
    components = [updated("prefill", old=prefill_old), updated("decode", old=decode_old)]
    deleting = step(in_progress(), components)
    assert deleting.status == in_progress(["decode", "prefill"])
    assert deleting.delete == ("g-prefill-a", "g-decode-a")
    assert (deleting.annotations, deleting.events) == ({}, ())


def test_an_updated_rollout_without_old_dcds_completes_and_records_the_generation() -> None:
    # given every worker component updated and the old generation gone
    components = [updated("prefill"), updated("decode")]
    done = step(in_progress(["decode"]), components, current=Hashes("0123abcd", OLD_HASH), now=T2)
    assert done.status == RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T2, updated_components=["decode", "prefill"]
    )
    assert done.annotations == {V2: NEW_HASH, V1: None}
    assert done.events == (
        EventRecord(
            "Normal", "RollingUpdateCompleted", "Update", f"Rolling update completed, worker hash {NEW_HASH}"
        ),
    )
    assert done.delete == ()


def test_a_reverted_rollout_to_a_v1_named_generation_completes_keeping_the_v1_name() -> None:
    # given a v1+v2 DGD whose rollout was reverted: the recorded v2 is desired again, DCDs named with v1
    current = Hashes("0123abcd", NEW_HASH)
    new = dcd("g-worker-0123abcd", hash="0123abcd", replicas=2)
    done = step(in_progress(), [generations(new=new)], current=current, new_hash="0123abcd")
    assert done.status is not None and done.status.phase == "Completed"
    assert done.annotations == {V2: NEW_HASH}
    assert done.events[0].note == "Rolling update completed, worker hash 0123abcd"


def test_a_reverted_rollout_is_not_completed_while_the_abandoned_generation_still_serves() -> None:
    # given the recorded hash is desired again but the generation being abandoned still has ready pods
    current = Hashes(v2=NEW_HASH)
    reverted = step(in_progress(), [midway("worker", new_ready=2, old_ready=1)], current=current)
    assert reverted.status == in_progress()
    assert (reverted.annotations, reverted.delete, reverted.events) == ({}, (), ())


def test_a_recreate_rollout_waits_for_the_old_pods_to_terminate_before_deleting_or_completing() -> None:
    # given a Recreate component updated by readiness, but its old pods still terminating
    old = [dcd("g-worker-a", replicas=0, ready=0, actual=0)]
    new = dcd(f"g-worker-{NEW_HASH}", hash=NEW_HASH, replicas=2)
    waiting = step(in_progress(), [generations(new=new, old=old, policy=RECREATE, drained=False)])
    assert waiting.status == in_progress(["worker"])
    assert (waiting.annotations, waiting.delete, waiting.events) == ({}, (), ())
    # when drained, the old DCD is deleted
    drained_step = step(in_progress(), [generations(new=new, old=old, policy=RECREATE, drained=True)])
    assert drained_step.delete == ("g-worker-a",)


def test_a_completed_rollout_whose_generation_is_complete_only_repairs_a_stale_annotation() -> None:
    completed = RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T1, updated_components=["worker"]
    )
    repaired = step(completed, [updated("worker")], current=Hashes(v2=OLD_HASH), now=T2)
    assert repaired == Step(status=completed, annotations={V2: NEW_HASH, V1: None})


def test_a_completed_rollout_with_a_new_worker_spec_starts_a_new_rollout() -> None:
    completed = RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T1, updated_components=["worker"]
    )
    restarted = step(completed, [midway("worker")], now=T2)
    assert restarted.status == RollingUpdateStatus(phase="Pending", start_time=T2)
    assert [event.reason for event in restarted.events] == ["RollingUpdateStarted"]
    assert restarted.annotations == {}


def test_a_completed_rollout_whose_generation_is_ready_beside_old_dcds_resumes_to_delete_them() -> None:
    completed = RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T1, updated_components=["worker"]
    )
    old = [dcd("g-worker-a", replicas=0)]
    resumed = step(completed, [updated("worker", old=old)])
    assert resumed.status is not None and resumed.status.phase == "InProgress"
    assert resumed.delete == ("g-worker-a",)
    assert (resumed.annotations, resumed.events) == ({}, ())


def test_a_completed_rollout_without_a_trigger_is_left_alone() -> None:
    completed = RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T1, updated_components=["worker"]
    )
    assert step(completed, [midway("worker")], current=Hashes(v2=NEW_HASH)) == Step(status=completed)


# advance(): the progress deadline (our departure: upstream never sets Failed).


def test_a_rollout_tells_when_its_progress_deadline_is_due() -> None:
    components = [midway("agg")]
    first = step(in_progress(), components, clock=1000.0, deadline=600.0)
    assert first.wake == 600.0
    later = step(in_progress(), components, clock=1450.0, progress=first, deadline=600.0)
    assert later.status == in_progress()
    assert later.wake == 150.0
    assert later.events == ()


def test_the_progress_deadline_counts_from_the_reconcile_that_moved_the_rollout_in_progress() -> None:
    # given a pending rollout moved in progress at 1000 s, due back at the deadline
    components = [midway("agg")]
    moved = step(RollingUpdateStatus(phase="Pending", start_time=T0), components, clock=1000.0)
    assert moved.wake == 600.0
    # when the next reconcile, at the deadline, sees nothing changed since
    due = step(moved.status, components, clock=1600.0, progress=moved)
    # then the rollout failed: no later reconcile was needed to start the clock
    assert due.status is not None and due.status.phase == "Failed"
    assert [event.reason for event in due.events] == ["RollingUpdateFailed"]


def test_a_rollout_without_progress_for_the_deadline_fails_naming_what_each_component_waits_for() -> None:
    # given decode short of new replicas, prefill with an old replica still ready, agg done
    components = [
        midway("decode", desired=2, new_ready=1, old_ready=2),
        midway("prefill", desired=2, new_ready=2, old_ready=1),
        updated("agg"),
    ]
    first = step(in_progress(["agg"]), components, clock=1000.0)
    # when nothing changes for the deadline
    failed = step(in_progress(["agg"]), components, clock=1600.0, progress=first)
    # then the rollout failed with a warning naming each stuck component and what it waits for
    assert failed.status == RollingUpdateStatus(phase="Failed", start_time=T0, updated_components=["agg"])
    assert len(failed.events) == 1
    event = failed.events[0]
    assert (event.type, event.reason) == ("Warning", "RollingUpdateFailed")
    assert event.note.startswith(f"Rolling update to worker hash {NEW_HASH} made no progress for 10m0s")
    assert "decode: 1/2 new replicas ready, 2 old still serving" in event.note
    assert "prefill: 1 old replicas still ready" in event.note
    assert "agg" not in event.note
    assert failed.failure == event.note


def test_a_failed_rollout_that_still_makes_no_progress_stays_failed_without_repeating_the_warning() -> None:
    components = [midway("agg")]
    first = step(in_progress(), components, clock=1000.0)
    failed = step(in_progress(), components, clock=1600.0, progress=first)
    assert failed.status is not None
    still = step(failed.status, components, clock=2000.0, progress=failed)
    assert still.status == failed.status
    assert still.events == ()
    assert still.failure is not None and "agg: 1/2 new replicas ready" in still.failure


def test_a_failed_rollout_resumes_when_the_observation_changes() -> None:
    first = step(in_progress(), [midway("agg", new_ready=1)], clock=1000.0)
    failed = step(in_progress(), [midway("agg", new_ready=1)], clock=1600.0, progress=first)
    assert failed.status is not None and failed.status.phase == "Failed"
    # when another new replica becomes ready
    resumed = step(failed.status, [midway("agg", new_ready=2)], clock=1700.0, progress=failed)
    # then the rollout is in progress again, with a fresh deadline
    assert resumed.status == in_progress()
    assert (resumed.failure, resumed.events, resumed.wake) == (None, (), 600.0)


def test_a_failed_rollout_completes_once_its_generation_is_complete() -> None:
    failed = RollingUpdateStatus(phase="Failed", start_time=T0)
    done = step(failed, [updated("agg")], now=T2)
    assert done.status == RollingUpdateStatus(
        phase="Completed", start_time=T0, end_time=T2, updated_components=["agg"]
    )
    assert [event.reason for event in done.events] == ["RollingUpdateCompleted"]


def test_a_failed_rollout_whose_new_generation_does_not_exist_starts_afresh() -> None:
    # given a failed rollout, and a newer worker spec whose generation has no DCD yet
    failed = RollingUpdateStatus(phase="Failed", start_time=T0)
    old = [dcd("g-worker-a", replicas=2)]
    fresh = step(failed, [generations(new=None, old=old)], now=T2)
    assert fresh.status == RollingUpdateStatus(phase="Pending", start_time=T2)
    assert [(event.reason, event.note) for event in fresh.events] == [
        ("RollingUpdateStarted", f"Starting rolling update to worker hash {NEW_HASH}")
    ]
    assert fresh.failure is None


def test_without_a_deadline_a_rollout_never_fails() -> None:
    components = [midway("agg")]
    first = step(in_progress(), components, clock=0.0, deadline=None)
    much_later = step(in_progress(), components, clock=10.0**9, progress=first, deadline=None)
    assert much_later.status == in_progress()
    assert (much_later.failure, much_later.events, much_later.wake) == (None, (), None)


def test_the_deadline_counts_from_the_last_change_not_from_the_start() -> None:
    first = step(in_progress(), [midway("agg", new_ready=0)], clock=1000.0)
    # given progress at 1500
    moved = step(in_progress(), [midway("agg", new_ready=1)], clock=1500.0, progress=first)
    # then at 1600 (600 s after the start, 100 s after the change) it has not failed
    later = step(in_progress(), [midway("agg", new_ready=1)], clock=1600.0, progress=moved)
    assert later.status == in_progress()
    assert later.wake == 500.0


@PROPERTY
@given(
    clocks=st.lists(st.floats(0, 2000, allow_nan=False), min_size=1, max_size=6).map(sorted),
    readies=st.lists(st.integers(0, 1), min_size=6, max_size=6),
)
def test_a_rollout_fails_exactly_when_it_has_not_changed_for_the_deadline(
    clocks: list[float], readies: list[int]
) -> None:
    """Driving the machine with observations that change or not at increasing clocks: it is Failed
    after a reconcile iff some observation stayed unchanged for ≥ deadline (and it was not resumed by a
    later change); ``wake`` is the time left until the deadline while it is in progress."""
    deadline = 300.0
    status: RollingUpdateStatus | None = in_progress()
    previous: Step | None = None
    since: float | None = None
    seen: int | None = None
    failed = False
    for clock, ready in zip(clocks, readies, strict=False):
        current = step(
            status, [midway("agg", new_ready=ready)], clock=clock, progress=previous, deadline=deadline
        )
        if ready != seen or since is None:
            since, seen, failed = clock, ready, False
        elif clock - since >= deadline:
            failed = True
        assert current.status is not None
        assert current.status.phase == ("Failed" if failed else "InProgress")
        assert current.wake == (None if failed else pytest.approx(since + deadline - clock))
        status, previous = current.status, current


def test_starting_a_rollout_drops_the_last_clock_and_moving_it_in_progress_starts_a_new_one() -> None:
    # given an earlier rollout's clock, long past its deadline
    stale = step(in_progress(), [midway("agg")], clock=0.0)
    # when a new rollout starts, then moves in progress at 5000 s
    started = step(None, [midway("agg")], clock=4000.0, progress=stale)
    moved = step(started.status, [midway("agg")], clock=5000.0, progress=started)
    # then the deadline counts from 5000 s, nothing of the earlier one carried over
    assert started.progress is None
    assert moved.progress is not None and moved.progress.since == 5000.0
    first = step(moved.status, [midway("agg")], clock=5300.0, progress=moved)
    assert first.wake == 300.0


def test_components_are_listed_sorted_whatever_their_order() -> None:
    for order in itertools.permutations(
        [updated("b", old=[dcd("g-b-a", component="b", replicas=0)]), updated("a"), updated("c")]
    ):
        continued = step(in_progress(), list(order))
        assert continued.status == in_progress(["a", "b", "c"])


def test_a_rollout_whose_old_dcds_are_never_deleted_fails_at_the_deadline() -> None:
    """docs/decisions.md: a change in the number of old generations is progress, and a rollout with no
    progress for the deadline is Failed; the deletion of the old DCDs is part of the rollout (it stays
    InProgress until they are gone), so a deletion that never finishes must fail it too."""
    # given every component updated and its old DCD's deletion requested but never finishing
    components = [updated("agg", old=[dcd("g-agg-a", component="agg", replicas=0, ready=0, deleting=True)])]
    first = step(in_progress(["agg"]), components, clock=1000.0)
    # when nothing changes for the deadline
    stuck = step(in_progress(["agg"]), components, clock=1600.0, progress=first)
    # then the rollout failed, saying what it waits for
    assert stuck.status is not None and stuck.status.phase == "Failed"
    assert (
        stuck.failure is not None
        and "agg: old DynamoComponentDeployments still being deleted" in stuck.failure
    )


def test_a_failed_rollout_that_becomes_updated_resumes_while_its_old_dcds_are_deleted() -> None:
    """docs/decisions.md: any later progress resumes a failed rollout (InProgress, no new event)."""
    # given a rollout failed while its new replicas were not ready
    first = step(in_progress(), [midway("agg", new_ready=0)], clock=1000.0)
    failed = step(in_progress(), [midway("agg", new_ready=0)], clock=1600.0, progress=first)
    assert failed.status is not None and failed.status.phase == "Failed"
    # when the new generation becomes ready and the old one stops serving (visible progress)
    old = [dcd("g-agg-a", component="agg", replicas=0, ready=0)]
    resumed = step(failed.status, [updated("agg", old=old)], clock=1700.0, progress=failed)
    # then the old DCD is deleted and the rollout is in progress again, not failed
    assert resumed.delete == ("g-agg-a",)
    assert resumed.status == in_progress(["agg"])
