"""Watch: ordered events from a resourceVersion, selector transitions, bookmarks, 410 Gone, slow readers."""

from __future__ import annotations

import anyio
import pytest

from dgd.cluster.errors import Gone, NotFound
from dgd.cluster.protocol import Cluster, Watch, WatchEvent
from dgd.cluster.resources import CONFIG_MAP, Resource
from dgd.messages.base import JSONObject
from tests.conformance.builders import NS, config_map
from tests.conformance.conftest import Harness

pytestmark = pytest.mark.anyio


async def take(events: Watch[JSONObject], count: int) -> list[WatchEvent[JSONObject]]:
    """The next ``count`` events that are not bookmarks (failing rather than hanging if they never come)."""
    taken: list[WatchEvent[JSONObject]] = []
    with anyio.fail_after(10):
        async for event in events:
            if event.type != "BOOKMARK":
                taken.append(event)
            if len(taken) == count:
                break
    return taken


def summary(events: list[WatchEvent[JSONObject]]) -> list[tuple[str, str]]:
    return [(event.type, event.object["metadata"]["name"] if event.object else "") for event in events]


async def test_watch_from_a_resource_version_delivers_later_changes_in_order(cluster: Cluster) -> None:
    """Watching from resourceVersion R yields every change after R, in order, with increasing
    resourceVersions equal to the objects' own."""
    start = await cluster.list(CONFIG_MAP, namespace=NS)
    await cluster.create(CONFIG_MAP, config_map("a"))
    await cluster.patch(CONFIG_MAP.key(NS, "a"), {"data": {"k": "2"}})
    await cluster.create(CONFIG_MAP, config_map("b"))
    await cluster.delete(CONFIG_MAP.key(NS, "a"))

    async with cluster.watch(CONFIG_MAP, namespace=NS, resource_version=start.resource_version) as events:
        seen = await take(events, 4)

    assert summary(seen) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    versions = [int(event.resource_version) for event in seen]
    assert versions == sorted(versions) and len(set(versions)) == 4
    assert all(
        event.object and event.object["metadata"]["resourceVersion"] == event.resource_version
        for event in seen
    )


async def test_watch_without_a_resource_version_starts_with_the_current_objects(cluster: Cluster) -> None:
    """No resourceVersion: synthetic ADDED events for every existing object, then live changes."""
    await cluster.create(CONFIG_MAP, config_map("a"))
    await cluster.create(CONFIG_MAP, config_map("b"))

    async with cluster.watch(CONFIG_MAP, namespace=NS) as events:
        initial = await take(events, 2)
        await cluster.create(CONFIG_MAP, config_map("c"))
        live = await take(events, 1)

    assert summary(initial) == [("ADDED", "a"), ("ADDED", "b")]
    assert summary(live) == [("ADDED", "c")]


async def test_deleted_event_carries_the_last_state_at_the_deletion_resource_version(
    cluster: Cluster,
) -> None:
    """DELETED holds the object as it last was, stamped with the deletion's resourceVersion (so a
    watch can resume right after it)."""
    created = await cluster.create(CONFIG_MAP, config_map("a", data={"last": "state"}))

    async with cluster.watch(
        CONFIG_MAP, namespace=NS, resource_version=created["metadata"]["resourceVersion"]
    ) as events:
        await cluster.delete(CONFIG_MAP.key(NS, "a"))
        (deleted,) = await take(events, 1)

    assert deleted.type == "DELETED" and deleted.object is not None
    assert deleted.object["data"] == {"last": "state"}
    assert int(deleted.resource_version) > int(created["metadata"]["resourceVersion"])


