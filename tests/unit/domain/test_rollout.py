"""The managed worker rollout of the Component pathway (dgd-domain §12.1–§12.8), as pure functions.

Departures from the spec that these tests hold the module to (its docstring): a rollout completes only
once the old worker DCDs are gone; a revert mid-rollout is rolled like any other; a rollout without
progress for the deadline becomes ``Failed`` and keeps being driven.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgd.domain.events import EventRecord
from dgd.domain.rollout import Hashes, Step, advance, completed_annotations, new_generation_hash
from dgd.domain.rollout_replicas import (
    MAX_SURGE,
    MAX_UNAVAILABLE,
    STRATEGY,
    Generations,
    InvalidStrategy,
    Strategy,
    WorkerDCD,
    distribute,
    drained,
    is_updated,
    merged_status,
    strategy,
    targets,
)
from dgd.messages.dgd import ComponentReplicaStatus, RollingUpdateStatus

V1, V2 = "nvidia.com/current-worker-hash", "nvidia.com/current-worker-hash-v2"
OLD_HASH, NEW_HASH = "aaaa0001", "bbbb0002"
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"
ROLLING = Strategy(max_surge=1, max_unavailable=0)
RECREATE = Strategy(recreate=True, max_surge=0, max_unavailable=2)
RECORDED = Hashes(v2=OLD_HASH)
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True)


def dcd(
    name: str,
    *,
    component: str = "worker",
    hash: str = OLD_HASH,
    replicas: int = 1,
    available: int | None = None,
    ready: int | None = None,
    actual: int | None = None,
    created: str = T0,
    processed: bool = True,
    deleting: bool = False,
    status: ComponentReplicaStatus | None = None,
) -> WorkerDCD:
    """A worker DCD; by default every replica of its spec exists, is ready and available."""
    return WorkerDCD(
        name=name,
        component=component,
        hash=hash,
        replicas=replicas,
        available=replicas if available is None else available,
        ready=replicas if ready is None else ready,
        actual=replicas if actual is None else actual,
        created=created,
        processed=processed,
        deleting=deleting,
        status=status,
    )


def generations(
    component: str = "worker",
    *,
    desired: int = 2,
    new: WorkerDCD | None = None,
    old: Sequence[WorkerDCD] = (),
    policy: Strategy = ROLLING,
    drained: bool = True,
) -> Generations:
    return Generations(
        component=component, desired=desired, strategy=policy, new=new, old=tuple(old), drained=drained
    )


def updated(component: str, *, desired: int = 2, old: Sequence[WorkerDCD] = ()) -> Generations:
    """A component whose new generation is ready; its ``old`` (if any) serve nothing."""
    new = dcd(f"g-{component}-{NEW_HASH}", component=component, hash=NEW_HASH, replicas=desired)
    return generations(component, desired=desired, new=new, old=old)


def midway(component: str, *, desired: int = 2, new_ready: int = 1, old_ready: int = 2) -> Generations:
    """A component in the middle of its rollout: the new generation partly ready, the old one serving."""
    new = dcd(
        f"g-{component}-{NEW_HASH}",
        component=component,
        hash=NEW_HASH,
        replicas=desired,
        ready=new_ready,
        available=new_ready,
    )
    old = dcd(f"g-{component}-{OLD_HASH}", component=component, replicas=old_ready)
    return generations(component, desired=desired, new=new, old=[old])


def step(
    status: RollingUpdateStatus | None,
    components: Sequence[Generations],
    *,
    current: Hashes = RECORDED,
    desired: str = NEW_HASH,
    new_hash: str = NEW_HASH,
    now: str = T1,
    clock: float = 1000.0,
    progress: Step | None = None,
    deadline: float | None = 600.0,
) -> Step:
    """One reconcile; ``progress`` is the previous reconcile's step (its progress is carried over)."""
    return advance(
        status,
        current=current,
        desired=desired,
        new_hash=new_hash,
        components=components,
        now=now,
        clock=clock,
        progress=progress.progress if progress is not None else None,
        deadline=deadline,
    )


def in_progress(updated_components: list[str] | None = None) -> RollingUpdateStatus:
    return RollingUpdateStatus(phase="InProgress", start_time=T0, updated_components=updated_components)


