"""The store's history window: eviction moves the floor; replay and snapshots as of a version."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Gone
from dgd.cluster.memory.store import Store


def put(store: Store, name: str, value: str) -> int:
    data = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "data": {"v": value}}
    return store.put(("configmaps", "ns", name), data).rv


def test_history_replays_changes_after_a_version_in_order() -> None:
    store = Store(["configmaps"], history_size=10)
    first = put(store, "a", "1")
    put(store, "b", "1")
    put(store, "a", "2")

    changes = store.histories["configmaps"].since(first)

    assert [(change.type, change.key[2]) for change in changes] == [("ADDED", "b"), ("MODIFIED", "a")]


def test_evicting_a_change_makes_older_versions_gone() -> None:
    store = Store(["configmaps"], history_size=2)
    first = put(store, "a", "1")
    second = put(store, "a", "2")
    put(store, "a", "3")

    with pytest.raises(Gone):
        store.histories["configmaps"].since(first - 1)
    assert [change.rv for change in store.histories["configmaps"].since(first)] == [second, second + 1]


def test_snapshot_as_of_a_version_undoes_later_changes() -> None:
    store = Store(["configmaps"], history_size=10)
    put(store, "a", "1")
    middle = put(store, "b", "1")
    put(store, "a", "2")
    store.remove(store.get(("configmaps", "ns", "b")))  # type: ignore[arg-type]
    put(store, "c", "1")

    snapshot = store.as_of("configmaps", middle)

    assert {key[1]: stored.data["data"]["v"] for key, stored in snapshot.items()} == {"a": "1", "b": "1"}


def test_deletion_reports_the_last_state_at_a_new_version() -> None:
    store = Store(["configmaps"], history_size=10)
    created = put(store, "a", "1")

    last = store.remove(store.get(("configmaps", "ns", "a")))  # type: ignore[arg-type]

    assert last.rv == created + 1 and last.data["metadata"]["resourceVersion"] == str(created + 1)
    assert last.data["data"] == {"v": "1"}
    assert store.get(("configmaps", "ns", "a")) is None and store.by_uid("uid-a") is None


def put_labelled(store: Store, name: str, labels: dict[str, str]) -> None:
    data = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels}}
    store.put(("configmaps", "ns", name), data)


def labelled(store: Store, key: str, value: str) -> list[str]:
    return [stored.key[2] for stored in store.labelled("configmaps", "ns", [(key, [value])])]


def test_a_label_first_listed_by_after_its_objects_were_stored_is_indexed_from_then_on() -> None:
    # given objects stored before any list narrowed by their labels
    store = Store(["configmaps"], history_size=10)
    put_labelled(store, "a", {"team": "x", "tier": "web"})
    put_labelled(store, "b", {"team": "y"})

    # when a list narrows by "team", then the objects stored before are found
    assert labelled(store, "team", "x") == ["a"]
    both = store.labelled("configmaps", "ns", [("team", ["x", "y"]), ("tier", ["web"])])
    assert [stored.key[2] for stored in both] == ["a"]

    # and later relabels, creations and deletions keep that index right
    put_labelled(store, "a", {"team": "y"})
    put_labelled(store, "c", {"team": "x"})
    store.remove(store.get(("configmaps", "ns", "b")))  # type: ignore[arg-type]
    assert labelled(store, "team", "x") == ["c"]
    assert labelled(store, "team", "y") == ["a"]
    assert labelled(store, "tier", "web") == []
