"""Secure metrics: ``/metrics`` over HTTPS (TLS 1.2 or later), to authorised scrapers only
(``dgd.daemon.metrics_access``).

The certificate comes from where the webhooks' would: ``--metrics-cert-dir DIR`` serves ``DIR/tls.crt``
and ``DIR/tls.key``, managed by someone else (cert-manager, a mounted Secret), re-read every ``RELOAD``
seconds and swapped when they change (``CertificateDirectory``). Without it, each replica makes its own
when it starts, as controller-runtime's metrics server does: a certificate for the host's name,
``localhost`` and ``127.0.0.1``, signed by a CA made for it alone and never shared (scrapers do not
verify it: Prometheus with ``insecure_skip_verify``, or mount a certificate they trust), made anew once
two thirds of its life has passed.
"""

from __future__ import annotations

import datetime
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from contextlib import AsyncExitStack

import anyio
import anyio.to_thread

from dgd.cluster.protocol import Cluster
from dgd.daemon import certificates
from dgd.daemon.certificate_sources import RELOAD, RENEW_AFTER, CertificateDirectory
from dgd.daemon.certificates import Certificates
from dgd.daemon.metrics_access import MetricsAccess
from dgd.daemon.webhooks import TLS

logger = logging.getLogger("dgd.metrics")


class SecureMetrics:
    """The metrics server's TLS and access checks. ``start`` loads the first certificate (an
    ``OSError`` naming the file when a mounted one cannot be read) and gives the context to serve
    with; ``run`` keeps the certificate current until cancelled."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        cert_dir: str | None,
        wall: Callable[[], float],
        reload: float = RELOAD,
    ) -> None:
        self.access = MetricsAccess(cluster)
        self._tls = TLS(prefix="dgd-metrics-")
        self._directory = CertificateDirectory(cert_dir) if cert_dir else None
        self._wall = wall
        self._reload = reload
        self._held: Certificates | None = None

    @property
    def certificate(self) -> Certificates | None:
        """What is served now (``None`` before ``start``)."""
        return self._held

    async def start(self, stack: AsyncExitStack) -> ssl.SSLContext:
        stack.callback(self._tls.close)
        try:
            held = await self._current()
            self._tls.load(held.cert, held.key)
        except (OSError, ValueError) as error:
            where = self._directory.folder if self._directory is not None else "made by the operator"
            raise OSError(
                errno.EINVAL, f"the metrics serving certificate ({where}) cannot be served: {error}"
            ) from error
        self._held = held
        logger.info(
            "metrics are served over HTTPS to authorised scrapers only (certificate %s, expires %s)",
            "from " + str(self._directory.folder) if self._directory is not None else "of the operator's own",
            datetime.datetime.fromtimestamp(held.not_after, datetime.UTC).isoformat(),
        )
        return self._tls.context

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._reload)
            try:
                held = await self._current()
                changed = self._tls.load(held.cert, held.key)
            except (OSError, ValueError) as error:
                logger.warning("the metrics serving certificate could not be renewed or re-read: %s", error)
                continue
            self._held = held
            if changed:
                logger.info("serving a new metrics certificate")

    async def _current(self) -> Certificates:
        """The mounted files as they are now, or the operator's own certificate (made anew when due)."""
        if self._directory is not None:
            return await self._directory.current()
        held = self._held
        if held is not None and not self._due(held):
            return held
        now = datetime.datetime.fromtimestamp(self._wall(), datetime.UTC)
        names = list(dict.fromkeys((socket.gethostname() or "localhost", "localhost")))
        return await anyio.to_thread.run_sync(lambda: certificates.issue(names, ["127.0.0.1"], now=now))

    def _due(self, held: Certificates) -> bool:
        made = certificates.issued_at(held.cert) + certificates.BACKDATE.total_seconds()
        return self._wall() >= made + RENEW_AFTER * (held.not_after - made)
