"""The kube adapter beyond the conformance suite: configuration, what a real API server does that the
facade does not, transport failures, the rate limit, and stalled watches."""

from __future__ import annotations

import random
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration

from dgd.cluster.errors import Forbidden, Gone, Invalid, NotFound, ServerError, Timeout, TooManyRequests
from dgd.cluster.kube import adapter as kube_adapter
from dgd.cluster.kube.adapter import OFF_LOOP_BYTES, KubeCluster
from dgd.cluster.kube.config import ConfigError, environment_proxy
from dgd.cluster.kube.rate import RateLimiter
from dgd.cluster.kube.wire import warning_texts
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CONFIG_MAP, DGD, DGDSA, EVENT
from dgd.sim.apiserver.server import Facade, serve, write_kubeconfig
from dgd.sim.clock import backend_options
from tests.conformance.builders import dgd, event

pytestmark = pytest.mark.anyio

NS = "team-a"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def fake_api_server(handler: Handler) -> AsyncIterator[str]:
    """An HTTP server answering every request with ``handler`` (a stand-in for a real API server)."""
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handler)
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def adapter(url: str, **options: object) -> KubeCluster:
    return KubeCluster(ApiClient(Configuration(host=url)), qps=None, **options)  # type: ignore[arg-type]


def status(code: int, reason: str, message: str = "", **details: object) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
        "details": details,
    }
    return web.json_response(body, status=code)


async def test_from_config_reads_a_kubeconfig_with_a_token(tmp_path: Path) -> None:
    # given a facade that requires a token, and the kubeconfig sim serve writes for it
    facade = Facade(MemoryCluster(namespaces=(NS,)), token="s3cret")
    async with serve(facade) as url:
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, url, token="s3cret")

        # when the adapter is built from that file
        async with await KubeCluster.from_config(path) as cluster:
            listed = await cluster.list(CONFIG_MAP)
            served = await cluster.group_versions()

    # then it reached the server with the token
    assert listed.items == []
    assert "v1" in served and "nvidia.com/v1beta1" in served and "apps/v1" in served


async def test_from_config_uses_the_kubeconfig_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given $KUBECONFIG naming a kubeconfig for a facade
    async with serve(Facade(MemoryCluster(namespaces=(NS,)))) as url:
        path = tmp_path / "sim.kubeconfig"
        write_kubeconfig(path, url)
        monkeypatch.setenv("KUBECONFIG", str(path))

        # when the adapter is built with no path
        async with await KubeCluster.from_config() as cluster:
            namespaces = await cluster.list(CONFIG_MAP)

    # then it used that file
    assert namespaces.items == []


async def test_a_netrc_file_is_not_read_and_the_token_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a .netrc with credentials for the API server's host (client-go never reads one)
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []})

    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password secret\n", encoding="utf-8")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    async with fake_api_server(handler) as url:
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, url, token="s3cret")

        # when the adapter built from the kubeconfig lists
        async with await KubeCluster.from_config(path) as cluster:
            listed = await cluster.list(CONFIG_MAP)

    # then the request carried the kubeconfig's token alone
    assert listed.items == []
    assert seen == ["Bearer s3cret"]


async def test_the_proxy_the_environment_names_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given HTTP_PROXY naming a proxy, and a kubeconfig for a server only the proxy knows
    asked: list[str] = []

    async def proxy(request: web.Request) -> web.Response:
        asked.append(str(request.url))
        return web.json_response({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []})

    async with fake_api_server(proxy) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        path = tmp_path / "kubeconfig"
        write_kubeconfig(path, "http://kube-api.invalid:6443")

        # when the adapter built from it lists
        async with await KubeCluster.from_config(path) as cluster:
            await cluster.list(CONFIG_MAP)

    # then the request went through the proxy, for the server's URL
    assert asked == ["http://kube-api.invalid:6443/api/v1/configmaps"]


