"""Where the webhooks' certificates come from, and how they are kept current (the service that serves
them is ``dgd.daemon.admission``).

**Certificates.** ``--webhook-cert-dir DIR`` (``tls.crt``, ``tls.key``, optional ``ca.crt``) serves
certificates someone else manages (cert-manager), re-read every ``RELOAD`` seconds and swapped when
they change. Without it the operator manages its own (``OwnCertificates``): a CA and a serving
certificate for the webhook Service's DNS names (and, in ``url`` registration, the address served),
kept in a Secret so replicas share them. Any replica creates the Secret when it is absent (on
AlreadyExists it reads the winner's); every replica re-reads it every ``reload_every`` seconds and
serves what it holds; the leader renews the serving certificate once two thirds of its life has
passed, under the same CA, so nothing registered has to change.

**A CA rotation** (two thirds of the CA's life) never leaves a replica serving a certificate the API
server does not trust. The leader takes it in three steps, each once the one before has settled
(``settle``: three reload periods, so every replica has re-read the Secret):

1. a new CA is made and published beside the current one (``ca-next.crt``); the leader registers the
   bundle of both;
2. once that bundle is registered, the serving certificate is re-issued under the new CA, which
   becomes the current one; the old one stays trusted (``ca-previous.crt``) — the bundle is the same;
3. once every replica serves the new certificate, the old CA leaves the bundle.
"""

from __future__ import annotations

import base64
import datetime
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec

from dgd.cluster.errors import AlreadyExists, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import SECRET
from dgd.daemon import certificates
from dgd.daemon.certificates import Certificates
from dgd.daemon.registration import WebhookSettings
from dgd.messages.base import JSONObject

logger = logging.getLogger("dgd.webhooks")

#: Seconds between two reads of the certificate files or Secret (at most; see ``reload_every``).
RELOAD = 10.0
#: The fraction of a certificate's life after which the leader renews it (a CA: rotates it).
RENEW_AFTER = 2 / 3
#: Reload periods a step of a CA rotation waits for every replica to have re-read the Secret.
SETTLE_RELOADS = 3
#: Extra Secret keys of a CA rotation.
NEXT_CA, NEXT_CA_KEY, PREVIOUS_CA = "ca-next.crt", "ca-next.key", "ca-previous.crt"


def reload_every(settings: WebhookSettings) -> float:
    """How often the certificates are re-read: every ``RELOAD`` seconds, more often for certificates
    so short-lived (a test's) that a rotation's steps would not fit in their life otherwise."""
    return min(RELOAD, settings.validity / 30, settings.ca_validity / 30)


def _pem(secret: JSONObject, key: str) -> bytes:
    return base64.b64decode((secret.get("data") or {}).get(key) or "")