def status_of(
    names: Sequence[str], *, replicas: int, namespace: str | None, updated: int = 0
) -> ComponentReplicaStatus:
    return ComponentReplicaStatus(
        component_kind="Deployment",
        replicas=replicas,
        updated_replicas=updated,
        component_names=list(names),
        runtime_namespace=namespace,
        ready_replicas=replicas,
        available_replicas=replicas,
    )


# strategy() (§12.4).


def test_the_default_strategy_rolls_with_a_quarter_of_surge_and_a_quarter_unavailable() -> None:
    assert strategy({}, 8) == Strategy(recreate=False, max_surge=2, max_unavailable=2)


def test_a_percentage_surge_rounds_up_and_a_percentage_unavailable_rounds_down() -> None:
    # given 25% of 5 replicas = 1.25
    # then surge is 2 (up) and unavailable is 1 (down)
    assert strategy({}, 5) == Strategy(max_surge=2, max_unavailable=1)
    assert strategy({MAX_SURGE: "10%", MAX_UNAVAILABLE: "90%"}, 3) == Strategy(max_surge=1, max_unavailable=2)


def test_bounds_that_both_resolve_to_zero_surge_by_one() -> None:
    # given 0% surge and 25% of 3 unavailable (0.75, rounded down to 0)
    assert strategy({MAX_SURGE: "0%", MAX_UNAVAILABLE: "25%"}, 3) == Strategy(max_surge=1, max_unavailable=0)
    assert strategy({MAX_SURGE: "0", MAX_UNAVAILABLE: "0"}, 4) == Strategy(max_surge=1, max_unavailable=0)
    # and the defaults over 0 desired replicas resolve to 0/0
    assert strategy({}, 0) == Strategy(max_surge=1, max_unavailable=0)


def test_integer_bounds_are_taken_as_they_are() -> None:
    assert strategy({MAX_SURGE: "3", MAX_UNAVAILABLE: "0"}, 2) == Strategy(max_surge=3, max_unavailable=0)
    assert strategy({MAX_SURGE: "0", MAX_UNAVAILABLE: "2"}, 10) == Strategy(max_surge=0, max_unavailable=2)


def test_recreate_has_no_surge_and_may_take_every_replica_down() -> None:
    # given a Recreate annotation, even beside invalid rolling bounds (they are not read)
    annotations = {STRATEGY: "Recreate", MAX_SURGE: "abc"}
    assert strategy(annotations, 3) == Strategy(recreate=True, max_surge=0, max_unavailable=3)


@pytest.mark.parametrize("key", [MAX_SURGE, MAX_UNAVAILABLE])
@pytest.mark.parametrize("value", ["abc", "-1", "10.5%", "1.5", "", "%", "25 %", "0x10"])
def test_a_bound_that_is_neither_an_integer_nor_a_percentage_is_refused_naming_the_key_and_value(
    key: str, value: str
) -> None:
    with pytest.raises(InvalidStrategy) as refused:
        strategy({key: value}, 4)
    message = str(refused.value)
    assert key in message
    assert repr(value) in message
    assert "integer" in message and "percentage" in message


_BOUNDS = st.one_of(
    st.integers(0, 8).map(str),
    st.integers(0, 150).map(lambda percent: f"{percent}%"),
)


