"""The HTTP facade: a ``MemoryCluster`` served over the Kubernetes REST API, for kubectl and the kube adapter.

Every request becomes one port call on the memory cluster, so the memory server's semantics —
resourceVersions, generation, status and scale subresources, finalizers, garbage collection, watch
history, and its fault rules (``cluster.faults``) — are what an HTTP client sees. Served:

- discovery (``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>[/<version>]``; aggregated
  ``apidiscovery.k8s.io/v2`` when asked for it), OpenAPI v3 (``/openapi/v3``), ``/version``;
- for every kind of ``resources``, namespaced and cluster-scoped (``facade_resources``): list
  (``labelSelector``, ``fieldSelector``), watch (``watch=true``, ``resourceVersion``,
  ``allowWatchBookmarks``, ``timeoutSeconds``; ``facade_watch``), get, create, update, patch,
  delete (``propagationPolicy``, preconditions), deletecollection, and the ``status`` and ``scale``
  subresources;
- PATCH as JSON merge patch, JSON patch, strategic merge patch (an approximation, built-in kinds
  only, as the API server) and server-side apply (an approximation: create, or merge-patch the
  applied configuration; no field ownership) — see ``facade_patch``;
- ``kubectl get``'s server-side printing (``as=Table``, with a CRD's printer columns);
- core/v1 Events as a read-only view of the stored events.k8s.io/v1 Events (``facade_events``).

Custom resources' short names, printer columns and schemas come from the
``CustomResourceDefinition`` objects stored in the cluster (serve ``CUSTOM_RESOURCE_DEFINITION``
and create them). So do the other versions a CRD serves (nvidia.com/v1alpha1 DGDs): each is
served by converting every body to the stored version and every answer back (``facade_conversion``,
with the ``conversion`` webhook given). Errors are ``Status`` objects with the port error's code and reason.

Not served: protobuf bodies (``kubectl create <kind>`` sends them; 415), dry runs, paging (``limit``
is ignored: a list is always complete), watch-list (``sendInitialEvents``), ``/openapi/v2``, new
kinds from a newly stored CRD (the memory server's kinds are fixed), namespace lifecycle (deleting a namespace
leaves its objects), field selectors are not restricted to the fields the API server allows.

For tests: ``drop_watches()`` and ``expire_watches()`` end every open watch stream (the client
resumes, or gets 410 Gone and re-lists); ``cluster.faults`` and ``cluster.compact()`` act on the
server as they do without the facade.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import msgspec
import yaml
from aiohttp import web

from dgd.cluster.errors import ClusterError, NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DEFAULT_RESOURCES, EVENT, Resource
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import Clock, wall_clock
from dgd.sim.apiserver import openapi as facade_openapi
from dgd.sim.apiserver.catalog import AGGREGATED, CUSTOM_RESOURCE_DEFINITION, Catalog
from dgd.sim.apiserver.conversion import Conversion, Converted
from dgd.sim.apiserver.events import CORE_EVENT
from dgd.sim.apiserver.resources import ResourceVerbs, Target
from dgd.sim.apiserver.watch import WatchStreams
from dgd.sim.apiserver.wire import HttpError, failure, respond

logger = logging.getLogger("dgd.facade")

#: What ``/version`` reports.
VERSION: JSONObject = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-dgd-sim",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "",
    "compiler": "",
    "platform": "linux/amd64",
}


class Facade:
    """The Kubernetes REST API over ``cluster``; ``app`` is the aiohttp application to serve.

    ``token``: if set, every request but ``/version`` and the health checks must carry
    ``Authorization: Bearer <token>``. ``clock`` dates the ages ``kubectl get`` shows.
    ``watch_timeout``: how long a watch that gives no ``timeoutSeconds`` stays open.
    ``conversion``: the CRDs' conversion webhook; with it, the versions a CRD serves besides the
    stored one are served too, converted on every request (``facade_conversion``).
    """

    def __init__(
        self,
        cluster: MemoryCluster,
        *,
        resources: Iterable[Resource[Any]] = DEFAULT_RESOURCES,
        token: str | None = None,
        clock: Clock = wall_clock,
        watch_timeout: float = 1800.0,
        conversion: Conversion | None = None,
    ) -> None:
        self.cluster = cluster
        self._conversion = conversion
        self._lookup = cluster.client()  # discovery's own reads: the fault rules are the served client's
        self._resources = tuple(resource.as_raw() for resource in resources)
        if any(str(resource) == str(EVENT) for resource in self._resources):
            self._resources += (CORE_EVENT,)
        self._by_path = {(r.group, r.version, r.plural): r for r in self._resources}
        self._token = token
        self._streams = WatchStreams()
        self._verbs = ResourceVerbs(
            cluster, streams=self._streams, catalog=self._catalog, clock=clock, watch_timeout=watch_timeout
        )
        self.app = web.Application(client_max_size=16 * 1024 * 1024)
        self.app.router.add_route("*", "/{path:.*}", self._handle)

    @property
    def open_watches(self) -> int:
        """Watch streams being served now."""
        return len(self._streams)

    async def drop_watches(self) -> int:
        """End every watch stream now (clients resume); returns how many were open."""
        return await self._streams.drop()

    async def expire_watches(self) -> int:
        """End every watch stream with 410 Gone (clients re-list); returns how many were open."""
        return await self._streams.expire()

    # Routing.

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        parts = [unquote(part) for part in request.path.strip("/").split("/") if part]
        try:
            if parts[:1] in (["healthz"], ["livez"], ["readyz"]):
                return web.Response(text="ok")
            if parts == ["version"]:
                return respond(VERSION)
            self._authorize(request)
            return await self._route(request, parts)
        except ClusterError as error:
            if error.code >= 500:
                logger.info("%s %s: %s", request.method, request.path_qs, error)
            return failure(error)

    def _authorize(self, request: web.Request) -> None:
        if self._token is not None and request.headers.get("Authorization") != f"Bearer {self._token}":
            raise HttpError(401, "Unauthorized", "Unauthorized")

    async def _route(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        resource_path = (parts[:1] == ["api"] and len(parts) > 2) or (
            parts[:1] == ["apis"] and len(parts) > 3
        )
        if request.method != "GET" and not resource_path:
            raise HttpError(405, "MethodNotAllowed", f"{request.method} is not allowed on /{'/'.join(parts)}")
        match parts:
            case []:
                return respond({"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]})
            case ["openapi", "v3"]:
                return respond(facade_openapi.root(await self._catalog()))
            case ["openapi", "v3", "api", version]:
                return respond(facade_openapi.group_version(await self._catalog(), "", version))
            case ["openapi", "v3", "apis", group, version]:
                return respond(facade_openapi.group_version(await self._catalog(), group, version))
            case ["api"] | ["apis"]:
                return await self._discovery(request, core=parts == ["api"])
            case ["api", version]:
                return respond((await self._catalog()).api_resource_list("", version))
            case ["apis", group]:
                return respond((await self._catalog()).api_group(group))
            case ["apis", group, version]:
                return respond((await self._catalog()).api_resource_list(group, version))
            case ["api", version, *rest] if rest:
                return await self._verbs.serve(request, await self._target("", version, rest))
            case ["apis", group, version, *rest] if rest:
                return await self._verbs.serve(request, await self._target(group, version, rest))
        raise NotFound("the server could not find the requested resource")

    async def _target(self, group: str, version: str, rest: list[str]) -> Target:
        if len(rest) >= 3 and rest[0] == "namespaces":
            found = await self._find(group, version, rest[2])
            if found is not None and found.resource.namespaced and len(rest) <= 5:
                return msgspec.structs.replace(
                    found, namespace=rest[1], name=_at(rest, 3), subresource=_at(rest, 4) or ""
                )
        found = await self._find(group, version, rest[0])
        if found is None or len(rest) > 3:
            raise NotFound("the server could not find the requested resource")
        return msgspec.structs.replace(found, name=_at(rest, 1), subresource=_at(rest, 2) or "")

    async def _find(self, group: str, version: str, plural: str) -> Target | None:
        """The kind at ``group/version/plural`` (no object named yet): a stored one, or one a CRD
        serves at another version, converted."""
        resource = self._by_path.get((group, version, plural))
        if resource is not None:
            return Target(resource, None, None, "")
        served = (await self._catalog()).find(group, version, plural)
        if served is None or served.stored is None:
            return None
        stored, shown = served.stored.as_raw(), served.resource.as_raw()
        webhook = self._conversion if served.strategy == "Webhook" else None
        return Target(stored, None, None, "", shown_as=shown, converted=Converted(stored, shown, webhook))

    async def _catalog(self) -> Catalog:
        crds: list[JSONObject] = []
        if any(str(resource) == str(CUSTOM_RESOURCE_DEFINITION) for resource in self._resources):
            crds = (await self._lookup.list(CUSTOM_RESOURCE_DEFINITION)).items
        return Catalog(self._resources, crds, webhook=self._conversion is not None)

    async def _discovery(self, request: web.Request, *, core: bool) -> web.Response:
        catalog = await self._catalog()
        if "as=APIGroupDiscoveryList" in request.headers.get("Accept", ""):
            return respond(catalog.aggregated(core), content_type=AGGREGATED)
        return respond(catalog.api_versions(request.host) if core else catalog.api_group_list())


@asynccontextmanager
async def serve(facade: Facade, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Serve ``facade`` on ``host:port`` (``0``: any free port) and yield its URL; on exit, end every
    open watch and stop serving."""
    runner = web.AppRunner(
        facade.app, handle_signals=False, access_log=None, handler_cancellation=True, shutdown_timeout=1.0
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        yield f"http://{shown}:{bound_port}"
    finally:
        await facade.drop_watches()
        await runner.cleanup()


def kubeconfig(
    server: str, *, token: str | None = None, namespace: str = "default", name: str = "dgd-sim"
) -> str:
    """A kubeconfig (YAML) with one context for ``server``: a static bearer ``token``, or no credentials."""
    user: JSONObject = {"token": token} if token else {}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(
    path: Path, server: str, *, token: str | None = None, namespace: str = "default"
) -> None:
    """Write ``kubeconfig(server, ...)`` to ``path`` (only the owner may read it: it may hold a token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kubeconfig(server, token=token, namespace=namespace), encoding="utf-8")
    path.chmod(0o600)


def _at(parts: list[str], index: int) -> str | None:
    return parts[index] if index < len(parts) else None
