"""The daemon's secure metrics: HTTPS with a certificate of its own or a mounted one, re-read when the
mounted one changes, and only authorised scrapers served."""

from __future__ import annotations

import datetime
import ssl
import time
from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
import anyio
import anyio.to_thread
import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from dgd.daemon import certificates
from dgd.daemon.certificates import Certificates
from dgd.daemon.metrics_serving import SecureMetrics
from dgd.daemon.servers import Server, metrics_app
from tests.unit.daemon.harness import daemon, installed, running
from tests.unit.daemon.reviews import OTHER, READER, ReviewingCluster, service_account
from tests.unit.daemon.virtual_time import VIRTUAL

pytestmark = pytest.mark.anyio

TOKENS = {"reader-token": service_account(READER), "other-token": service_account(OTHER)}


async def get(url: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=False) as response,
    ):
        return response.status


async def test_the_daemon_serves_metrics_over_https_to_authorised_scrapers_only() -> None:
    # given a daemon with secure metrics, whose review client reaches an API server that knows two
    # ServiceAccounts' tokens and lets one of them get /metrics (the operator's own client reviews nothing)
    clock, server = await installed()
    reviews = ReviewingCluster(server.client(), tokens=dict(TOKENS), grants={(READER, "/metrics", "get")})
    a = daemon(server.client(), clock, "a", metrics_secure=True, review_cluster=reviews)
    async with running(a):
        metrics = f"https://127.0.0.1:{a.metrics_port}/metrics"
        # when it is scraped over plain HTTP, then no page is served
        with pytest.raises(aiohttp.ClientError):
            await get(f"http://127.0.0.1:{a.metrics_port}/metrics", "reader-token")
        # when scraped over HTTPS: without a token 401, as the other account 403, as the reader 200
        assert await get(metrics) == 401
        assert await get(metrics, "other-token") == 403
        assert await get(metrics, "reader-token") == 200
        # and each token was checked through the review client: the other's, then the reader's
        assert reviews.reviews == ["TokenReview", "SubjectAccessReview"] * 2
        # and the probes stay plain HTTP, for the kubelet
        assert await get(f"http://127.0.0.1:{a.probe_port}/healthz") == 200
        # and the certificate is the replica's own, for its host name, localhost and 127.0.0.1
        pem = await anyio.to_thread.run_sync(ssl.get_server_certificate, ("127.0.0.1", a.metrics_port))
    names = x509.load_pem_x509_certificate(pem.encode()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "localhost" in names.value.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def write(folder: Path, made: Certificates) -> None:
    for name, data in (("tls.crt", made.cert), ("tls.key", made.key)):
        (folder / name).write_bytes(data)


def made(now: float) -> Certificates:
    return certificates.issue(["localhost"], now=datetime.datetime.fromtimestamp(now, datetime.UTC))


async def handshake(port: int, ca: bytes) -> bool:
    """Whether a client that trusts only ``ca`` completes a TLS handshake with the server on ``port``."""
    context = ssl.create_default_context(cadata=ca.decode())
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port, ssl_context=context, tls_hostname="localhost")
    except (ssl.SSLError, OSError):
        return False
    await stream.aclose()
    return True


@pytest.mark.parametrize("anyio_backend", [VIRTUAL])
@pytest.mark.usefixtures("threads_stop_the_clock")
async def test_a_mounted_certificate_is_served_and_its_replacement_picked_up(tmp_path: Path) -> None:
    # given a certificate mounted in a folder, served by the metrics server
    first = made(time.time())
    write(tmp_path, first)
    secure = SecureMetrics(ReviewingCluster(), cert_dir=str(tmp_path), wall=time.time, reload=0.05)
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        context = await secure.start(stack)
        app = metrics_app(CollectorRegistry(), secure.access.middleware())
        server = await Server.start(app, "127.0.0.1", 0, tls=context)
        stack.push_async_callback(server.stop)
        tg.start_soon(secure.run)
        # then a client that trusts its CA connects
        assert await handshake(server.port, first.ca_cert)

        # when the files are replaced by a certificate of another CA (cert-manager renewing them)
        second = made(time.time())
        write(tmp_path, second)

        # then the new one is served from a reload on (virtual seconds), and the old CA no longer verifies it
        with anyio.move_on_after(10) as waited:
            while not await handshake(server.port, second.ca_cert):
                await anyio.sleep(0.05)
        assert not waited.cancelled_caught, "the replacement was not served within 10 s of reloads"
        assert not await handshake(server.port, first.ca_cert)
        tg.cancel_scope.cancel()


async def test_a_mounted_certificate_that_cannot_be_read_fails_the_start_naming_it(tmp_path: Path) -> None:
    # given a folder without tls.crt
    secure = SecureMetrics(ReviewingCluster(), cert_dir=str(tmp_path), wall=time.time)
    # when the metrics server starts, then it fails, naming the folder and the file
    async with AsyncExitStack() as stack:
        with pytest.raises(OSError) as failed:
            await secure.start(stack)
    assert failed.value.strerror is not None
    assert str(tmp_path) in failed.value.strerror and "tls.crt" in failed.value.strerror


@pytest.mark.parametrize("anyio_backend", [VIRTUAL])
@pytest.mark.usefixtures("threads_stop_the_clock")
async def test_the_operators_own_certificate_is_made_anew_once_two_thirds_of_its_life_has_passed() -> None:
    # given the metrics server's own certificate, made now
    now = [time.time()]
    secure = SecureMetrics(ReviewingCluster(), cert_dir=None, wall=lambda: now[0], reload=0.01)
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        await secure.start(stack)
        first = secure.certificate
        assert first is not None
        tg.start_soon(secure.run)
        # when three quarters of its life have passed
        now[0] += 0.75 * (first.not_after - now[0])
        # then another one is served from a reload on (virtual seconds)
        with anyio.move_on_after(10) as waited:
            while secure.certificate is first:
                await anyio.sleep(0.01)
        assert not waited.cancelled_caught, "no new certificate within 10 s of reloads"
        assert secure.certificate is not None and secure.certificate.cert != first.cert
        tg.cancel_scope.cancel()
