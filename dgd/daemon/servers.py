"""The daemon's two HTTP servers, on the operator's own event loop (aiohttp).

* metrics (``--metrics-addr``): ``GET /metrics``, Prometheus' text format, over HTTPS to authorised
  scrapers only (``dgd.daemon.metrics_serving``) unless ``--no-metrics-secure`` serves it over plain HTTP;
* probes (``--probe-addr``): ``GET /healthz`` and ``GET /readyz`` (200 ``ok``, or 503 and the failed
  checks; ``?verbose`` lists every check), plus ``/livez`` as an alias of ``/healthz``.

Both run on the event loop the actors run on: a scrape reads the actor tree safely (no thread), and
a blocked loop fails the liveness probe by not answering it.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from dgd.daemon.probes import Check, Health, report

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class AddressError(ValueError):
    """An address flag that is not ``[HOST]:PORT`` (or ``0`` to turn the server off)."""


def parse_address(text: str) -> tuple[str | None, int] | None:
    """``(host, port)`` of ``[HOST]:PORT`` (``None`` host: every interface); ``None`` for ``0``, which
    turns the server off (as in controller-runtime)."""
    if text == "0":
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise AddressError(f"{text!r} is not [HOST]:PORT (for example :8080 or 127.0.0.1:8080), or 0 for off")
    host = host.strip("[]")
    return (host or None), int(port)


class Server:
    """One running aiohttp server; ``port`` is the one bound (useful with port 0)."""

    def __init__(self, runner: web.AppRunner, port: int) -> None:
        self._runner = runner
        self.port = port

    @classmethod
    async def start(
        cls, app: web.Application, host: str | None, port: int, *, tls: ssl.SSLContext | None = None
    ) -> Server:
        """Serve ``app`` on ``host:port`` (HTTPS with ``tls``)."""
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=tls)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        bound = runner.addresses[0][1] if runner.addresses else port
        return cls(runner, int(bound))

    async def stop(self) -> None:
        await self._runner.cleanup()


def metrics_app(registry: CollectorRegistry, guard: Middleware | None = None) -> web.Application:
    """``/metrics`` of ``registry``, every request through ``guard`` first if given."""

    async def metrics(request: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application(middlewares=[guard] if guard is not None else [])
    app.router.add_get("/metrics", metrics)
    return app


def probes_app(health: Health) -> web.Application:
    def probe(name: str, checks: Callable[[], list[Check]]) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            ok, body = report(checks(), name, verbose="verbose" in request.query)
            return web.Response(status=200 if ok else 503, text=body)

        return handle

    app = web.Application()
    app.router.add_get("/healthz", probe("healthz", health.liveness))
    app.router.add_get("/livez", probe("livez", health.liveness))
    app.router.add_get("/readyz", probe("readyz", health.readiness))
    return app
