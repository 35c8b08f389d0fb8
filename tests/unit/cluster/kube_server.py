"""A stand-in HTTP API server and a kube adapter pointed at it, for the kube adapter tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration

from dgd.cluster.kube.adapter import KubeCluster

NS = "team-a"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def fake_api_server(handler: Handler) -> AsyncIterator[str]:
    """An HTTP server answering every request with ``handler`` (a stand-in for a real API server)."""
    app = web.Application()
    app.router.add_route("*", "/{path:.*}", handler)
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def adapter(url: str, **options: object) -> KubeCluster:
    return KubeCluster(ApiClient(Configuration(host=url)), qps=None, **options)  # type: ignore[arg-type]