@pytest.mark.parametrize(
    ("server", "no_proxy", "expected"),
    [
        ("https://kube.example:6443", "", "http://proxy:3128"),
        ("https://kube.example:6443", "example", None),
        ("https://kube.example:6443", "kube.example", None),
        ("https://127.0.0.1:6443", "", None),
        ("https://localhost:6443", "", None),
    ],
)
def test_environment_proxy_follows_no_proxy_and_never_proxies_loopback(
    monkeypatch: pytest.MonkeyPatch, server: str, no_proxy: str, expected: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    if no_proxy:
        monkeypatch.setenv("NO_PROXY", no_proxy)

    assert environment_proxy(server) == expected


async def test_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        await KubeCluster.from_config(tmp_path / "absent")

    assert "absent" in str(raised.value)


async def test_list_items_without_api_version_and_kind_get_them() -> None:
    # given an API server that, like a real one, leaves apiVersion and kind out of built-in items
    async def handler(request: web.Request) -> web.Response:
        item = {"metadata": {"name": "x", "namespace": NS, "resourceVersion": "5"}, "reason": "Scaled"}
        data = {
            "kind": "EventList",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"resourceVersion": "9"},
            "items": [item],
        }
        if "configmaps" in request.path:
            data["items"] = [{"metadata": {"name": "c", "namespace": NS}, "data": {"k": "v"}}]
        return web.json_response(data)

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when Events (a modelled kind) and ConfigMaps (raw) are listed
        events = await cluster.list(EVENT, namespace=NS)
        maps = await cluster.list(CONFIG_MAP, namespace=NS)

    # then both decode, with the list's resourceVersion
    assert events.resource_version == "9"
    assert (events.items[0].api_version, events.items[0].reason) == ("events.k8s.io/v1", "Scaled")
    assert maps.items == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": NS},
            "data": {"k": "v"},
        }
    ]


async def test_patches_go_out_as_merge_patches_and_deletes_with_options() -> None:
    # given an API server recording each request
    seen: list[tuple[str, str, str, object]] = []

    async def handler(request: web.Request) -> web.Response:
        body = msgspec.json.decode(await request.read()) if request.can_read_body else None
        seen.append((request.method, request.path, request.headers.get("Content-Type", ""), body))
        if request.method == "DELETE":
            return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Success"})
        return web.json_response(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": NS}}
        )

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when an object is patched (also with an empty patch), status-patched and deleted
        await cluster.patch(CONFIG_MAP.key(NS, "c"), {"data": {"k": "v"}}, resource_version="7")
        await cluster.patch(CONFIG_MAP.key(NS, "c"), {})
        deleted = await cluster.delete(CONFIG_MAP.key(NS, "c"), propagation="Foreground")

    # then patches are JSON merge patches carrying the precondition, and the delete sends its options
    assert seen[0] == (
        "PATCH",
        f"/api/v1/namespaces/{NS}/configmaps/c",
        "application/merge-patch+json",
        {"data": {"k": "v"}, "metadata": {"resourceVersion": "7"}},
    )
    assert seen[1][2:] == ("application/merge-patch+json", {"metadata": {}})
    assert seen[2][0] == "DELETE" and seen[2][3] == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
    }
    assert deleted is None


async def test_delete_returns_the_object_while_finalizers_hold_it() -> None:
    # given an API server answering a delete with the object marked deleting
    async def handler(request: web.Request) -> web.Response:
        metadata = {
            "name": "graph",
            "namespace": NS,
            "deletionTimestamp": "2026-01-01T00:00:00Z",
            "finalizers": ["nvidia.com/finalizer"],
        }
        return web.json_response(
            {"apiVersion": DGD.api_version, "kind": "DynamoGraphDeployment", "metadata": metadata, "spec": {}}
        )

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when deleted
        held = await cluster.delete(DGD.key(NS, "graph"))

    # then the object comes back, still there
    assert held is not None and held.metadata.finalizers == ["nvidia.com/finalizer"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (lambda: status(404, "NotFound", "nope", name="x", kind="configmaps"), NotFound),
        (lambda: status(403, "Forbidden", "rbac"), Forbidden),
        (lambda: status(401, "Unauthorized", "who"), Forbidden),
        (lambda: status(422, "Invalid", "bad", causes=[{"field": "spec", "message": "m"}]), Invalid),
        (lambda: web.Response(status=502, text="<html>bad gateway</html>"), ServerError),
        (lambda: status(504, "Timeout", "slow"), Timeout),
    ],
)
async def test_error_responses_map_to_port_errors_naming_the_object(
    answer: Callable[[], web.Response], expected: type[Exception]
) -> None:
    # given an API server refusing with a Status (or an HTML page from a proxy)
    async def handler(request: web.Request) -> web.Response:
        return answer()

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when an object is read
        with pytest.raises(expected) as raised:
            await cluster.get(CONFIG_MAP.key(NS, "x"))

    # then the port error names the kind, namespace and name asked for
    error = raised.value
    assert (error.kind, error.namespace, error.name) == ("ConfigMap", NS, "x")  # type: ignore[attr-defined]


