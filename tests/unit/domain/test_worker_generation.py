"""Worker-hash bookkeeping on Grove (dgd-domain §12.1 migration, §12.7 plan)."""

from __future__ import annotations

from dgd.domain.worker_generation import WorkerHashPlan, migration, plan_unmanaged

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
