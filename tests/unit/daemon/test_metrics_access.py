"""Secure metrics: ``/metrics`` answered only to a bearer token the API server authenticates (a
TokenReview) for a user it allows to get ``/metrics`` (a SubjectAccessReview); 401, 403 or 500 otherwise;
decisions cached for their time to live."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import anyio
import pytest
from prometheus_client import CollectorRegistry, Counter

from dgd.cluster.errors import Forbidden, ServerError
from dgd.daemon.metrics_access import (
    ALLOWED_TTL,
    AUTHENTICATED_TTL,
    DENIED_TTL,
    Expiring,
    MetricsAccess,
    bearer_token,
)
from dgd.daemon.servers import Server, metrics_app
from tests.unit.daemon.reviews import OTHER, READER, SA_GROUPS, ReviewingCluster, service_account

pytestmark = pytest.mark.anyio

TOKENS = {"reader-token": service_account(READER), "other-token": service_account(OTHER)}
GRANTS = {(READER, "/metrics", "get")}


class Clock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def api() -> ReviewingCluster:
    return ReviewingCluster(tokens=dict(TOKENS), grants=set(GRANTS))


@asynccontextmanager
async def served(access: MetricsAccess) -> AsyncIterator[int]:
    """A metrics server guarded by ``access`` (plain HTTP: TLS is the daemon tests' business)."""
    registry = CollectorRegistry()
    Counter("scrapes_seen", "A series to find in the page", registry=registry).inc()
    server = await Server.start(metrics_app(registry, access.middleware()), "127.0.0.1", 0)
    try:
        yield server.port
    finally:
        await server.stop()


async def scrape(port: int, authorization: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics", headers=headers) as response,
    ):
        return response.status, await response.text()


async def test_a_scraper_allowed_to_get_metrics_reads_them() -> None:
    # given the API server knows the reader's token and allows it to get /metrics
    cluster = api()
    async with served(MetricsAccess(cluster)) as port:
        # when the reader scrapes with its token
        status, body = await scrape(port, "Bearer reader-token")

    # then it reads the page
    assert status == 200 and "scrapes_seen_total 1.0" in body
    # and the token was reviewed, then the user it belongs to asked about, with its groups and uid
    assert cluster.reviews == ["TokenReview", "SubjectAccessReview"]
    token_review, access_review = cluster.asked
    assert token_review["spec"] == {"token": "reader-token"}
    assert access_review["spec"] == {
        "user": READER,
        "uid": "uid-of-prometheus",
        "groups": SA_GROUPS,
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


@pytest.mark.parametrize("authorization", [None, "Basic cmVhZGVyOnNlY3JldA==", "Bearer ", "reader-token"])
async def test_a_request_without_a_bearer_token_is_answered_401_without_asking_the_api_server(
    authorization: str | None,
) -> None:
    cluster = api()
    async with served(MetricsAccess(cluster)) as port:
        # when a request carries no bearer token
        status, body = await scrape(port, authorization)
    # then it is refused as unauthenticated, and no review was asked
    assert status == 401 and "bearer token" in body
    assert cluster.reviews == []


async def test_a_token_the_api_server_does_not_authenticate_is_answered_401() -> None:
    cluster = api()
    async with served(MetricsAccess(cluster)) as port:
        # when a request carries a token the API server did not issue
        status, _ = await scrape(port, "Bearer forged-token")
    # then it is refused as unauthenticated, after the TokenReview only
    assert status == 401
    assert cluster.reviews == ["TokenReview"]


async def test_an_authenticated_user_not_allowed_to_get_metrics_is_answered_403() -> None:
    cluster = api()
    async with served(MetricsAccess(cluster)) as port:
        # when a ServiceAccount with no grant on /metrics scrapes with its own, valid token
        status, body = await scrape(port, "bearer other-token")
    # then it is refused as forbidden, naming the user
    assert status == 403 and OTHER in body
    assert cluster.reviews == ["TokenReview", "SubjectAccessReview"]


@pytest.mark.parametrize("kind", ["TokenReview", "SubjectAccessReview"])
@pytest.mark.parametrize(
    "error",
    [ServerError("etcdserver: request timed out"), Forbidden("cannot create resource")],
    ids=["server error", "operator not allowed to review"],
)
async def test_a_review_that_fails_is_answered_500_and_not_remembered(kind: str, error: Exception) -> None:
    # given the API server fails one kind of review
    cluster = api()
    cluster.failures[kind] = error  # type: ignore[assignment]
    async with served(MetricsAccess(cluster)) as port:
        # when the reader scrapes
        status, body = await scrape(port, "Bearer reader-token")
        # then the scrape fails on the server's side, not as bad credentials
        assert status == 500 and "the operator's log says why" in body

        # and once the API server answers again, the next scrape is reviewed afresh and served
        cluster.failures.clear()
        assert (await scrape(port, "Bearer reader-token"))[0] == 200


async def test_a_review_the_api_server_does_not_answer_fails_its_scrape_alone() -> None:
    # given a reader whose access is known, and an API server that then stops answering reviews
    cluster = api()
    async with served(MetricsAccess(cluster, timeout=0.5)) as port:
        assert (await scrape(port, "Bearer reader-token"))[0] == 200
        cluster.hang = True
        answers: list[int] = []

        async def stranger() -> None:
            answers.append((await scrape(port, "Bearer other-token"))[0])

        # when another user's scrape waits for its review
        async with anyio.create_task_group() as tg:
            tg.start_soon(stranger)
            while len(cluster.reviews) < 3:  # its TokenReview has been asked
                await anyio.sleep(0.01)
            # then the reader is served meanwhile (from what is remembered)
            assert (await scrape(port, "Bearer reader-token"))[0] == 200
            assert answers == []
        # and the waiting scrape is answered 500 once the review times out
        assert answers == [500]


async def test_decisions_are_remembered_for_their_time_to_live() -> None:
    clock = Clock()
    cluster = api()
    async with served(MetricsAccess(cluster, clock=clock)) as port:
        # given the reader and the other user scraped once each
        assert (await scrape(port, "Bearer reader-token"))[0] == 200
        assert (await scrape(port, "Bearer other-token"))[0] == 403
        assert len(cluster.reviews) == 4

        # when they scrape again before any time to live ends, then nothing more is asked
        assert (await scrape(port, "Bearer reader-token"))[0] == 200
        assert (await scrape(port, "Bearer other-token"))[0] == 403
        assert len(cluster.reviews) == 4

        # when the denial's time to live has passed: only the other user's access is asked again
        clock.now = DENIED_TTL
        await scrape(port, "Bearer reader-token")
        await scrape(port, "Bearer other-token")
        assert cluster.reviews[4:] == ["SubjectAccessReview"]

        # when the tokens' has passed too: both tokens are reviewed again, the reader's access is still known
        clock.now = AUTHENTICATED_TTL
        del cluster.reviews[:]
        await scrape(port, "Bearer reader-token")
        assert cluster.reviews == ["TokenReview"]

        # when the allowance's has passed as well, the reader's access is asked again
        clock.now = AUTHENTICATED_TTL + ALLOWED_TTL
        del cluster.reviews[:]
        await scrape(port, "Bearer reader-token")
        assert cluster.reviews == ["TokenReview", "SubjectAccessReview"]


async def test_a_revoked_grant_stops_the_scrapes_once_the_allowance_expires() -> None:
    clock = Clock()
    cluster = api()
    async with served(MetricsAccess(cluster, clock=clock)) as port:
        assert (await scrape(port, "Bearer reader-token"))[0] == 200
        # when the reader's binding is removed
        cluster.grants.clear()
        # then it still reads until what was allowed expires, then it is refused
        assert (await scrape(port, "Bearer reader-token"))[0] == 200
        clock.now = ALLOWED_TTL
        assert (await scrape(port, "Bearer reader-token"))[0] == 403


def test_the_cache_drops_its_oldest_entries_beyond_its_size() -> None:
    # given a cache of two entries
    cache: Expiring[str, int] = Expiring(lambda: 0.0, size=2)
    # when three are put
    for index, key in enumerate("abc"):
        cache.put(key, index, ttl=60.0)
    # then the first is gone, the others kept
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, 1, 2)


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer  abc ", "abc"),
        ("BEARER abc", "abc"),
        ("Bearer", None),
        ("Token abc", None),
    ],
)
def test_the_bearer_token_is_read_as_the_api_server_reads_it(header: str, token: str | None) -> None:
    assert bearer_token(header) == token
