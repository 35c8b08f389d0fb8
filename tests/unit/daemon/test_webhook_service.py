"""The webhooks' certificates and registration in the daemon: replicas share one Secret, the leader
renews the serving certificate and every replica serves the new one, certificates managed by someone
else are re-read when they change, and the registrations point where the flags say."""

from __future__ import annotations

import base64
import datetime
import random
import shutil
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import anyio.streams.tls
import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    DEFAULT_RESOURCES,
    MUTATING_WEBHOOK_CONFIGURATION,
    SECRET,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from dgd.daemon import admission, certificate_sources, certificates
from dgd.daemon.admission import WebhookService
from dgd.daemon.registration import WebhookSettings, configurations, conversion_patch
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.config import CheckpointConfig
from tests.unit.daemon.virtual_time import VIRTUAL

pytestmark = pytest.mark.anyio

NS = "dynamo-system"
#: Real time: the client checks the served certificates against its own clock.
START = time.time()


@pytest.fixture(autouse=True)
def quick_reloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certificate_sources, "RELOAD", 0.02)


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


def rule(version: str, resource: str) -> dict[str, object]:
    return {
        "apiGroups": ["nvidia.com"],
        "apiVersions": [version],
        "operations": ["CREATE", "UPDATE"],
        "resources": [resource],
    }


def test_url_registration_points_every_webhook_and_the_conversion_at_the_address() -> None:
    settings = WebhookSettings(address="127.0.0.1:9443", register="url", secret_namespace=NS)
    bundle = b"-----BEGIN CERTIFICATE-----\n...\n"

    (_, mutating), (_, validating) = configurations(
        settings, bundle, url="https://127.0.0.1:9443", namespaces=()
    )

    assert (mutating["metadata"]["name"], validating["metadata"]["name"]) == (
        "dynamo-operator-mutating",
        "dynamo-operator-validating",
    )
    hooks = mutating["webhooks"] + validating["webhooks"]
    base = "https://127.0.0.1:9443"
    assert [(hook["name"], hook["clientConfig"]["url"], hook["rules"]) for hook in hooks] == [
        (
            "mdynamographdeployment.kb.io",
            f"{base}/mutate/nvidia.com/v1beta1/dynamographdeployments",
            [rule("v1beta1", "dynamographdeployments")],
        ),
        (
            "mdynamocomponentdeploymentv1beta1.kb.io",
            f"{base}/mutate-nvidia-com-v1beta1-dynamocomponentdeployment",
            [rule("v1beta1", "dynamocomponentdeployments")],
        ),
        (
            "vdynamographdeployment.kb.io",
            f"{base}/validate/nvidia.com/v1beta1/dynamographdeployments",
            [rule("v1beta1", "dynamographdeployments")],
        ),
        (
            "vdynamocomponentdeployment.kb.io",
            f"{base}/validate/nvidia.com/v1beta1/dynamocomponentdeployments",
            [rule("v1beta1", "dynamocomponentdeployments")],
        ),
        (
            "vdynamocheckpoint.kb.io",
            f"{base}/validate-nvidia-com-v1alpha1-dynamocheckpoint",
            [rule("v1alpha1", "dynamocheckpoints")],
        ),
    ]
    # the DCD defaulting matches its version exactly (§4.1), the others as the API server's default
    assert [hook.get("matchPolicy") for hook in hooks] == [None, "Exact", None, None, None]
    for hook in hooks:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == bundle
        assert (hook["failurePolicy"], hook["sideEffects"], hook["timeoutSeconds"]) == ("Fail", "None", 10)
        assert hook["admissionReviewVersions"] == ["v1"] and "namespaceSelector" not in hook
    conversion = conversion_patch(settings, bundle, url="https://127.0.0.1:9443")["spec"]["conversion"]
    assert conversion["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/convert",
        "caBundle": base64.b64encode(bundle).decode(),
        "service": None,
    }


