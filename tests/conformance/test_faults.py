"""Fault hooks: injected errors, latency, dropped and expired watches, stale reads — all deterministic.

These pin what a client sees when the API server misbehaves in each way the chaos tests use.
"""

from __future__ import annotations

import anyio
import msgspec
import pytest

from dgd.cluster.errors import ClusterError, Conflict, Forbidden, Gone, NotFound, ServerError, TooManyRequests
from dgd.cluster.resources import CONFIG_MAP, DGD
from dgd.messages.dgd import DGDStatus
from tests.conformance.builders import NS, config_map, dgd
from tests.conformance.conftest import Harness

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def injectable_faults(harness: Harness) -> None:
    """Every test here injects faults through the server's fault rules (the memory server's own)."""
    harness.requires("fault rules")


async def test_injected_error_fires_the_given_number_of_times(harness: Harness) -> None:
    """fail(error, times=n): the next n matching requests raise the error, and nothing is written."""
    cluster = harness.cluster
    rule = harness.faults.fail(
        ServerError("etcd leader changed"), verb="create", resource=CONFIG_MAP, times=2
    )

    outcomes = []
    for index in range(3):
        try:
            await cluster.create(CONFIG_MAP, config_map(f"cm-{index}"))
            outcomes.append("ok")
        except ServerError:
            outcomes.append("error")
    listed = await cluster.list(CONFIG_MAP)

    assert outcomes == ["error", "error", "ok"]
    assert rule.fired == 2
    assert [item["metadata"]["name"] for item in listed.items] == ["cm-2"]


async def test_injected_error_with_a_probability_fires_on_a_seeded_share_of_requests(
    harness: Harness,
) -> None:
    """fail(error, probability=p): each matching request fails with probability p, drawn from the
    cluster's seeded generator; ``fired`` counts the failures."""
    cluster = harness.cluster
    await cluster.create(CONFIG_MAP, config_map())
    rule = harness.faults.fail(ServerError("flaky"), verb="get", probability=0.5)

    failures = 0
    for _ in range(40):
        try:
            await cluster.get(CONFIG_MAP.key(NS, "settings"))
        except ServerError:
            failures += 1

    assert 0 < failures < 40
    assert rule.fired == failures


async def test_injected_error_matches_only_its_verb_resource_and_name(harness: Harness) -> None:
    """A rule for (update, DGD, name) leaves other verbs, kinds and names alone."""
    cluster = harness.cluster
    graph = await cluster.create(DGD, dgd("graph"))
    await cluster.create(DGD, dgd("other"))
    harness.faults.fail(Forbidden("no"), verb="update", resource=DGD, name="graph")

    await cluster.get(DGD.key(NS, "graph"))
    await cluster.patch(DGD.key(NS, "graph"), {"metadata": {"labels": {"a": "b"}}})
    await cluster.replace(DGD, await cluster.get(DGD.key(NS, "other")))
    await cluster.create(CONFIG_MAP, config_map())

    with pytest.raises(Forbidden):
        await cluster.replace(DGD, graph)


async def test_injected_error_can_target_the_status_subresource(harness: Harness) -> None:
    """subresource="status" fails status writes only; spec writes go through."""
    cluster = harness.cluster
    graph = await cluster.create(DGD, dgd("graph"))
    harness.faults.fail(Conflict("status write raced"), subresource="status")

    patched = await cluster.patch(DGD.key(NS, "graph"), {"spec": {"backendFramework": "vllm"}})

    assert patched.spec.backend_framework == "vllm"
    with pytest.raises(Conflict):
        await cluster.replace_status(DGD, msgspec.structs.replace(patched, status=DGDStatus(state="pending")))
    with pytest.raises(Conflict):
        await cluster.patch_status(DGD.key(NS, "graph"), {"status": {"state": "pending"}})
    assert (await cluster.get(DGD.key(NS, graph.metadata.name or ""))).status is None


async def test_too_many_requests_carries_when_to_retry(harness: Harness) -> None:
    """An injected 429 keeps its retry_after for the client's backoff (whole seconds: that is all
    ``Retry-After`` and ``Status.details.retryAfterSeconds`` can carry over HTTP)."""
    harness.faults.fail(TooManyRequests("slow down", retry_after=3.0), verb="list")

    with pytest.raises(TooManyRequests) as raised:
        await harness.cluster.list(CONFIG_MAP)

    assert raised.value.retry_after == 3.0
    assert "retry after 3s" in str(raised.value)


async def test_every_port_error_type_can_be_injected(harness: Harness) -> None:
    """Any port error is injectable, and is raised as that type (a fresh copy each time)."""
    errors: list[ClusterError] = [NotFound("x"), Conflict("x"), Gone("x"), Forbidden("x"), ServerError("x")]
    raised: list[type[ClusterError]] = []
    for error in errors:
        rule = harness.faults.fail(error, verb="get", times=1)
        with pytest.raises(ClusterError) as caught:
            await harness.cluster.get(CONFIG_MAP.key(NS, "anything"))
        harness.faults.remove(rule)
        raised.append(type(caught.value))
        assert caught.value is not error

    assert raised == [type(error) for error in errors]