@PROPERTY
@given(desired=st.integers(0, 40), surge=_BOUNDS, unavailable=_BOUNDS)
def test_resolved_bounds_round_a_percentage_of_the_desired_replicas_as_exact_integers(
    desired: int, surge: str, unavailable: str
) -> None:
    """Surge is ⌈d·p/100⌉ and unavailable ⌊d·p/100⌋ (integer arithmetic, no float error), integers are
    taken as they are, and 0/0 becomes surge 1."""

    def resolve(value: str, *, up: bool) -> int:
        if not value.endswith("%"):
            return int(value)
        scaled = desired * int(value[:-1])
        return -(-scaled // 100) if up else scaled // 100

    expected_surge, expected_unavailable = resolve(surge, up=True), resolve(unavailable, up=False)
    if expected_surge == expected_unavailable == 0:
        expected_surge = 1
    resolved = strategy({MAX_SURGE: surge, MAX_UNAVAILABLE: unavailable}, desired)
    assert resolved == Strategy(max_surge=expected_surge, max_unavailable=expected_unavailable)


# targets() (§12.4).


def _rolling(
    d: int, *, new: tuple[int, int] | None, old: tuple[int, int], annotations: dict[str, str]
) -> Generations:
    """A component with desired ``d``; ``new``/``old`` are (spec, available)."""
    new_dcd = None if new is None else dcd("g-w-new", hash=NEW_HASH, replicas=new[0], available=new[1])
    old_dcd = dcd("g-w-old", replicas=old[0], available=old[1])
    return generations(desired=d, new=new_dcd, old=[old_dcd], policy=strategy(annotations, d))


def test_a_default_rollout_of_four_replicas_surges_one_and_takes_one_old_replica_down_at_once() -> None:
    # given d=4, 25%/25% → surge 1, unavailable 1, minAvailable 3; old 4/4 available, no new DCD
    # maxScaledDown = 4+0-3-0 = 1, oldUnhealthy = 0, availableSurplus = 4+0-3 = 1 → old = 4-min(1,1) = 3
    # scaleUpBudget = 4+1-4-0 = 1 → new = min(4, 0+1) = 1
    assert targets(_rolling(4, new=None, old=(4, 4), annotations={})) == (1, 3)


def test_a_default_rollout_of_four_replicas_steps_to_the_new_generation_within_its_bounds() -> None:
    # each reconcile after the last one's targets became available (worked by hand from §12.4):
    # new 1/0, old 3/3: newUnavailable 1, maxScaledDown 3+1-3-1 = 0 → old 3; budget 5-4 = 1 → new 2
    assert targets(_rolling(4, new=(1, 0), old=(3, 3), annotations={})) == (2, 3)
    # new 2/2, old 3/3: maxScaledDown 5-3 = 2, surplus 5-3 = 2 → old 1; budget 0 → new 2
    assert targets(_rolling(4, new=(2, 2), old=(3, 3), annotations={})) == (2, 1)
    # new 2/2, old 1/1: maxScaledDown 3-3 = 0 → old 1; budget 5-3 = 2 → new 4
    assert targets(_rolling(4, new=(2, 2), old=(1, 1), annotations={})) == (4, 1)
    # new 4/4, old 1/1: maxScaledDown 2, surplus 2 → old 0; budget 0 → new 4
    assert targets(_rolling(4, new=(4, 4), old=(1, 1), annotations={})) == (4, 0)


def test_without_unavailability_the_old_generation_waits_for_new_replicas_to_become_available() -> None:
    # given d=3, surge 1, unavailable 0 → minAvailable 3
    bounds = {MAX_SURGE: "1", MAX_UNAVAILABLE: "0"}
    # new 1/0: maxScaledDown = 3+1-3-1 = 0 → old stays 3; budget = 4-4 = 0 → new stays 1
    assert targets(_rolling(3, new=(1, 0), old=(3, 3), annotations=bounds)) == (1, 3)
    # new 1/1: maxScaledDown = 1, surplus = 1 → old 2; budget 0 → new 1
    assert targets(_rolling(3, new=(1, 1), old=(3, 3), annotations=bounds)) == (1, 2)


def test_unhealthy_old_replicas_are_removed_even_without_an_available_surplus() -> None:
    # given d=4, surge 1, unavailable 1 → minAvailable 3; old spec 4 with only 2 available; new 1/1
    # maxScaledDown = 4+1-3-0 = 2, oldUnhealthy = 2, availableSurplus = max(0, 2+1-3) = 0
    # old = 4 - min(2, 2+0) = 2; budget = max(0, 5-4-1) = 0 → new 1
    bounds = {MAX_SURGE: "1", MAX_UNAVAILABLE: "1"}
    assert targets(_rolling(4, new=(1, 1), old=(4, 2), annotations=bounds)) == (1, 2)


def test_unhealthy_old_replicas_are_removed_only_as_far_as_the_new_unavailable_ones_allow() -> None:
    # given the same, but the new replica not available yet (new 1/0)
    # newUnavailable = 1, maxScaledDown = 4+1-3-1 = 1, oldUnhealthy = 2, availableSurplus = 0
    # old = 4 - min(1, 2) = 3; budget = 0 → new 1
    bounds = {MAX_SURGE: "1", MAX_UNAVAILABLE: "1"}
    assert targets(_rolling(4, new=(1, 0), old=(4, 2), annotations=bounds)) == (1, 3)


def test_a_new_generation_above_the_desired_replicas_is_brought_down_to_them() -> None:
    # given d=2 after a scale-down, new 4/4, old 0/0: new = min(2, 4 + max(0, 2+1-4-0)) = 2
    assert targets(_rolling(2, new=(4, 4), old=(0, 0), annotations={MAX_SURGE: "1"})) == (2, 0)


def test_the_old_target_is_the_total_over_every_old_generation() -> None:
    # given d=4, surge 1, unavailable 0; two old DCDs of 2/2 each and a new 1/1
    # old spec 4, available 4; maxScaledDown = 5-4 = 1, surplus = 5-4 = 1 → old 3; budget 0 → new 1
    old = [dcd("g-w-a", replicas=2), dcd("g-w-b", replicas=2)]
    new = dcd("g-w-new", hash=NEW_HASH, replicas=1)
    assert targets(generations(desired=4, new=new, old=old, policy=ROLLING)) == (1, 3)


def test_recreate_keeps_the_new_generation_at_zero_until_the_old_one_is_drained() -> None:
    old = [dcd("g-w-old", replicas=0, available=0, ready=0, actual=0)]
    waiting = generations(desired=3, old=old, policy=strategy({STRATEGY: "Recreate"}, 3), drained=False)
    assert targets(waiting) == (0, 0)
    # when the barrier is drained, the new generation gets every desired replica at once
    done = generations(desired=3, old=old, policy=strategy({STRATEGY: "Recreate"}, 3), drained=True)
    assert targets(done) == (3, 0)


def test_recreate_takes_a_serving_old_generation_to_zero_at_once() -> None:
    old = [dcd("g-w-old", replicas=3)]
    assert targets(generations(desired=3, old=old, policy=RECREATE, drained=False)) == (0, 0)


_SPEC_AND_AVAILABLE = st.integers(0, 25).flatmap(lambda spec: st.tuples(st.just(spec), st.integers(0, spec)))


@PROPERTY
@given(
    d=st.integers(0, 20),
    surge=_BOUNDS,
    unavailable=_BOUNDS,
    new=st.none() | _SPEC_AND_AVAILABLE,
    olds=st.lists(_SPEC_AND_AVAILABLE, min_size=1, max_size=3),
)
def test_rolling_targets_respect_the_desired_replicas_the_surge_and_the_minimum_available(
    d: int,
    surge: str,
    unavailable: str,
    new: tuple[int, int] | None,
    olds: list[tuple[int, int]],
) -> None:
    """For RollingUpdate, with every generation's available ≤ its spec:

    * the new target is between 0 and d; the old target between 0 and the old spec (old replicas are
      never added);
    * the total after this reconcile, new target + old spec (the old generation is scaled only after the
      new DCD is written) and a fortiori new target + old target, is at most max(d + maxSurge, old spec +
      new spec): a rollout within its surge stays within it, one above it (d was lowered) never grows;
    * scaling the old generation to its target (keeping its available replicas, §12.5) leaves at least
      min(d − maxUnavailable, old available + new available) replicas available: the rollout never takes
      availability below minAvailable, nor lower than it already is.
    """
    policy = strategy({MAX_SURGE: surge, MAX_UNAVAILABLE: unavailable}, d)
    new_dcd = None if new is None else dcd("g-w-new", hash=NEW_HASH, replicas=new[0], available=new[1])
    old = [dcd(f"g-w-{i}", replicas=spec, available=available) for i, (spec, available) in enumerate(olds)]
    new_spec, new_available = new or (0, 0)
    old_spec = sum(spec for spec, _ in olds)
    old_available = sum(available for _, available in olds)

    new_target, old_target = targets(generations(desired=d, new=new_dcd, old=old, policy=policy))

    assert 0 <= new_target <= d
    assert 0 <= old_target <= old_spec
    bound = max(d + policy.max_surge, old_spec + new_spec)
    assert new_target + old_spec <= bound
    assert new_target + old_target <= bound
    if old_spec + new_spec <= d + policy.max_surge:
        assert new_target + old_spec <= d + policy.max_surge
    shares = distribute(old_target, old)
    kept = sum(min(shares[o.name], o.available) for o in old)
    assert min(old_target, old_available) == kept
    assert kept + new_available >= min(d - policy.max_unavailable, old_available + new_available)


@PROPERTY
@given(
    d=st.integers(0, 12),
    surge=_BOUNDS,
    unavailable=_BOUNDS,
    olds=st.lists(st.integers(0, 12), min_size=1, max_size=3),
)
def test_a_rolling_update_whose_replicas_become_available_reaches_the_new_generation(
    d: int, surge: str, unavailable: str, olds: list[int]
) -> None:
    """Applying each reconcile's targets (new DCD to its target, old DCDs to their share) with every
    replica available by the next reconcile, the component is updated (new ready ≥ d, old ready 0) within
    d + Σold + 2 reconciles, and every reconcile moves at least one replica."""
    policy = strategy({MAX_SURGE: surge, MAX_UNAVAILABLE: unavailable}, d)
    old = [
        dcd(f"g-w-{i}", replicas=spec, created=f"2026-01-0{i + 1}T00:00:00Z") for i, spec in enumerate(olds)
    ]
    new: WorkerDCD | None = None
    component = generations(desired=d, new=new, old=old, policy=policy)
    for _ in range(d + sum(olds) + 2):
        if is_updated(component):
            break
        new_target, old_target = targets(component)
        shares = distribute(old_target, component.old)
        moved = (new_target != (new.replicas if new else 0)) or any(
            shares[o.name] != o.replicas for o in component.old
        )
        assert moved, f"no replica moved: {component}"
        new = dcd("g-w-new", hash=NEW_HASH, replicas=new_target)
        old = [dcd(o.name, replicas=shares[o.name], created=o.created) for o in component.old]
        component = generations(desired=d, new=new, old=old, policy=policy)
    assert is_updated(component)


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


# Worker hashes (§12.1).


def test_recorded_hashes_are_read_from_the_dgd_annotations_ignoring_empty_values() -> None:
    assert Hashes.of(None) == Hashes(None, None)
    assert Hashes.of({V1: "", V2: ""}) == Hashes(None, None)
    assert Hashes.of({V1: "0123abcd", V2: OLD_HASH}) == Hashes("0123abcd", OLD_HASH)


def test_a_recorded_v2_hash_matches_only_the_desired_hash() -> None:
    assert Hashes(v2=OLD_HASH).matches(OLD_HASH)
    assert not Hashes(v2=OLD_HASH).matches(NEW_HASH)
    assert Hashes(v1="0123abcd", v2=OLD_HASH).matches(OLD_HASH)
    assert not Hashes(v1="0123abcd", v2=OLD_HASH).matches(NEW_HASH)


def test_a_v1_only_hash_matches_unless_it_marks_legacy_dcds() -> None:
    assert Hashes(v1="0123abcd").matches(NEW_HASH)
    assert not Hashes(v1="legacy").matches(NEW_HASH)
    assert not Hashes().matches(NEW_HASH)


def test_dcd_names_carry_the_v1_suffix_while_it_is_recorded() -> None:
    assert Hashes(v1="0123abcd", v2=OLD_HASH).name_suffix() == "0123abcd"
    assert Hashes(v2=OLD_HASH).name_suffix() == OLD_HASH
    assert Hashes().name_suffix() is None


def test_the_new_generation_keeps_the_v1_name_while_it_still_names_the_desired_generation() -> None:
    # v1 + v2 matching: the active DCDs still carry the v1 suffix
    assert new_generation_hash(Hashes("0123abcd", NEW_HASH), NEW_HASH, rolling=False) == "0123abcd"
    assert new_generation_hash(Hashes("0123abcd", NEW_HASH), NEW_HASH, rolling=True) == "0123abcd"
    # v1 only, no rollout: the v1 suffix
    assert new_generation_hash(Hashes("0123abcd", None), NEW_HASH, rolling=False) == "0123abcd"


def test_the_new_generation_takes_the_desired_hash_otherwise() -> None:
    # v2 differs from the desired hash
    assert new_generation_hash(Hashes("0123abcd", OLD_HASH), NEW_HASH, rolling=False) == NEW_HASH
    # a v1-only DGD with an active rollout targets desired v2
    assert new_generation_hash(Hashes("0123abcd", None), NEW_HASH, rolling=True) == NEW_HASH
    # legacy DCDs never name a generation
    assert new_generation_hash(Hashes("legacy", None), NEW_HASH, rolling=False) == NEW_HASH
    assert new_generation_hash(Hashes(None, NEW_HASH), NEW_HASH, rolling=False) == NEW_HASH
    assert new_generation_hash(Hashes(), NEW_HASH, rolling=True) == NEW_HASH


def test_a_completed_v2_generation_drops_the_legacy_name_and_a_v1_named_one_keeps_it() -> None:
    assert completed_annotations(NEW_HASH, NEW_HASH) == {V2: NEW_HASH, V1: None}
    assert completed_annotations("0123abcd", NEW_HASH) == {V2: NEW_HASH}


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
