"""The generation a rollout runs from, checked against the worker DCDs that run (issue 32, #13495)."""

from __future__ import annotations

from dgd.domain.rollout import Hashes, recorded_annotations, serving_hashes
from dgd.domain.rollout_replicas import WorkerDCD
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2, LEGACY


def dcd(
    worker_hash: str, available: int = 2, *, created: str = "2025-01-01T00:00:00Z", deleting: bool = False
) -> WorkerDCD:
    return WorkerDCD(
        name=f"g-worker-{worker_hash}",
        component="worker",
        hash=worker_hash,
        replicas=available,
        available=available,
        ready=available,
        created=created,
        deleting=deleting,
    )


def test_a_new_graph_keeps_what_it_records_even_nothing() -> None:
    assert serving_hashes(Hashes(), [], "bbbb", rolling=False) == Hashes()
    assert serving_hashes(Hashes(v2="aaaa"), [], "bbbb", rolling=False) == Hashes(v2="aaaa")


def test_a_record_that_names_the_only_generation_stands() -> None:
    assert serving_hashes(Hashes(v2="aaaa"), [dcd("aaaa")], "bbbb", rolling=False) == Hashes(v2="aaaa")
    # the v1 name suffix of a v1 + v2 record names the generation as well
    v1_and_v2 = Hashes(v1="old1", v2="aaaa")
    assert serving_hashes(v1_and_v2, [dcd("old1")], "aaaa", rolling=False) == v1_and_v2


def test_a_dropped_record_is_taken_from_the_generation_that_runs() -> None:
    # the #13495 case: the annotation is gone (or re-initialized to the desired hash) after a replace
    assert serving_hashes(Hashes(), [dcd("aaaa")], "bbbb", rolling=False) == Hashes(v2="aaaa")
    assert serving_hashes(Hashes(v2="bbbb"), [dcd("aaaa")], "bbbb", rolling=False) == Hashes(v2="aaaa")


def test_a_leftover_generation_beside_the_desired_one_is_what_runs_until_rolled_out() -> None:
    # orphaned by the defect: the record names the desired generation, an older one still serves
    found = serving_hashes(Hashes(v2="bbbb"), [dcd("aaaa"), dcd("bbbb")], "bbbb", rolling=False)
    assert found == Hashes(v2="aaaa")


def test_among_several_generations_the_one_with_most_available_replicas_serves_then_the_newest() -> None:
    workers = [dcd("aaaa", 3), dcd("cccc", 1, created="2025-02-01T00:00:00Z")]
    assert serving_hashes(Hashes(), workers, "dddd", rolling=False) == Hashes(v2="aaaa")
    tied = [dcd("aaaa", 2), dcd("cccc", 2, created="2025-02-01T00:00:00Z")]
    assert serving_hashes(Hashes(), tied, "dddd", rolling=False) == Hashes(v2="cccc")


def test_during_a_rollout_a_record_naming_any_generation_stands() -> None:
    workers = [dcd("aaaa"), dcd("bbbb")]
    assert serving_hashes(Hashes(v2="aaaa"), workers, "bbbb", rolling=True) == Hashes(v2="aaaa")
    # a record naming none of them is replaced by the one that serves most, the target included
    more_new = [dcd("aaaa", 1), dcd("bbbb", 3)]
    assert serving_hashes(Hashes(v2="zzzz"), more_new, "bbbb", rolling=True) == Hashes(v2="bbbb")


def test_a_record_stands_while_only_the_desired_generation_runs() -> None:
    # the end of a rollout (the old DCDs are gone, the record is written on completion), a stale record
    assert serving_hashes(Hashes(v2="aaaa"), [dcd("bbbb")], "bbbb", rolling=True) == Hashes(v2="aaaa")
    assert serving_hashes(Hashes(v2="aaaa"), [dcd("bbbb")], "bbbb", rolling=False) == Hashes(v2="aaaa")
    assert serving_hashes(Hashes(), [dcd("bbbb")], "bbbb", rolling=False) == Hashes()


def test_deleting_dcds_do_not_serve() -> None:
    workers = [dcd("aaaa", deleting=True), dcd("cccc")]
    assert serving_hashes(Hashes(v2="aaaa"), workers, "bbbb", rolling=False) == Hashes(v2="cccc")
    gone = [dcd("aaaa", deleting=True), dcd("bbbb")]
    assert serving_hashes(Hashes(v2="aaaa"), gone, "bbbb", rolling=True) == Hashes(v2="aaaa")


def test_a_legacy_generation_is_recorded_as_legacy_v1() -> None:
    assert serving_hashes(Hashes(), [dcd(LEGACY)], "bbbb", rolling=False) == Hashes(v1=LEGACY)


def test_the_recorded_annotations_say_exactly_the_hashes() -> None:
    assert recorded_annotations(Hashes(v2="aaaa")) == {
        CURRENT_WORKER_HASH_V2: "aaaa",
        CURRENT_WORKER_HASH: None,
    }
    assert recorded_annotations(Hashes(v1=LEGACY)) == {
        CURRENT_WORKER_HASH_V2: None,
        CURRENT_WORKER_HASH: LEGACY,
    }
