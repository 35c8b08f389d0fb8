"""The kube adapter's error responses, transport failures, throttling and its own rate limit."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from aiohttp import web

from dgd.cluster.errors import Forbidden, Invalid, NotFound, ServerError, Timeout, TooManyRequests
from dgd.cluster.kube.rate import RateLimiter
from dgd.cluster.resources import CONFIG_MAP
from dgd.sim.clock import backend_options
from tests.unit.cluster.kube_server import NS, adapter, fake_api_server

pytestmark = pytest.mark.anyio


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