async def test_an_error_about_another_object_keeps_naming_that_object() -> None:
    # given an API server answering a write into a missing namespace, as a real one does
    async def handler(request: web.Request) -> web.Response:
        return status(404, "NotFound", 'namespaces "nope" not found', name="nope", kind="namespaces")

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when a ConfigMap of that namespace is read
        with pytest.raises(NotFound) as raised:
            await cluster.get(CONFIG_MAP.key("nope", "x"))

    # then the error names the namespace it is about, not a ConfigMap nope/nope
    error = raised.value
    assert (error.kind, error.namespace, error.name) == ("namespaces", None, "nope")
    assert str(error) == 'NotFound (404): namespaces nope: namespaces "nope" not found'


async def test_throttling_takes_retry_after_from_the_header() -> None:
    # given a 429 whose header says 7 seconds
    async def handler(request: web.Request) -> web.Response:
        response = status(429, "TooManyRequests", "slow down", retryAfterSeconds=1)
        response.headers["Retry-After"] = "7"
        return response

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        with pytest.raises(TooManyRequests) as raised:
            await cluster.list(CONFIG_MAP)

    assert raised.value.retry_after == 7.0


async def test_unreachable_server_is_a_server_error_and_a_slow_one_a_timeout() -> None:
    # given a server that never answers in time
    async def handler(request: web.Request) -> web.Response:
        await anyio.sleep(10)
        return web.json_response({})

    async with fake_api_server(handler) as url, adapter(url, request_timeout=0.05) as slow:
        with pytest.raises(Timeout):
            await slow.list(CONFIG_MAP)

    # and a server that is gone
    async with adapter(url) as gone:
        with pytest.raises(ServerError):
            await gone.list(CONFIG_MAP)


async def test_watch_error_event_raises_its_error_after_the_events_before_it() -> None:
    # given a stream with one event, then a 410
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        added = {
            "type": "ADDED",
            "object": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": NS, "resourceVersion": "3"},
            },
        }
        gone = {
            "type": "ERROR",
            "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"},
        }
        await response.write(msgspec.json.encode(added) + b"\n" + msgspec.json.encode(gone) + b"\n")
        return response

    async with (
        fake_api_server(handler) as url,
        adapter(url) as cluster,
        cluster.watch(CONFIG_MAP, namespace=NS, resource_version="2") as events,
    ):
        first = await events.__anext__()
        with pytest.raises(Gone) as raised:
            await events.__anext__()

    assert (first.type, first.resource_version) == ("ADDED", "3")
    assert raised.value.namespace == NS


async def test_a_silent_watch_ends_after_the_idle_timeout() -> None:
    # given a facade and an adapter that gives up on a watch silent for 0.1 s
    async with (
        serve(Facade(MemoryCluster(namespaces=(NS,)))) as url,
        adapter(url, watch_idle_timeout=0.1) as cluster,
    ):
        listed = await cluster.list(CONFIG_MAP)

        # when nothing happens on the watch
        with anyio.fail_after(5):
            async with cluster.watch(CONFIG_MAP, resource_version=listed.resource_version) as events:
                seen = [event async for event in events]

    # then the iteration ends, to be resumed by the caller
    assert seen == []


async def test_watch_timeout_is_asked_of_the_server() -> None:
    # given an API server recording the watch query
    queries: list[dict[str, str]] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        queries.append(dict(request.query))
        response = web.StreamResponse()
        await response.prepare(request)
        return response

    async with (
        fake_api_server(handler) as url,
        adapter(url, watch_timeout=300) as cluster,
        cluster.watch(
            DGD, namespace=NS, label_selector="a=b", resource_version="4", bookmarks=True
        ) as events,
    ):
        seen = [event async for event in events]

    assert seen == []
    assert queries == [
        {
            "watch": "1",
            "resourceVersion": "4",
            "labelSelector": "a=b",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "300",
        }
    ]


async def test_emit_names_and_dates_an_event_like_the_memory_adapter() -> None:
    # given an adapter with a seeded generator and a fixed clock
    async with (
        serve(Facade(MemoryCluster(namespaces=(NS,)))) as url,
        adapter(url, rng=random.Random(3), clock=lambda: 1_767_225_600.5) as cluster,
    ):
        graph = await cluster.create(DGD, dgd("graph"))

        # when an event is emitted
        emitted = await cluster.emit(event(graph))

    # then it is named after the DGD and dated with microseconds
    assert emitted.metadata.name is not None and emitted.metadata.name.startswith("graph.")
    assert emitted.event_time == "2026-01-01T00:00:00.500000Z"


