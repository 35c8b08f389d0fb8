"""Daemon replicas serving the webhooks over a shared memory cluster, on a wall clock the tests move, and
what they serve.
"""

from __future__ import annotations

import random
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import anyio.streams.tls
from cryptography import x509

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    SECRET,
)
from dgd.daemon import certificate_sources, certificates
from dgd.daemon.admission import WebhookService
from dgd.daemon.registration import WebhookSettings
from dgd.domain.admission.webhooks import AdmissionSettings

NS = "dynamo-system"
#: Real time: the client checks the served certificates against its own clock.
START = time.time()


#: What admission depends on, for a replica with the checkpoint gate off.
OPERATOR = AdmissionSettings(operator_principal="op")


class Wall:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def replica(
    cluster: MemoryCluster,
    wall: Wall,
    settings: WebhookSettings,
    admission_settings: AdmissionSettings = OPERATOR,
) -> AsyncIterator[WebhookService]:
    service = WebhookService(
        cluster,
        settings,
        admission_settings,
        restricted=(),
        wall=wall,
        converter=None,
    )
    async with AsyncExitStack() as stack, anyio.create_task_group() as tg:
        await service.start(stack)
        tg.start_soon(service.run)
        await service._certified.wait()
        yield service
        tg.cancel_scope.cancel()


async def served(service: WebhookService, ca: bytes) -> x509.Certificate:
    context = ssl.create_default_context(cadata=ca.decode())
    context.check_hostname = False
    async with await anyio.connect_tcp("127.0.0.1", service.port or 0, ssl_context=context) as stream:
        der = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate_binary)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def memory() -> MemoryCluster:
    return MemoryCluster(clock=lambda: START, rng=random.Random(3), namespaces=(NS,))


async def held(cluster: MemoryCluster) -> certificates.Certificates:
    secret = await cluster.get(SECRET.key(NS, WebhookSettings().secret_name))
    found = certificate_sources.from_secret(secret)
    assert found is not None
    return found
