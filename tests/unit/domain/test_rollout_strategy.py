"""The rollout strategy's bounds and the replica targets they allow each generation (dgd-domain §12.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgd.domain.rollout_replicas import (
    MAX_SURGE,
    MAX_UNAVAILABLE,
    STRATEGY,
    Generations,
    InvalidStrategy,
    Strategy,
    WorkerDCD,
    distribute,
    is_updated,
    strategy,
    targets,
)
from tests.unit.domain.rollout_fixtures import (
    NEW_HASH,
    PROPERTY,
    RECREATE,
    ROLLING,
    dcd,
    generations,
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