@pytest.mark.parametrize("anyio_backend", [("asyncio", backend_options(virtual=True))])
async def test_rate_limit_lets_a_burst_through_then_spaces_requests() -> None:
    # given 10 requests per second with a burst of 3
    limiter = RateLimiter(qps=10, burst=3)
    start = anyio.current_time()
    times: list[float] = []

    # when 6 requests are made at once
    for _ in range(6):
        await limiter.acquire()
        times.append(round(anyio.current_time() - start, 6))

    # then 3 go at once and the next leave 0.1 s apart
    assert times == [0.0, 0.0, 0.0, 0.1, 0.2, 0.3]


def test_rate_limit_needs_a_positive_rate() -> None:
    with pytest.raises(ValueError):
        RateLimiter(qps=0, burst=1)


def adapter_list(items: list[dict[str, object]]) -> dict[str, object]:
    return {
        "kind": "DynamoGraphDeploymentScalingAdapterList",
        "apiVersion": "nvidia.com/v1beta1",
        "metadata": {"resourceVersion": "9"},
        "items": items,
    }


def scaling_adapter(name: str, replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "7"},
        "spec": {"replicas": replicas, "dgdRef": {"name": "g", "componentName": "Worker"}},
    }


async def test_one_object_the_model_refuses_is_left_out_of_a_list_and_named() -> None:
    # given an API server whose CRD admits an adapter with replicas -1, which our model refuses
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(adapter_list([scaling_adapter("good", 2), scaling_adapter("bad", -1)]))

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when the adapters are listed
        listed = await cluster.list(DGDSA, namespace=NS)

    # then the good one is decoded, and the bad one is named with the field our model refused
    assert [a.metadata.name for a in listed.items] == ["good"]
    (refused,) = listed.rejected
    assert (refused.namespace, refused.name, refused.resource_version) == (NS, "bad", "7")
    assert "spec.replicas" in refused.error


async def test_a_large_list_is_decoded_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # given an API server answering with a list larger than the adapter decodes on the loop
    items = [scaling_adapter(f"a{n:05d}", 1) for n in range(OFF_LOOP_BYTES // 150)]

    async def handler(request: web.Request) -> web.Response:
        return web.json_response(adapter_list(items))

    threads: list[bool] = []
    decode = kube_adapter._decode_list

    def recording(resource: Any, data: bytes) -> Any:
        threads.append(threading.current_thread() is threading.main_thread())
        return decode(resource, data)

    monkeypatch.setattr(kube_adapter, "_decode_list", recording)
    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when it is listed
        listed = await cluster.list(DGDSA, namespace=NS)

    # then it was decoded whole, in a worker thread (not on the loop's thread)
    assert len(listed.items) == len(items)
    assert threads == [False]


@pytest.mark.parametrize(
    ("headers", "texts"),
    [
        (['299 - "unknown field \\"spec.bogus\\""'], ['unknown field "spec.bogus"']),
        (['299 - "a", 299 - "b" "Mon, 01 Jan 2024 00:00:00 GMT"'], ["a", "b"]),
        (['299 - "one"', '299 - "two, with a comma"'], ["one", "two, with a comma"]),
        (['199 - "not the API server\'s"', "garbage"], []),
    ],
)
def test_warning_texts_are_read_from_every_header(headers: list[str], texts: list[str]) -> None:
    assert warning_texts(headers) == texts


async def test_an_api_warning_is_logged_once_naming_the_request(caplog: pytest.LogCaptureFixture) -> None:
    # given an API server that accepts every write but warns about a field it dropped
    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        response = web.json_response(body, status=201)
        response.headers.add("Warning", '299 - "unknown field \\"spec.bogus\\""')
        return response

    async with fake_api_server(handler) as url, adapter(url) as cluster:
        # when two objects are created with the same unknown field
        for name in ("a", "b"):
            await cluster.create(CONFIG_MAP, {"metadata": {"name": name, "namespace": NS}, "bogus": 1})

    # then the warning is logged once, with the request that drew it
    warned = [r.getMessage() for r in caplog.records if r.name == "dgd.cluster.kube"]
    assert warned == [f'the API server warns about POST ConfigMap {NS}/a: unknown field "spec.bogus"']
