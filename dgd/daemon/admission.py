"""The webhooks' service in the daemon: every replica serves, leading or not; the leader registers
(``dgd.daemon.registration``) and keeps the operator's own certificates current
(``dgd.daemon.certificate_sources``: where the certificates come from, renewal and CA rotation).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack

import anyio
import msgspec

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.daemon.certificate_sources import CertificateDirectory, OwnCertificates, reload_every
from dgd.daemon.certificates import Certificates
from dgd.daemon.lookups import Discover
from dgd.daemon.registration import WebhookSettings, operator_principal, register
from dgd.daemon.servers import Server, parse_address
from dgd.daemon.webhooks import TLS, Converter, webhook_app
from dgd.domain.admission.webhooks import AdmissionSettings

logger = logging.getLogger("dgd.webhooks")

#: What reading, renewing or registering the certificates may raise: the loops log it and try again.
_RETRIED = (OSError, ValueError, ClusterError)


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
        restricted: tuple[str, ...],
        wall: Callable[[], float],
        converter: Converter | None,
        discover: Discover | None = None,
    ) -> None:
        self._cluster = cluster
        self._discover = discover
        self.settings = settings
        self._admission = admission
        self._restricted = restricted
        self._converter = None if restricted else converter
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
        self._reload = reload_every(settings)

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
        app = webhook_app(
            admission, converter=self._converter, cluster=self._cluster, discover=self._discover
        )
        server = await Server.start(app, self._host, self._port, tls=self._tls.context)
        stack.push_async_callback(server.stop)
        stack.callback(self._tls.close)
        self.port = server.port
        return server.port

    async def run(self) -> None:
        while self._held is None:
            try:
                self._held = await self._source.current()
            except _RETRIED as error:
                self._trying_again("the webhook certificates cannot be had yet", error)
                await anyio.sleep(self._reload)
        self._tls.load(self._held.cert, self._held.key)
        self._certified.set()
        # Where they listen, so a run outside a pod shows it serves loopback only (its default).
        where = f"{self._host}:{self.port}" if self._host else f"every interface, port {self.port}"
        logger.info("serving the webhooks on %s (certificate expires %s)", where, _when(self._held.not_after))
        while True:  # what the files or the Secret hold, every reload period
            await anyio.sleep(self._reload)
            try:
                held = await self._source.current()
            except _RETRIED as error:
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
                    published = self.settings.register == "none" or registered == held.bundle
                    held = self._held = await self._source.advance(held, published=published)
                    self._tls.load(held.cert, held.key)
                if self.settings.register != "none" and held.bundle != registered:
                    url = self.url if self.settings.register == "url" else None
                    await register(
                        self._cluster,
                        self.settings,
                        held.bundle,
                        url=url,
                        namespaces=self._restricted,
                        pod_restore=self._admission.checkpoint_enabled,
                    )
                    registered = held.bundle
            except _RETRIED as error:
                self._trying_again("the webhooks could not be registered or renewed", error)
            await anyio.sleep(self._reload)

    def _trying_again(self, problem: str, error: Exception) -> None:
        """Log ``problem`` (with ``error``) as retried after one reload period."""
        logger.error("%s (%s); trying again in %gs", problem, error, self._reload)
