"""The webhooks' certificates in the daemon: replicas share one Secret, the leader renews the serving
certificate and every replica serves the new one, and certificates managed by someone else are re-read
when they change.
"""

from __future__ import annotations

import datetime
import shutil
import ssl
from pathlib import Path

import anyio
import anyio.streams.tls
import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from dgd.daemon import admission, certificate_sources, certificates
from dgd.daemon.admission import WebhookService
from dgd.daemon.registration import WebhookSettings
from tests.unit.daemon.virtual_time import VIRTUAL
from tests.unit.daemon.webhook_replicas import NS, START, Wall, held, memory, replica, served

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def quick_reloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certificate_sources, "RELOAD", 0.02)


async def test_replicas_share_the_certificates_one_of_them_made() -> None:
    cluster, wall = memory(), Wall()
    settings = WebhookSettings(address="127.0.0.1:0", secret_namespace=NS)

    # when two replicas start, one after the other, with no Secret yet
    async with replica(cluster, wall, settings) as first, replica(cluster, wall, settings) as second:
        kept = await held(cluster)
        # then both serve the one serving certificate the Secret keeps, for the Service's names
        assert (await served(first, kept.ca_cert)).serial_number == (
            await served(second, kept.ca_cert)
        ).serial_number
        names = x509.load_pem_x509_certificate(kept.cert).extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        )
        assert names.value.get_values_for_type(x509.DNSName) == settings.service_names()


async def test_the_leader_renews_before_expiry_and_every_replica_serves_the_renewal() -> None:
    cluster, wall = memory(), Wall()
    wall.now = START - 2100  # certificates made 35 minutes ago, valid for 50
    settings = WebhookSettings(address="127.0.0.1:0", secret_namespace=NS, validity=3000)
    async with (
        replica(cluster, wall, settings) as leader,
        replica(cluster, wall, settings) as standby,
    ):
        before = await held(cluster)
        async with anyio.create_task_group() as tg:
            tg.start_soon(leader.lead)
            # when two thirds of the certificate's life have passed (now)
            wall.now = START
            with anyio.fail_after(10):  # a guard against a hang, not a timing claim
                while (await held(cluster)).cert == before.cert:
                    await anyio.sleep(0.02)
                renewed = await held(cluster)
                while (
                    await served(standby, renewed.ca_cert)
                ).serial_number != x509.load_pem_x509_certificate(renewed.cert).serial_number:
                    await anyio.sleep(0.02)
            tg.cancel_scope.cancel()

    # then the CA stayed (nothing registered must change) and the new certificate lives on
    assert renewed.ca_cert == before.ca_cert
    assert renewed.not_after > before.not_after


