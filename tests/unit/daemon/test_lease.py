"""Leader election decisions: pure functions of what a candidate saw and when (its own clock)."""

from __future__ import annotations

from dgd.daemon.lease import (
    Follow,
    LeaseRecord,
    LeaseTiming,
    Observed,
    Write,
    decide,
    lease_object,
    observe,
    released,
    renewal_lost,
)

T0 = "2026-01-01T00:00:00.000000Z"
T1 = "2026-01-01T00:00:05.000000Z"


def test_a_candidate_that_finds_no_lease_creates_one_holding_it() -> None:
    # given no lease at all
    # when candidate a decides
    decision = decide(None, identity="a", now=0.0, stamp=T0, duration_seconds=15)

    # then it creates a lease it holds, acquired and renewed now, with no transitions yet
    assert decision == Write(LeaseRecord("a", 15, T0, T0, 0), None)


def test_a_valid_lease_of_another_holder_is_followed_until_it_expires_on_our_clock() -> None:
    # given b's lease first seen by a at time 100 (its own clock)
    seen = observe(None, LeaseRecord("b", 15, T0, T0, 3), "7", 100.0)

    # when a decides before and at the end of the lease duration
    before = decide(seen, identity="a", now=114.9, stamp=T1, duration_seconds=15)
    after = decide(
        observe(seen, seen.record, "7", 115.0), identity="a", now=115.0, stamp=T1, duration_seconds=15
    )

    # then it follows b until then, and takes the lease over at the expiry with one more transition
    assert before == Follow("b", 115.0)
    assert after == Write(LeaseRecord("a", 15, T1, T1, 4), "7")


def test_a_renewed_lease_starts_its_duration_again_when_the_candidate_sees_the_change() -> None:
    # given b's lease seen at 100, then seen renewed at 110
    seen = observe(None, LeaseRecord("b", 15, T0, T0, 0), "7", 100.0)
    renewed = observe(seen, LeaseRecord("b", 15, T0, T1, 0), "8", 110.0)

    # when a decides at 120 (past the first sighting's expiry)
    decision = decide(renewed, identity="a", now=120.0, stamp=T1, duration_seconds=15)

    # then the renewal counts from when a saw it: still b's
    assert renewed.since == 110.0
    assert decision == Follow("b", 125.0)


def test_an_unchanged_record_keeps_the_time_it_was_first_seen() -> None:
    # given a record seen at 100
    record = LeaseRecord("b", 15, T0, T0, 0)
    seen = observe(None, record, "7", 100.0)

    # when the same record is read again later
    again = observe(seen, record, "7", 112.0)

    # then it is as old as its first sighting
    assert again.since == 100.0
    assert again.expires == 115.0


def test_the_holder_renews_keeping_its_acquire_time_and_transitions() -> None:
    # given a's own lease, acquired at T0 after two transitions
    seen = Observed(LeaseRecord("a", 15, T0, T0, 2), "9", 100.0)

    # when a decides at its next retry
    decision = decide(seen, identity="a", now=102.0, stamp=T1, duration_seconds=15)

    # then only the renew time changes, written with the version read
    assert decision == Write(LeaseRecord("a", 15, T0, T1, 2), "9")


def test_a_released_lease_is_taken_at_once() -> None:
    # given b released its lease (no holder, one second), just seen by a
    seen = observe(None, released(LeaseRecord("b", 15, T0, T0, 5), T1), "11", 200.0)

    # when a decides right away
    decision = decide(seen, identity="a", now=200.0, stamp=T1, duration_seconds=15)

    # then a takes it, one more transition
    assert seen.record == LeaseRecord("", 1, T1, T1, 5)
    assert decision == Write(LeaseRecord("a", 15, T1, T1, 6), "11")


def test_a_leader_loses_the_lease_once_it_has_not_renewed_for_the_renew_deadline() -> None:
    timing = LeaseTiming(duration=15.0, renew_deadline=10.0, retry_period=2.0)

    # given a last successful renewal at 50
    # then the leader still leads just before 60 and has lost it at 60
    assert not renewal_lost(50.0, 59.99, timing)
    assert renewal_lost(50.0, 60.0, timing)


def test_the_deadline_stops_the_leader_before_a_standby_may_take_over() -> None:
    # given the default timing
    timing = LeaseTiming()

    # then the renew deadline is shorter than the lease, and the durations are consistent
    assert timing.renew_deadline < timing.duration
    assert timing.problems() == []


def test_inconsistent_durations_are_refused_with_a_reason() -> None:
    # given a renew deadline longer than the lease, and a retry period too close to the deadline
    bad = LeaseTiming(duration=5.0, renew_deadline=10.0, retry_period=9.0)

    # then both problems are named
    assert bad.problems() == [
        "the lease duration must be longer than the renew deadline",
        "the renew deadline must be longer than 1.2 times the retry period",
    ]


def test_the_lease_object_is_a_coordination_v1_lease_with_micro_times() -> None:
    # given a record
    record = LeaseRecord("a", 15, T0, T1, 1)

    # when it is written as a replacement of version 12
    lease = lease_object("dynamo-system", "dgd-operator", record, "12")

    # then it has the Lease's fields, and reads back as the same record
    assert lease == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "dgd-operator", "namespace": "dynamo-system", "resourceVersion": "12"},
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "acquireTime": T0,
            "renewTime": T1,
            "leaseTransitions": 1,
        },
    }
    assert LeaseRecord.of(lease) == record
    assert "holderIdentity" not in lease_object("ns", "n", released(record, T1), None)["spec"]