def test_namespace_restricted_registration_selects_the_namespace_and_names_itself_apart() -> None:
    settings = WebhookSettings(secret_namespace="team-a-operator")

    (_, mutating), _ = configurations(settings, b"", url=None, namespaces=("team-a",))

    assert mutating["metadata"]["name"] == "dynamo-operator-mutating-team-a-operator"
    hook = mutating["webhooks"][0]
    assert hook["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}
    assert hook["clientConfig"] == {
        "service": {
            "namespace": "dynamo-system",
            "name": "dynamo-operator-webhook-service",
            "path": "/mutate/nvidia.com/v1beta1/dynamographdeployments",
        }
    }


def test_an_operator_watching_several_namespaces_selects_each_of_them() -> None:
    settings = WebhookSettings(secret_namespace="teams-operator")

    # when a restricted operator watches two namespaces (run --namespace team-a --namespace team-b)
    registered = configurations(settings, b"", url=None, namespaces=("team-a", "team-b"))

    # then every webhook selects both, and nothing else
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}
        ]
    }
    assert [hook["namespaceSelector"] for _, c in registered for hook in c["webhooks"]] == [selector] * sum(
        len(c["webhooks"]) for _, c in registered
    )


def test_under_the_checkpoint_gate_the_pod_restore_mutator_is_registered_for_pod_creates() -> None:
    settings = WebhookSettings(secret_namespace=NS)

    (_, mutating), (_, validating) = configurations(settings, b"", url=None, namespaces=(), pod_restore=True)

    # then it comes last in the mutating configuration, for pod creates only, and Ignore by default
    *others, restore = mutating["webhooks"]
    assert [hook["name"] for hook in others] == [
        "mdynamographdeployment.kb.io",
        "mdynamocomponentdeploymentv1beta1.kb.io",
    ]
    assert restore == {
        "name": "mpodcheckpointrestore.kb.io",
        "clientConfig": {
            "service": {
                "namespace": "dynamo-system",
                "name": "dynamo-operator-webhook-service",
                "path": "/mutate-core-v1-pod-checkpoint-restore",
            }
        },
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        ],
        "failurePolicy": "Ignore",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": 10,
    }
    # and the other webhooks keep their own failure policy
    assert {hook["failurePolicy"] for hook in others + validating["webhooks"]} == {"Fail"}


def test_the_pod_restore_failure_policy_is_the_flags_and_restricted_mode_selects_the_namespace() -> None:
    settings = WebhookSettings(secret_namespace="team-a-operator", pod_restore_failure_policy="Fail")

    (_, mutating), _ = configurations(settings, b"", url=None, namespaces=("team-a",), pod_restore=True)

    restore = mutating["webhooks"][-1]
    assert (restore["name"], restore["failurePolicy"]) == ("mpodcheckpointrestore.kb.io", "Fail")
    assert restore["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}


@pytest.mark.parametrize("gate", [True, False])
async def test_the_leader_registers_the_pod_restore_mutator_only_under_the_checkpoint_gate(
    gate: bool,
) -> None:
    # given a cluster serving the webhook configurations
    cluster = MemoryCluster(
        resources=(*DEFAULT_RESOURCES, MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION),
        clock=lambda: START,
        rng=random.Random(3),
        namespaces=(NS,),
    )
    wall = Wall()
    settings = WebhookSettings(address="127.0.0.1:0", secret_namespace=NS, register="service")
    gated = AdmissionSettings(operator_principal="op", checkpoint=CheckpointConfig(enabled=gate))
    key = MUTATING_WEBHOOK_CONFIGURATION.key(None, "dynamo-operator-mutating")

    # when the leader of replicas with the checkpoint gate on (or off) has registered the webhooks
    async with replica(cluster, wall, settings, gated) as leader, anyio.create_task_group() as tg:
        tg.start_soon(leader.lead)
        with anyio.fail_after(10):  # a guard against a hang, not a timing claim
            while True:
                try:
                    registered = await cluster.get(key)
                    break
                except NotFound:
                    await anyio.sleep(0.02)
        tg.cancel_scope.cancel()

    # then the pod mutator is in the mutating configuration exactly when the gate is on
    names = [hook["name"] for hook in registered["webhooks"]]
    assert ("mpodcheckpointrestore.kb.io" in names) is gate