async def peer(service: WebhookService) -> x509.Certificate:
    """The certificate a replica serves, unverified (the caller checks who signed it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # not the system's CAs: loading them is slow
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    async with await anyio.connect_tcp("127.0.0.1", service.port or 0, ssl_context=context) as stream:
        der = stream.extra(anyio.streams.tls.TLSAttribute.peer_certificate_binary)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def signed_by_one_of(cert: x509.Certificate, bundle: bytes) -> bool:
    for ca in x509.load_pem_x509_certificates(bundle):
        try:
            cert.verify_directly_issued_by(ca)
        except (ValueError, TypeError, InvalidSignature):
            continue
        return True
    return False


@pytest.mark.parametrize("anyio_backend", [VIRTUAL])
@pytest.mark.usefixtures("threads_stop_the_clock")
async def test_a_ca_rotation_registers_old_and_new_together_so_every_served_certificate_stays_trusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The wall is the loop's virtual clock, which the replicas' reload timers follow too: the
    # rotation's "three reload periods" hold exactly, however slow the machine is.
    registered: list[bytes] = []

    async def register(cluster: object, settings: WebhookSettings, bundle: bytes, **where: object) -> None:
        registered.append(bundle)

    monkeypatch.setattr(admission, "register", register)
    # reloads slow enough that a replica still serving the old certificate would be seen
    monkeypatch.setattr(certificate_sources, "RELOAD", 0.2)
    cluster, wall = memory(), Wall()
    # given a CA and a serving certificate made 35 minutes ago, both valid for 50: the CA is due
    wall.now = START - 2100
    settings = WebhookSettings(
        address="127.0.0.1:0", secret_namespace=NS, register="service", validity=3000, ca_validity=3000
    )
    async with (
        replica(cluster, wall, settings) as leader,
        replica(cluster, wall, settings) as standby,
    ):
        before = await held(cluster)
        # the wall from now on goes with the loop's clock
        started = anyio.current_time()
        wall.now = START

        async def lead_half_a_period_after_the_reloads() -> None:
            # Two processes' timers fall apart; in one loop they would run in step, and a replica
            # left serving the old certificate could hide between them.
            await anyio.sleep(certificate_sources.RELOAD / 2)
            await leader.lead()

        async with anyio.create_task_group() as tg:
            tg.start_soon(lead_half_a_period_after_the_reloads)
            distrusted: list[str] = []
            with anyio.fail_after(20):  # virtual seconds: a guard against a rotation that never ends
                while True:
                    wall.now = START + anyio.current_time() - started
                    kept = await held(cluster)
                    new_ca_only = []
                    for name, service in (("leader", leader), ("standby", standby)):
                        then = registered[-1] if registered else before.ca_cert
                        cert = await peer(service)
                        now = registered[-1] if registered else before.ca_cert
                        # when a replica is asked, what it serves is signed by a CA registered then
                        if not signed_by_one_of(cert, then + now):
                            distrusted.append(f"{name}: {cert.serial_number}")
                        new_ca_only.append(signed_by_one_of(cert, kept.ca_cert) and now == kept.ca_cert)
                    # until the rotation is over and both replicas serve a certificate of the new CA
                    if kept.ca_cert != before.ca_cert and not kept.previous_ca_cert and all(new_ca_only):
                        break
                    await anyio.sleep(0.005)
            tg.cancel_scope.cancel()

    # then no replica served a certificate the bundle registered at the time did not trust
    assert distrusted == []
    # and the old and new CA were registered together before the old one left
    assert before.ca_cert + kept.ca_cert in registered
    assert registered[-1] == kept.ca_cert
    assert registered[0] != kept.ca_cert


async def test_certificates_someone_else_manages_are_read_again_when_they_change(tmp_path: Path) -> None:
    now = datetime.datetime.fromtimestamp(START, datetime.UTC)
    first = certificates.issue(["localhost"], ["127.0.0.1"], now=now)
    second = certificates.serving(first.ca_cert, first.ca_key, ["localhost"], ["127.0.0.1"], now=now)
    for name, data in (("tls.crt", first.cert), ("tls.key", first.key), ("ca.crt", first.ca_cert)):
        (tmp_path / name).write_bytes(data)
    settings = WebhookSettings(address="127.0.0.1:0", cert_dir=str(tmp_path))

    async with replica(memory(), Wall(), settings) as service:
        assert (await served(service, first.ca_cert)).serial_number == x509.load_pem_x509_certificate(
            first.cert
        ).serial_number
        # when cert-manager writes a new certificate (key first, as a Secret volume updates at once)
        staging = tmp_path / "staging"
        staging.mkdir()
        (staging / "tls.key").write_bytes(second.key)
        (staging / "tls.crt").write_bytes(second.cert)
        shutil.move(staging / "tls.key", tmp_path / "tls.key")
        shutil.move(staging / "tls.crt", tmp_path / "tls.crt")
        # then it is served without a restart
        want = x509.load_pem_x509_certificate(second.cert).serial_number
        with anyio.fail_after(10):  # a guard against a hang
            while (await served(service, first.ca_cert)).serial_number != want:
                await anyio.sleep(0.02)
