"""Worker-hash bookkeeping on Grove (dgd-domain §12.1 migration, §12.7 plan)."""

from __future__ import annotations

from dgd.domain.worker_generation import WorkerHashPlan, initial_worker_hash, migration, plan_unmanaged

V1, V2 = "nvidia.com/current-worker-hash", "nvidia.com/current-worker-hash-v2"


def test_a_dgd_without_a_recorded_hash_initializes_it_without_a_generation_change() -> None:
    assert plan_unmanaged({}, "aaaa0001") == WorkerHashPlan({V2: "aaaa0001"})


def test_an_unchanged_worker_spec_writes_nothing() -> None:
    assert plan_unmanaged({V2: "aaaa0001"}, "aaaa0001") == WorkerHashPlan({})


def test_a_changed_worker_spec_records_the_new_generation_and_drops_the_legacy_name() -> None:
    assert plan_unmanaged({V1: "old", V2: "aaaa0001"}, "bbbb0002") == WorkerHashPlan(
        {V2: "bbbb0002", V1: None}, changed=True
    )


def test_a_v1_only_dgd_records_v2_and_keeps_v1_unless_it_is_legacy() -> None:
    assert migration({V1: "0123abcd"}, "aaaa0001") == {V2: "aaaa0001"}
    assert migration({V1: "legacy"}, "aaaa0001") == {}
    assert migration({V1: "x", V2: "y"}, "aaaa0001") == {}


def test_a_new_dgd_is_created_with_its_first_hash_and_a_recorded_one_is_kept() -> None:
    assert initial_worker_hash({}, "aaaa0001") == {V2: "aaaa0001"}
    assert initial_worker_hash({V2: "aaaa0001"}, "bbbb0002") == {}
    assert initial_worker_hash({V1: "legacy"}, "bbbb0002") == {}


def test_a_hash_recorded_before_the_workload_existed_is_initialized_again_not_a_generation_change() -> None:
    # Given a v2 hash written with the finalizer, and no PodCliqueSet written since (its write failed).
    # When the worker spec changes before the PodCliqueSet exists: a new first hash, not a rollout.
    assert plan_unmanaged({V2: "aaaa0001"}, "bbbb0002", running=False) == WorkerHashPlan({V2: "bbbb0002"})
    assert plan_unmanaged({V2: "aaaa0001"}, "aaaa0001", running=False) == WorkerHashPlan({})
    # And once the workload exists, the same change is a changed generation.
    assert plan_unmanaged({V2: "aaaa0001"}, "bbbb0002").changed