def from_secret(secret: JSONObject) -> Certificates | None:
    """The certificates a Secret holds (``None`` if it lacks one)."""
    parts = {key: _pem(secret, key) for key in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    if not all(parts.values()):
        return None
    return Certificates(
        ca_cert=parts["ca.crt"],
        ca_key=parts["ca.key"],
        cert=parts["tls.crt"],
        key=parts["tls.key"],
        not_after=certificates.expiry(parts["tls.crt"]),
        next_ca_cert=_pem(secret, NEXT_CA),
        next_ca_key=_pem(secret, NEXT_CA_KEY),
        previous_ca_cert=_pem(secret, PREVIOUS_CA),
    )


def as_secret(namespace: str, name: str, issued: Certificates) -> JSONObject:
    """The Secret that keeps ``issued`` (a ``kubernetes.io/tls`` Secret with the CA beside)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "dynamo-operator"},
        },
        "type": "kubernetes.io/tls",
        "data": {
            "ca.crt": base64.b64encode(issued.ca_cert).decode(),
            "ca.key": base64.b64encode(issued.ca_key).decode(),
            "tls.crt": base64.b64encode(issued.cert).decode(),
            "tls.key": base64.b64encode(issued.key).decode(),
            **{
                key: base64.b64encode(value).decode()
                for key, value in (
                    (NEXT_CA, issued.next_ca_cert),
                    (NEXT_CA_KEY, issued.next_ca_key),
                    (PREVIOUS_CA, issued.previous_ca_cert),
                )
                if value
            },
        },
    }


class CertificateDirectory:
    """Certificates someone else manages, in ``tls.crt``, ``tls.key`` and (optionally) ``ca.crt``."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def read(self) -> Certificates:
        """What the files hold now; ``OSError`` naming the file that cannot be read."""
        cert = (self.folder / "tls.crt").read_bytes()
        key = (self.folder / "tls.key").read_bytes()
        ca_file = self.folder / "ca.crt"
        ca = ca_file.read_bytes() if ca_file.exists() else b""
        return Certificates(ca_cert=ca, ca_key=b"", cert=cert, key=key, not_after=certificates.expiry(cert))

    async def current(self) -> Certificates:
        return await anyio.to_thread.run_sync(self.read)


class OwnCertificates:
    """The operator's own CA and serving certificate, kept in a Secret (see the module)."""

    def __init__(
        self,
        cluster: Cluster,
        settings: WebhookSettings,
        *,
        addresses: Sequence[str] = (),
        wall: Callable[[], float],
    ) -> None:
        self._cluster = cluster
        self._settings = settings
        self._addresses = list(addresses)
        self._wall = wall
        self._validity = datetime.timedelta(seconds=settings.validity)

    def _now(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self._wall(), datetime.UTC)

    async def _issue(self) -> Certificates:
        return await anyio.to_thread.run_sync(
            lambda: certificates.issue(
                self._settings.service_names(),
                self._addresses,
                now=self._now(),
                ca_validity=datetime.timedelta(seconds=self._settings.ca_validity),
                validity=self._validity,
            )
        )

    async def _read(self) -> JSONObject | None:
        key = SECRET.key(self._settings.secret_namespace, self._settings.secret_name)
        try:
            return await self._cluster.get(key)
        except NotFound:
            return None

    async def current(self) -> Certificates:
        """What the Secret holds, creating it first when it is absent or incomplete."""
        found = await self._read()
        held = from_secret(found) if found is not None else None
        if held is not None and self._covers(held):
            return held
        issued = await self._issue()
        secret = as_secret(self._settings.secret_namespace, self._settings.secret_name, issued)
        try:
            if found is None:
                await self._cluster.create(SECRET, secret)
            else:
                secret["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
                await self._cluster.replace(SECRET, secret)
        except AlreadyExists:  # another replica was first: serve what it made
            found = await self._read()
            held = from_secret(found) if found is not None else None
            if held is not None:
                return held
            raise
        logger.info("made the webhook certificates (Secret %s/%s)", *self._where())
        return issued

    def _where(self) -> tuple[str, str]:
        return self._settings.secret_namespace, self._settings.secret_name

    def _covers(self, held: Certificates) -> bool:
        """Whether the held certificates can still serve: the CA has not expired (an operator off for
        longer than a rotation's notice starts over) and the serving certificate names this replica's
        addresses (``url`` mode)."""
        if self._wall() >= certificates.expiry(held.ca_cert):
            return False
        if not self._addresses:
            return True
        return certificates.names_addresses(held.cert, self._addresses)

    def _due(self, cert: bytes) -> bool:
        """Whether ``RENEW_AFTER`` of the certificate's life has passed (counted from when it was made:
        certificates start ``BACKDATE`` before)."""
        made = _made(cert)
        return self._wall() >= made + RENEW_AFTER * (certificates.expiry(cert) - made)

    async def advance(self, held: Certificates, *, published: bool) -> Certificates:
        """The leader's duty, one step per call: a step of a CA rotation when one is due or under way
        (see the module; ``published``: the bundle of ``held`` is registered), else a new serving
        certificate under the same CA once ``RENEW_AFTER`` of its life has passed; ``held`` when
        nothing is due."""
        settle = SETTLE_RELOADS * reload_every(self._settings)
        now = self._wall()
        if held.previous_ca_cert:
            if now < _made(held.cert) + settle:
                return held
            return await self._keep(
                msgspec.structs.replace(held, previous_ca_cert=b""),
                "the previous webhook CA is no longer trusted",
            )
        if held.next_ca_cert and published and now >= _made(held.next_ca_cert) + settle:
            signed = await self._serving(held.next_ca_cert, held.next_ca_key)
            return await self._keep(
                msgspec.structs.replace(signed, previous_ca_cert=held.ca_cert),
                "the webhook serving certificate is signed by the new CA; the old one is trusted a while",
            )
        if not held.next_ca_cert and self._due(held.ca_cert):
            validity = datetime.timedelta(seconds=self._settings.ca_validity)
            cert, key = await anyio.to_thread.run_sync(lambda: certificates.authority(self._now(), validity))
            return await self._keep(
                msgspec.structs.replace(held, next_ca_cert=cert, next_ca_key=key),
                "a new webhook CA is published beside the current one",
            )
        if not self._due(held.cert):
            return held
        renewed = await self._serving(held.ca_cert, held.ca_key)
        return await self._keep(
            msgspec.structs.replace(renewed, next_ca_cert=held.next_ca_cert, next_ca_key=held.next_ca_key),
            "renewed the webhook serving certificate",
        )

    async def _serving(self, ca_cert: bytes, ca_key: bytes) -> Certificates:
        return await anyio.to_thread.run_sync(
            lambda: certificates.serving(
                ca_cert,
                ca_key,
                self._settings.service_names(),
                self._addresses,
                now=self._now(),
                validity=self._validity,
            )
        )

    async def _keep(self, wanted: Certificates, what: str) -> Certificates:
        """Write ``wanted`` into the Secret (a conflict: another leader wrote first, tried again later)."""
        found = await self._read()
        secret = as_secret(self._settings.secret_namespace, self._settings.secret_name, wanted)
        if found is not None:
            secret["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
            await self._cluster.replace(SECRET, secret)
        else:
            await self._cluster.create(SECRET, secret)
        logger.info("%s (Secret %s/%s)", what, *self._where())
        return wanted


def _made(cert: bytes) -> float:
    """When a certificate the operator made was made (it starts ``BACKDATE`` before)."""
    return certificates.issued_at(cert) + certificates.BACKDATE.total_seconds()
