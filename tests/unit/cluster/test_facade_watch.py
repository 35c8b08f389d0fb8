"""The facade's watch streams as an HTTP client sees them: events per line, 410s, bookmarks, timeouts and
field selectors.
"""

from __future__ import annotations

import anyio
import msgspec
import pytest

from tests.unit.cluster.facade_client import CONFIG_MAPS, Served, config_map, lines

pytestmark = pytest.mark.anyio


async def test_watch_streams_one_json_event_per_line_from_a_resource_version(served: Served) -> None:
    # given a list's resourceVersion, then two changes
    _, listed = await served.call("GET", CONFIG_MAPS)
    await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call("DELETE", f"{CONFIG_MAPS}/a")

    # when watching from the list's resourceVersion
    query = {"watch": "true", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        events = await lines(response, 2)

    # then both changes arrive in order, each object at its own resourceVersion
    assert response.status == 200 and response.headers["Content-Type"] == "application/json"
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in events] == [
        ("ADDED", "a"),
        ("DELETED", "a"),
    ]


async def test_watch_from_a_compacted_version_ends_with_a_410_error_event(served: Served) -> None:
    # given an old resourceVersion, compacted away
    _, created = await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call(
        "PATCH",
        f"{CONFIG_MAPS}/a",
        {"data": {"k": "2"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    served.cluster.compact()

    # when watching from it
    query = {"watch": "1", "resourceVersion": created["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        events = await lines(response, 2)

    # then the stream holds one ERROR event with the 410 Expired Status, and ends
    assert response.status == 200
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")


async def test_idle_watch_gets_bookmarks_and_ends_after_its_timeout(served: Served) -> None:
    # given a watch asking for bookmarks and a one-second timeout
    _, listed = await served.call("GET", CONFIG_MAPS)
    query = {
        "watch": "1",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }

    # when nothing changes
    with anyio.fail_after(5):
        async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
            body = await response.read()

    # then bookmarks (kind and resourceVersion only) arrived, and the server ended the stream
    events = [msgspec.json.decode(line) for line in body.splitlines()]
    assert events and {event["type"] for event in events} == {"BOOKMARK"}
    assert events[0]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": listed["metadata"]["resourceVersion"]},
    }


async def test_dropped_watches_end_and_expired_watches_get_gone(served: Served) -> None:
    # given two open watch streams
    _, listed = await served.call("GET", CONFIG_MAPS)
    query = {"watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"]}
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as dropped:
        await anyio.wait_all_tasks_blocked()
        # when the facade drops every watch
        count = await served.facade.drop_watches()
        # then the stream ends without an event
        assert (count, await dropped.read()) == (1, b"")
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as expired:
        await anyio.wait_all_tasks_blocked()
        # when the facade expires every watch
        await served.facade.expire_watches()
        # then the stream ends with a 410
        (event,) = await lines(expired, 2)
        assert (event["type"], event["object"]["code"]) == ("ERROR", 410)
    assert served.facade.open_watches == 0


async def test_field_selector_narrows_lists_and_watches_to_one_name(served: Served) -> None:
    # given two objects
    _, listed = await served.call("GET", CONFIG_MAPS)
    await served.call("POST", CONFIG_MAPS, config_map("a"))
    await served.call("POST", CONFIG_MAPS, config_map("b"))

    # when listing and watching with metadata.name=b (as kubectl wait does)
    _, only_b = await served.call("GET", CONFIG_MAPS, params={"fieldSelector": "metadata.name=b"})
    query = {
        "watch": "1",
        "resourceVersion": listed["metadata"]["resourceVersion"],
        "fieldSelector": "metadata.name=b",
    }
    async with served.http.get(served.url + CONFIG_MAPS, params=query) as response:
        (event,) = await lines(response, 1)
    bad, _ = await served.call("GET", CONFIG_MAPS, params={"fieldSelector": "no operator"})

    # then only b is seen, and a malformed selector is a 400
    assert [item["metadata"]["name"] for item in only_b["items"]] == ["b"]
    assert event["object"]["metadata"]["name"] == "b"
    assert bad == 400
