"""How a rollout spreads replicas over old DCDs, decides a component updated or drained, and merges their
statuses (dgd-domain §12.3, §12.5, §12.6).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dgd.domain.rollout_replicas import (
    WorkerDCD,
    distribute,
    drained,
    is_updated,
    merged_status,
)
from dgd.messages.dgd import ComponentReplicaStatus
from tests.unit.domain.rollout_fixtures import (
    NEW_HASH,
    PROPERTY,
    T0,
    T1,
    T2,
    dcd,
    generations,
    status_of,
)

# distribute() (§12.5).


def test_the_old_target_is_taken_from_the_oldest_generation_first() -> None:
    old = [
        dcd("g-w-c", replicas=2, created="2026-01-03T00:00:00Z"),
        dcd("g-w-a", replicas=2, created="2026-01-01T00:00:00Z"),
        dcd("g-w-b", replicas=2, created="2026-01-02T00:00:00Z"),
    ]
    assert distribute(3, old) == {"g-w-a": 0, "g-w-b": 1, "g-w-c": 2}


def test_generations_created_at_the_same_time_are_ordered_by_name() -> None:
    old = [dcd("g-w-b", replicas=2), dcd("g-w-a", replicas=2)]
    assert distribute(1, old) == {"g-w-a": 0, "g-w-b": 1}


def test_unavailable_old_replicas_go_first_and_come_back_newest_first() -> None:
    # given three old DCDs with spec 3 and one available replica each
    old = [
        dcd("g-w-a", replicas=3, available=1, created="2026-01-01T00:00:00Z"),
        dcd("g-w-b", replicas=3, available=1, created="2026-01-02T00:00:00Z"),
        dcd("g-w-c", replicas=3, available=1, created="2026-01-03T00:00:00Z"),
    ]
    # then the available ones are kept, and the rest is added to the newest first
    assert distribute(3, old) == {"g-w-a": 1, "g-w-b": 1, "g-w-c": 1}
    assert distribute(5, old) == {"g-w-a": 1, "g-w-b": 1, "g-w-c": 3}
    assert distribute(6, old) == {"g-w-a": 1, "g-w-b": 2, "g-w-c": 3}
    # and a target above every spec gives each DCD its spec, no more
    assert distribute(20, old) == {"g-w-a": 3, "g-w-b": 3, "g-w-c": 3}


def test_a_dcd_with_more_available_than_its_spec_keeps_only_its_spec() -> None:
    old = [dcd("g-w-a", replicas=1, available=4)]
    assert distribute(3, old) == {"g-w-a": 1}


_OLD_DCDS = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 8), st.integers(1, 3)), min_size=0, max_size=5
).map(
    lambda rows: [
        dcd(f"g-w-{i}", replicas=spec, available=available, created=f"2026-01-0{day}T00:00:00Z")
        for i, (spec, available, day) in enumerate(rows)
    ]
)


@PROPERTY
@given(old=_OLD_DCDS, target=st.integers(0, 35))
def test_distributing_keeps_available_replicas_removes_oldest_first_and_adds_newest_first(
    old: list[WorkerDCD], target: int
) -> None:
    """Each share is within [0, spec]; the shares sum to the target, or to Σspec when the target is
    larger; the available replicas kept are min(target, Σmin(spec, available)); when replicas are
    removed, a DCD loses some only once every older one is at 0; when added, a DCD gains some only once
    every newer one is at its spec."""
    shares = distribute(target, old)

    assert set(shares) == {o.name for o in old}
    assert all(0 <= shares[o.name] <= o.replicas for o in old)
    assert sum(shares.values()) == min(target, sum(o.replicas for o in old))
    start = {o.name: min(o.replicas, o.available) for o in old}
    assert sum(min(shares[name], start[name]) for name in start) == min(target, sum(start.values()))
    ordered = sorted(old, key=lambda o: (o.created, o.name))
    for i, o in enumerate(ordered):
        if shares[o.name] < start[o.name]:
            assert all(shares[older.name] == 0 for older in ordered[:i])
        if shares[o.name] > start[o.name]:
            assert all(shares[newer.name] == newer.replicas for newer in ordered[i + 1 :])
    if target <= sum(start.values()):
        assert all(shares[name] <= start[name] for name in start)
    else:
        assert all(shares[name] >= start[name] for name in start)


# is_updated() and drained() (§12.3).


def test_a_component_is_updated_once_the_new_generation_is_ready_and_the_old_serves_nothing() -> None:
    new = dcd("g-w-new", hash=NEW_HASH, replicas=2)
    assert is_updated(generations(desired=2, new=new))
    assert is_updated(generations(desired=2, new=new, old=[dcd("g-w-old", replicas=1, ready=0)]))


def test_a_component_is_not_updated_while_the_new_generation_is_short_or_the_old_still_ready() -> None:
    short = dcd("g-w-new", hash=NEW_HASH, replicas=2, ready=1)
    assert not is_updated(generations(desired=2, new=short))
    assert not is_updated(generations(desired=2, old=[dcd("g-w-old", replicas=0, ready=0)]))
    ready = dcd("g-w-new", hash=NEW_HASH, replicas=2)
    assert not is_updated(generations(desired=2, new=ready, old=[dcd("g-w-old", replicas=0, ready=1)]))


def test_a_component_scaled_to_zero_is_updated_once_its_old_generation_serves_nothing() -> None:
    assert is_updated(generations(desired=0, old=[dcd("g-w-old", replicas=0)]))
    assert not is_updated(generations(desired=0, old=[dcd("g-w-old", replicas=1)]))


def _stopped(name: str) -> WorkerDCD:
    return dcd(name, replicas=0)


def test_the_recreate_barrier_is_drained_once_every_old_dcd_is_stopped_and_its_pods_terminal() -> None:
    old = [_stopped("g-w-a"), _stopped("g-w-b")]
    assert drained(old, [("g-w-a", True), ("g-w-b", True)])
    assert drained(old, [])
    assert drained([], [("g-w-a", False)])


def test_the_recreate_barrier_waits_for_every_old_dcd_to_be_scaled_processed_and_reporting_none() -> None:
    assert not drained([_stopped("g-w-a"), dcd("g-w-b", replicas=1, ready=0, available=0, actual=0)], [])
    assert not drained([dcd("g-w-a", replicas=0, processed=False)], [])
    assert not drained([dcd("g-w-a", replicas=0, actual=1)], [])


def test_the_recreate_barrier_waits_for_old_pods_but_not_for_pods_of_other_dcds() -> None:
    old = [_stopped("g-w-a"), _stopped("g-w-b")]
    assert not drained(old, [("g-w-a", True), ("g-w-b", False)])
    assert drained(old, [("g-w-a", True), (f"g-w-{NEW_HASH}", False), ("g-frontend", False)])


# merged_status() (§12.6).


def test_old_statuses_are_summed_into_the_new_one_with_only_new_replicas_counted_as_updated() -> None:
    new = status_of(["g-w-new"], replicas=1, namespace="ns-new", updated=1)
    old = [
        dcd("g-w-b", replicas=1, created=T1, status=status_of(["g-w-b"], replicas=1, namespace="ns-b")),
        dcd("g-w-a", replicas=2, created=T0, status=status_of(["g-w-a"], replicas=2, namespace="ns-a")),
    ]
    merged = merged_status(new, old, {"g-w-a": 2, "g-w-b": 1})
    assert merged == ComponentReplicaStatus(
        component_kind="Deployment",
        replicas=4,
        updated_replicas=1,
        component_names=["g-w-a", "g-w-b", "g-w-new"],
        runtime_namespace="ns-b",
        ready_replicas=4,
        available_replicas=4,
    )


def test_the_runtime_namespace_is_the_newest_old_one_still_targeted_else_the_newest() -> None:
    new = status_of(["g-w-new"], replicas=2, namespace="ns-new", updated=2)
    old = [
        dcd("g-w-a", created=T0, status=status_of(["g-w-a"], replicas=1, namespace="ns-a")),
        dcd("g-w-b", created=T1, status=status_of(["g-w-b"], replicas=1, namespace="ns-b")),
        dcd("g-w-c", created=T2, status=status_of(["g-w-c"], replicas=0, namespace="ns-c")),
    ]
    # given the newest old DCD no longer targeted, the next newer one that is provides the namespace
    merged = merged_status(new, old, {"g-w-a": 1, "g-w-b": 1, "g-w-c": 0})
    assert merged is not None and merged.runtime_namespace == "ns-b"
    # given no old DCD targeted above 0, the newest old one does
    merged = merged_status(new, old, {})
    assert merged is not None and merged.runtime_namespace == "ns-c"


def test_a_component_with_only_old_dcds_has_no_updated_replicas() -> None:
    old = [
        dcd("g-w-b", created=T1, status=status_of(["g-w-b"], replicas=1, namespace="ns-b", updated=1)),
        dcd("g-w-a", created=T0, status=status_of(["g-w-a"], replicas=3, namespace="ns-a", updated=3)),
    ]
    merged = merged_status(None, old, {"g-w-a": 3})
    assert merged == ComponentReplicaStatus(
        component_kind="Deployment",
        replicas=4,
        updated_replicas=0,
        component_names=["g-w-a", "g-w-b"],
        runtime_namespace="ns-a",
        ready_replicas=4,
        available_replicas=4,
    )


def test_without_old_statuses_the_new_status_is_unchanged() -> None:
    new = status_of(["g-w-new"], replicas=2, namespace="ns-new", updated=2)
    assert merged_status(new, [], {}) == new
    assert merged_status(new, [dcd("g-w-a", status=None)], {"g-w-a": 1}) == new
    assert merged_status(None, [], {}) is None
