"""The webhooks' life in the daemon: where their certificates come from, and the service that serves
them (registration is ``dgd.daemon.registration``).

**Certificates.** ``--webhook-cert-dir DIR`` (``tls.crt``, ``tls.key``, optional ``ca.crt``) serves
certificates someone else manages (cert-manager), re-read every ``RELOAD`` seconds and swapped when
they change. Without it the operator manages its own (``OwnCertificates``): a CA and a serving
certificate for the webhook Service's DNS names (and, in ``url`` registration, the address served),
kept in a Secret so replicas share them. Any replica creates the Secret when it is absent (on
AlreadyExists it reads the winner's); every replica re-reads it every ``RELOAD`` seconds and serves
what it holds; the leader renews the serving certificate once two thirds of its life has passed,
under the same CA, so nothing registered has to change.

**The service** (``WebhookService``): every replica serves, leading or not; the leader registers.
"""

from __future__ import annotations

import base64
import datetime
import logging
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import anyio.to_thread
import msgspec

from dgd.cluster.errors import AlreadyExists, ClusterError, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import (
    SECRET,
)
from dgd.daemon import certificates
from dgd.daemon.certificates import Certificates
from dgd.daemon.registration import WebhookSettings, operator_principal, register
from dgd.daemon.servers import Server, parse_address
from dgd.daemon.webhooks import TLS, Converter, webhook_app
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.base import JSONObject

logger = logging.getLogger("dgd.webhooks")

#: Seconds between two reads of the certificate files or Secret.
RELOAD = 10.0
#: The fraction of a serving certificate's life after which the leader renews it.
RENEW_AFTER = 2 / 3


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
                self._settings.service_names(), self._addresses, now=self._now(), validity=self._validity
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
        """Whether the held serving certificate names this replica's addresses (``url`` mode)."""
        if not self._addresses:
            return True
        return certificates.names_addresses(held.cert, self._addresses)

    async def renew_if_due(self, held: Certificates) -> Certificates:
        """A new serving certificate under the same CA once ``RENEW_AFTER`` of its life has passed
        (the leader's duty); the held one otherwise. The CA stays, so nothing else must change."""
        # Certificates start BACKDATE before they are made: their life is counted from when they were.
        issued_at = certificates.issued_at(held.cert) + certificates.BACKDATE.total_seconds()
        if self._wall() < issued_at + RENEW_AFTER * (held.not_after - issued_at):
            return held
        renewed = await anyio.to_thread.run_sync(
            lambda: certificates.serving(
                held.ca_cert,
                held.ca_key,
                self._settings.service_names(),
                self._addresses,
                now=self._now(),
                validity=self._validity,
            )
        )
        found = await self._read()
        secret = as_secret(self._settings.secret_namespace, self._settings.secret_name, renewed)
        if found is not None:
            secret["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
            await self._cluster.replace(SECRET, secret)
        else:
            await self._cluster.create(SECRET, secret)
        logger.info("renewed the webhook serving certificate (Secret %s/%s)", *self._where())
        return renewed


def _when(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat()


class WebhookService:
    """The webhooks of one replica (see the module): ``start`` binds the HTTPS server (an address
    in use fails the start, as the other servers' do), ``run`` gets the certificates and keeps them
    current (retrying while the Secret cannot be read or made), ``lead`` does the leader's part:
    registration and renewal."""

    def __init__(
        self,
        cluster: Cluster,
        settings: WebhookSettings,
        admission: AdmissionSettings,
        *,
        restricted: str | None,
        wall: Callable[[], float],
        converter: Converter | None,
    ) -> None:
        self._cluster = cluster
        self.settings = settings
        self._admission = admission
        self._restricted = restricted
        self._converter = converter if restricted is None else None
        self._tls = TLS()
        self._held: Certificates | None = None
        self._certified = anyio.Event()
        where = parse_address(settings.address)
        assert where is not None, "a webhook service needs an address"
        self._host, self._port = where
        self._source: CertificateDirectory | OwnCertificates = (
            CertificateDirectory(settings.cert_dir)
            if settings.cert_dir
            else OwnCertificates(
                cluster,
                settings,
                addresses=[self._host] if settings.register == "url" and self._host else [],
                wall=wall,
            )
        )
        self.port: int | None = None

    @property
    def url(self) -> str:
        """``https://HOST:PORT`` of the server (``url`` registration)."""
        host = f"[{self._host}]" if self._host and ":" in self._host else self._host
        return f"https://{host}:{self.port}"

    async def start(self, stack: AsyncExitStack) -> int:
        admission = self._admission
        if admission.operator_principal is None:
            admission = msgspec.structs.replace(
                admission, operator_principal=await operator_principal(self._cluster)
            )
        logger.info(
            "admission takes %s as the operator's principal", admission.operator_principal or "nobody"
        )
        app = webhook_app(admission, converter=self._converter, cluster=self._cluster)
        server = await Server.start(app, self._host, self._port, tls=self._tls.context)
        stack.push_async_callback(server.stop)
        stack.callback(self._tls.close)
        self.port = server.port
        return server.port

    async def run(self) -> None:
        while self._held is None:
            try:
                self._held = await self._source.current()
            except (OSError, ValueError, ClusterError) as error:
                logger.error(
                    "the webhook certificates cannot be had yet (%s); trying again in %gs", error, RELOAD
                )
                await anyio.sleep(RELOAD)
        self._tls.load(self._held.cert, self._held.key)
        self._certified.set()
        logger.info(
            "serving the webhooks on port %s (certificate expires %s)", self.port, _when(self._held.not_after)
        )
        while True:  # what the files or the Secret hold, every RELOAD seconds
            await anyio.sleep(RELOAD)
            try:
                held = await self._source.current()
            except (OSError, ValueError, ClusterError) as error:
                logger.warning("the webhook certificates could not be re-read: %s", error)
                continue
            self._held = held
            if self._tls.load(held.cert, held.key):
                logger.info("serving a new webhook certificate (expires %s)", _when(held.not_after))

    async def lead(self) -> None:
        await self._certified.wait()
        registered: bytes | None = None
        while True:
            try:
                held = self._held
                assert held is not None
                if isinstance(self._source, OwnCertificates):
                    held = self._held = await self._source.renew_if_due(held)
                    self._tls.load(held.cert, held.key)
                if self.settings.register != "none" and held.ca_cert != registered:
                    url = self.url if self.settings.register == "url" else None
                    await register(
                        self._cluster,
                        self.settings,
                        held.ca_cert,
                        url=url,
                        namespace=self._restricted,
                        pod_restore=self._admission.checkpoint_enabled,
                    )
                    registered = held.ca_cert
            except (OSError, ValueError, ClusterError) as error:
                logger.error(
                    "the webhooks could not be registered or renewed (%s); trying again in %gs", error, RELOAD
                )
            await anyio.sleep(RELOAD)