async def test_injected_latency_delays_the_request_before_it_runs(harness: Harness) -> None:
    """delay(s): the request waits s seconds of event-loop time first; cancelled meanwhile, it
    never reaches the server."""
    harness.requires("fault rules")
    cluster = harness.cluster
    harness.faults.delay(3600.0, verb="create", times=1)

    with anyio.move_on_after(0.05) as scope:
        await cluster.create(CONFIG_MAP, config_map("slow"))
    created = await cluster.create(CONFIG_MAP, config_map("fast"))

    assert scope.cancelled_caught
    assert [item["metadata"]["name"] for item in (await cluster.list(CONFIG_MAP)).items] == ["fast"]
    assert created["metadata"]["name"] == "fast"


async def test_dropped_watch_ends_and_resumes_without_loss(harness: Harness) -> None:
    """drop_watch(after_events=n): the stream ends after n events; resuming from the last
    resourceVersion seen delivers the rest."""
    cluster = harness.cluster
    start = await cluster.list(CONFIG_MAP)
    for index in range(4):
        await cluster.create(CONFIG_MAP, config_map(f"cm-{index}"))
    harness.faults.drop_watch(after_events=2, resource=CONFIG_MAP, times=1)

    with anyio.fail_after(10):
        async with cluster.watch(CONFIG_MAP, resource_version=start.resource_version) as events:
            before = [event async for event in events]
        async with cluster.watch(CONFIG_MAP, resource_version=before[-1].resource_version) as events:
            after = [await events.__anext__(), await events.__anext__()]

    names = [event.object["metadata"]["name"] for event in before + after if event.object]
    assert len(before) == 2
    assert names == ["cm-0", "cm-1", "cm-2", "cm-3"]


async def test_expired_watch_raises_gone_after_its_events(harness: Harness) -> None:
    """expire_watch(after_events=n): n events, then 410 Gone (the client must re-list)."""
    cluster = harness.cluster
    start = await cluster.list(CONFIG_MAP)
    await cluster.create(CONFIG_MAP, config_map("a"))
    await cluster.create(CONFIG_MAP, config_map("b"))
    harness.faults.expire_watch(after_events=1, times=1)

    with anyio.fail_after(10):
        async with cluster.watch(CONFIG_MAP, resource_version=start.resource_version) as events:
            first = await events.__anext__()
            with pytest.raises(Gone):
                await events.__anext__()

    assert first.object is not None and first.object["metadata"]["name"] == "a"


async def test_injected_error_on_watch_is_raised_when_the_watch_opens(harness: Harness) -> None:
    """A failing watch request fails on entering, before any event."""
    harness.faults.fail(Forbidden("cannot watch configmaps"), verb="watch", times=1)

    with pytest.raises(Forbidden):
        async with harness.cluster.watch(CONFIG_MAP):
            pass


async def test_stale_get_returns_an_older_version(harness: Harness) -> None:
    """stale_read(behind=n): a GET is served as of n writes ago (a lagging cache)."""
    cluster = harness.cluster
    first = await cluster.create(CONFIG_MAP, config_map(data={"v": "1"}))
    await cluster.patch(CONFIG_MAP.key(NS, "settings"), {"data": {"v": "2"}})
    harness.faults.stale_read(behind=1, times=1)

    stale = await cluster.get(CONFIG_MAP.key(NS, "settings"))
    fresh = await cluster.get(CONFIG_MAP.key(NS, "settings"))

    assert stale == first
    assert fresh["data"] == {"v": "2"}


async def test_stale_get_of_a_new_object_is_not_found(harness: Harness) -> None:
    """A stale read from before an object existed does not find it."""
    await harness.cluster.create(CONFIG_MAP, config_map())
    harness.faults.stale_read(behind=1, times=1)

    with pytest.raises(NotFound):
        await harness.cluster.get(CONFIG_MAP.key(NS, "settings"))


async def test_stale_list_is_consistent_with_its_resource_version(harness: Harness) -> None:
    """A stale LIST returns an older snapshot *with that snapshot's resourceVersion*, so a watch
    from it catches up on exactly the changes the list missed."""
    cluster = harness.cluster
    await cluster.create(CONFIG_MAP, config_map("a"))
    await cluster.create(CONFIG_MAP, config_map("b"))
    harness.faults.stale_read(behind=1, times=1)

    stale = await cluster.list(CONFIG_MAP)
    with anyio.fail_after(10):
        async with cluster.watch(CONFIG_MAP, resource_version=stale.resource_version) as events:
            missed = await events.__anext__()

    assert [item["metadata"]["name"] for item in stale.items] == ["a"]
    assert missed.type == "ADDED" and missed.object is not None and missed.object["metadata"]["name"] == "b"


async def test_removed_rule_fires_no_more(harness: Harness) -> None:
    """Faults.remove stops a rule; Faults.clear stops them all."""
    rule = harness.faults.fail(ServerError("down"), verb="list")
    harness.faults.fail(ServerError("down"), verb="get")
    with pytest.raises(ServerError):
        await harness.cluster.list(CONFIG_MAP)

    harness.faults.remove(rule)
    listed = await harness.cluster.list(CONFIG_MAP)
    harness.faults.clear()
    with pytest.raises(NotFound):
        await harness.cluster.get(CONFIG_MAP.key(NS, "missing"))

    assert listed.items == []