async def test_objects_entering_and_leaving_a_selector_arrive_as_added_and_deleted(cluster: Cluster) -> None:
    """With a label selector, an update that makes an object match is ADDED, one that makes it stop
    matching is DELETED; changes to non-matching objects are not seen."""
    start = await cluster.create(CONFIG_MAP, config_map("a", labels={"role": "other"}))
    key = CONFIG_MAP.key(NS, "a")

    async with cluster.watch(
        CONFIG_MAP, label_selector="role=worker", resource_version=start["metadata"]["resourceVersion"]
    ) as events:
        await cluster.patch(key, {"data": {"ignored": "yes"}})
        await cluster.patch(key, {"metadata": {"labels": {"role": "worker"}}})
        await cluster.patch(key, {"data": {"seen": "yes"}})
        await cluster.patch(key, {"metadata": {"labels": {"role": "other"}}})
        seen = await take(events, 3)

    assert [event.type for event in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[2].object is not None and seen[2].object["metadata"]["labels"] == {"role": "worker"}


async def test_watch_in_a_namespace_sees_only_that_namespace(cluster: Cluster) -> None:
    """A namespaced watch ignores changes in other namespaces."""
    start = await cluster.list(CONFIG_MAP)

    async with cluster.watch(
        CONFIG_MAP, namespace="team-b", resource_version=start.resource_version
    ) as events:
        await cluster.create(CONFIG_MAP, config_map("a", namespace="team-a"))
        await cluster.create(CONFIG_MAP, config_map("b", namespace="team-b"))
        seen = await take(events, 1)

    assert summary(seen) == [("ADDED", "b")]


async def test_list_then_watch_from_the_list_version_misses_nothing(cluster: Cluster) -> None:
    """The informer contract: list, then watch from the list's resourceVersion, sees exactly the
    changes made after the list."""
    await cluster.create(CONFIG_MAP, config_map("before"))
    listed = await cluster.list(CONFIG_MAP, namespace=NS)
    await cluster.create(CONFIG_MAP, config_map("after"))

    async with cluster.watch(CONFIG_MAP, namespace=NS, resource_version=listed.resource_version) as events:
        seen = await take(events, 1)

    assert [item["metadata"]["name"] for item in listed.items] == ["before"]
    assert summary(seen) == [("ADDED", "after")]


async def test_idle_watch_with_bookmarks_gets_a_bookmark_to_resume_from(harness: Harness) -> None:
    """allowWatchBookmarks: an idle watch receives BOOKMARK events (no object) whose
    resourceVersion is at least that of every event delivered; resuming from it repeats nothing."""
    cluster = harness.cluster
    watching = harness.bookmark_cluster or cluster
    created = await cluster.create(CONFIG_MAP, config_map("a"))

    async with watching.watch(
        CONFIG_MAP, namespace=NS, resource_version=created["metadata"]["resourceVersion"], bookmarks=True
    ) as events:
        await cluster.patch(CONFIG_MAP.key(NS, "a"), {"data": {"k": "2"}})
        modified = await events.__anext__()
        bookmark = await events.__anext__()
    async with cluster.watch(CONFIG_MAP, namespace=NS, resource_version=bookmark.resource_version) as resumed:
        await cluster.create(CONFIG_MAP, config_map("b"))
        after = await take(resumed, 1)

    assert modified.type == "MODIFIED"
    assert bookmark.type == "BOOKMARK" and bookmark.object is None
    assert int(bookmark.resource_version) >= int(modified.resource_version)
    assert summary(after) == [("ADDED", "b")]


async def test_watch_from_a_compacted_resource_version_is_gone(harness: Harness) -> None:
    """A resourceVersion older than the server's history: 410 Gone (the client must re-list)."""
    harness.requires("compaction of the watch history on demand")
    cluster = harness.cluster
    old = await cluster.create(CONFIG_MAP, config_map("a"))
    await cluster.patch(CONFIG_MAP.key(NS, "a"), {"data": {"k": "2"}})
    harness.compact()

    async with cluster.watch(CONFIG_MAP, resource_version=old["metadata"]["resourceVersion"]) as events:
        with pytest.raises(Gone):
            await events.__anext__()


async def test_history_is_bounded_and_older_resource_versions_are_gone(harness: Harness) -> None:
    """The watch history keeps a bounded number of changes; resuming from before it is 410 Gone,
    from within it works."""
    harness.requires("configured watch-history size")
    cluster = harness.cluster
    first = await cluster.create(CONFIG_MAP, config_map("a"))
    for value in range(harness.history_size + 1):
        await cluster.patch(CONFIG_MAP.key(NS, "a"), {"data": {"k": str(value)}})
    recent = await cluster.get(CONFIG_MAP.key(NS, "a"))

    async with cluster.watch(CONFIG_MAP, resource_version=first["metadata"]["resourceVersion"]) as events:
        with pytest.raises(Gone):
            await events.__anext__()
    async with cluster.watch(CONFIG_MAP, resource_version=recent["metadata"]["resourceVersion"]) as events:
        await cluster.delete(CONFIG_MAP.key(NS, "a"))
        assert summary(await take(events, 1)) == [("DELETED", "a")]


async def test_slow_watcher_is_dropped_and_resumes_without_loss(harness: Harness) -> None:
    """A watcher that falls more than its buffer behind is dropped (the stream ends after what was
    buffered), writers are never blocked, and resuming from the last resourceVersion seen
    delivers the rest exactly once."""
    harness.requires("configured watch buffer")
    cluster = harness.cluster
    start = await cluster.list(CONFIG_MAP)
    total = harness.watch_buffer * 2

    async with cluster.watch(CONFIG_MAP, resource_version=start.resource_version) as events:
        for index in range(total):
            await cluster.create(CONFIG_MAP, config_map(f"cm-{index:03d}"))
        first_part = [event async for event in events]
    async with cluster.watch(CONFIG_MAP, resource_version=first_part[-1].resource_version) as events:
        rest = await take(events, total - len(first_part))

    names = [name for _, name in summary(first_part) + summary(rest)]
    assert 0 < len(first_part) < total
    assert names == [f"cm-{index:03d}" for index in range(total)]


async def test_closed_watch_delivers_nothing_more(cluster: Cluster) -> None:
    """After the client closes a watch, iterating it ends immediately."""
    start = await cluster.list(CONFIG_MAP)
    events = cluster.watch(CONFIG_MAP, resource_version=start.resource_version)
    await events.__aenter__()
    await events.aclose()

    await cluster.create(CONFIG_MAP, config_map("a"))

    with anyio.fail_after(5):
        assert [event async for event in events] == []


async def test_watch_of_a_kind_the_server_does_not_serve_is_not_found(cluster: Cluster) -> None:
    """A watch request for an unknown resource fails with 404 when it is opened."""
    unknown = Resource[JSONObject](group="example.com", version="v1", kind="Widget", plural="widgets")

    with pytest.raises(NotFound):
        async with cluster.watch(unknown):
            pass


async def test_closing_a_watch_ends_an_iteration_waiting_in_another_task(cluster: Cluster) -> None:
    """aclose() from another task ends a pending iteration instead of leaving it hanging."""
    start = await cluster.list(CONFIG_MAP)
    ended = anyio.Event()

    async with cluster.watch(CONFIG_MAP, resource_version=start.resource_version) as events:

        async def read() -> None:
            async for _ in events:
                pass
            ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            await events.aclose()
            with anyio.fail_after(5):
                await ended.wait()

    assert ended.is_set()
