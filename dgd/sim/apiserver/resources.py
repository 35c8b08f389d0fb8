"""The verbs on resource paths of the HTTP facade: each request is one port call on the memory cluster.

``ResourceVerbs.serve`` answers a request for a collection, an object, or its ``status`` or
``scale`` subresource: list (``labelSelector``, ``fieldSelector``) or watch, get, create, update,
patch, delete, deletecollection — and the read-only core/v1 view of events (``facade_events``).
PATCH, in each of its flavours, is served by ``dgd.sim.apiserver.patch_verb``.

A kind served at a version other than the stored one (``Target.converted``): bodies are converted to
the stored version before the port call, answers back to the version asked for (``facade_conversion``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import msgspec
from aiohttp import web

from dgd.cluster.errors import Invalid, NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Preconditions, Propagation
from dgd.cluster.resources import EVENT, ObjectKey, Resource
from dgd.messages.base import JSONObject
from dgd.messages.timestamps import Clock
from dgd.sim.apiserver.catalog import Catalog
from dgd.sim.apiserver.conversion import Converted
from dgd.sim.apiserver.events import CORE_EVENT, to_core
from dgd.sim.apiserver.patch_verb import patch_object, patch_scale
from dgd.sim.apiserver.table import Printer
from dgd.sim.apiserver.validation import check_version_match, crd_schemas, unknown_fields
from dgd.sim.apiserver.watch import WatchStreams
from dgd.sim.apiserver.wire import (
    HttpError,
    field_selector,
    flag,
    in_namespace,
    named,
    object_body,
    respond,
    success,
    to_scale,
)

_PROPAGATIONS: tuple[Propagation, ...] = ("Background", "Foreground", "Orphan")

Handler = Callable[[web.Request, "Target"], Awaitable[web.StreamResponse]]


class Target(msgspec.Struct, frozen=True):
    """A resource path: the kind, and the namespace, name and subresource it names (if any)."""

    resource: Resource[JSONObject]
    namespace: str | None
    name: str | None
    subresource: str
    #: Read from ``resource``, shown as this kind (the core/v1 view of events, another served version).
    shown_as: Resource[JSONObject] | None = None
    #: Served at a version other than the stored one: bodies converted in, answers out.
    converted: Converted | None = None

    def key(self) -> ObjectKey[JSONObject]:
        if self.name is None or (self.resource.namespaced and not self.namespace):
            raise NotFound("the server could not find the requested resource")
        return self.resource.key(self.namespace if self.resource.namespaced else None, self.name)


@dataclass(frozen=True)
class ResourceVerbs:
    """Serves resource paths from ``cluster``; ``catalog`` gives the served kinds (for printing)."""

    cluster: MemoryCluster
    _: KW_ONLY
    streams: WatchStreams
    catalog: Callable[[], Awaitable[Catalog]]
    clock: Clock
    watch_timeout: float

    async def serve(self, request: web.Request, target: Target) -> web.StreamResponse:
        if target.resource is CORE_EVENT:
            return await self._event_view(request, target)
        resource, method, sub = target.resource, request.method, target.subresource
        binding = sub == "binding" and (resource.group, resource.plural) == ("", "pods")
        if (sub not in ("", "status", "scale") and not binding) or (sub == "status" and not resource.status):
            raise NotFound(f"the server could not find the requested resource ({resource} {sub})")
        if sub == "scale" and resource.scale is None:
            raise NotFound(f"the server could not find the requested resource ({resource} scale)")
        if request.query.get("dryRun"):
            raise Invalid("dry runs are not supported by the simulated API server", bad_request=True)
        if target.name is None:
            if resource.namespaced and target.namespace is None and method != "GET":
                raise NotFound("the server could not find the requested resource")
            handlers: dict[str, Handler] = {
                "GET": self._list,
                "POST": self._create,
                "DELETE": self._delete_collection,
            }
        elif sub == "scale":
            handlers = {"GET": self._get_scale, "PUT": self._replace_scale, "PATCH": self._patch_scale}
        elif binding:
            handlers = {"POST": self._bind}
        else:
            handlers = {"GET": self._get, "PUT": self._replace, "PATCH": self._patch}
            if not sub:
                handlers["DELETE"] = self._delete
        handler = handlers.get(method)
        if handler is None:
            raise HttpError(405, "MethodNotAllowed", f"{method} is not allowed on {request.path}")
        return await handler(request, target)

    async def _event_view(self, request: web.Request, target: Target) -> web.StreamResponse:
        """The core/v1 events: reads of the stored events.k8s.io/v1 Events, converted."""
        if request.method != "GET":
            raise HttpError(
                405, "MethodNotAllowed", "core/v1 events are read-only here: write events.k8s.io/v1"
            )
        if target.subresource:
            raise NotFound("the server could not find the requested resource")
        backing = msgspec.structs.replace(target, resource=EVENT.as_raw(), shown_as=CORE_EVENT)
        return await (self._list if target.name is None else self._get)(request, backing)

    async def _list(self, request: web.Request, target: Target) -> web.StreamResponse:
        query, resource = request.query, target.resource
        check_version_match(query.get("resourceVersion"), query.get("resourceVersionMatch"))
        selector = field_selector(query.get("fieldSelector"))
        printer = await self._printer(request, target)
        if flag(query.get("watch")):
            if flag(query.get("sendInitialEvents")):
                raise Invalid("sendInitialEvents (watch-list) is not supported", bad_request=True)
            watch = self.cluster.watch(
                resource,
                namespace=target.namespace,
                label_selector=query.get("labelSelector"),
                resource_version=query.get("resourceVersion"),
                bookmarks=flag(query.get("allowWatchBookmarks")),
            )
            try:
                await watch.__aenter__()
            except BaseException:
                await watch.aclose()
                raise
            timeout = float(query.get("timeoutSeconds") or self.watch_timeout)
            return await self.streams.serve(
                request,
                watch,
                resource=target.shown_as or resource,
                timeout=timeout,
                selector=selector,
                view=_view(target) if target.shown_as is not None else None,
                render=printer.row if printer is not None else None,
            )
        listed = await self.cluster.list(
            resource, namespace=target.namespace, label_selector=query.get("labelSelector")
        )
        shown = target.shown_as or resource
        items = [item for item in map(_view(target), listed.items) if selector.matches(item)]
        if printer is not None:
            return respond(printer.table(items, listed.resource_version))
        return respond(
            {
                "apiVersion": shown.api_version,
                "kind": f"{shown.kind}List",
                "metadata": {"resourceVersion": listed.resource_version},
                "items": items,
            }
        )

    async def _get(self, request: web.Request, target: Target) -> web.StreamResponse:
        obj = _view(target)(await self.cluster.get(target.key()))
        printer = await self._printer(request, target)
        return respond(printer.row(obj) if printer is not None else obj)

    def _strict(self, request: web.Request, resource: Resource[Any], obj: JSONObject) -> None:
        """``fieldValidation=Strict``: a field the kind's CRD schema does not have is a 400. (Built-in
        kinds are not checked: the facade has no schema for them.)"""
        if request.query.get("fieldValidation") != "Strict":
            return
        schema = crd_schemas().get((resource.group, resource.version, resource.plural))
        unknown = sorted(unknown_fields(obj, schema, "")) if schema is not None else []
        if unknown:
            fields = ", ".join(f'unknown field "{field}"' for field in unknown)
            raise Invalid(f"strict decoding error: {fields}", bad_request=True)

    async def _create(self, request: web.Request, target: Target) -> web.StreamResponse:
        obj = in_namespace(
            await object_body(request), target.namespace if target.resource.namespaced else None
        )
        self._strict(request, target.shown_as or target.resource, obj)
        created = await self.cluster.create(target.resource, _to_stored(target, obj))
        return respond(_view(target)(created), status=201)

    async def _replace(self, request: web.Request, target: Target) -> web.StreamResponse:
        key = target.key()
        obj = named(in_namespace(await object_body(request), key.namespace), key.name)
        self._strict(request, target.shown_as or target.resource, obj)
        stored = _to_stored(target, obj)
        if target.subresource == "status":
            return respond(_view(target)(await self.cluster.replace_status(target.resource, stored)))
        return respond(_view(target)(await self.cluster.replace(target.resource, stored)))

    async def _patch(self, request: web.Request, target: Target) -> web.StreamResponse:
        return await patch_object(self.cluster, request, target)

    async def _delete(self, request: web.Request, target: Target) -> web.StreamResponse:
        key = target.key()
        propagation, preconditions = await _delete_options(request)
        deleted = await self.cluster.delete(key, propagation=propagation, preconditions=preconditions)
        if deleted is not None:
            return respond(_view(target)(deleted))
        resource = key.resource
        return respond(
            success(key.name, resource.group, resource.plural, preconditions.uid if preconditions else None)
        )

    async def _delete_collection(self, request: web.Request, target: Target) -> web.StreamResponse:
        resource = target.resource
        propagation, _ = await _delete_options(request)
        listed = await self.cluster.list(
            resource, namespace=target.namespace, label_selector=request.query.get("labelSelector")
        )
        selector = field_selector(request.query.get("fieldSelector"))
        for item in listed.items:
            if selector.matches(item):
                try:
                    await self.cluster.delete(resource.key_of(item), propagation=propagation)
                except NotFound:
                    continue
        return respond(success("", resource.group, resource.plural))

    async def _bind(self, request: web.Request, target: Target) -> web.StreamResponse:
        body = await object_body(request)
        node = (body.get("target") or {}).get("name") if body.get("kind") == "Binding" else None
        if not isinstance(node, str) or not node:
            raise Invalid("a Binding with target.name (the node) is expected", bad_request=True)
        await self.cluster.bind(target.key(), node)
        return respond({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, status=201)

    async def _get_scale(self, request: web.Request, target: Target) -> web.StreamResponse:
        return respond(await self.cluster.get_scale(target.key()))

    async def _replace_scale(self, request: web.Request, target: Target) -> web.StreamResponse:
        scale = to_scale(await object_body(request))
        return respond(await self.cluster.replace_scale(target.key(), scale))

    async def _patch_scale(self, request: web.Request, target: Target) -> web.StreamResponse:
        return await patch_scale(self.cluster, request, target)

    # Server-side printing.

    async def _printer(self, request: web.Request, target: Target) -> Printer | None:
        """The Table printer of the kind, if the client asked for ``as=Table``."""
        if "as=Table" not in request.headers.get("Accept", ""):
            return None
        resource = target.shown_as or target.resource
        served = (await self.catalog()).find(resource.group, resource.version, resource.plural)
        columns = served.columns if served is not None else ()
        return Printer(columns, include=request.query.get("includeObject") or "Metadata", clock=self.clock)


def _view(target: Target) -> Callable[[JSONObject], JSONObject]:
    """How objects read for ``target`` are shown: as stored, or converted to the kind of its view."""
    if target.converted is not None:
        return target.converted.to_shown
    return to_core if target.shown_as is CORE_EVENT else _as_stored


def _to_stored(target: Target, obj: JSONObject) -> JSONObject:
    """A body sent for ``target`` as the memory server stores it."""
    return target.converted.to_stored(obj) if target.converted is not None else obj


def _as_stored(obj: JSONObject) -> JSONObject:
    return obj


async def _delete_options(request: web.Request) -> tuple[Propagation | None, Preconditions | None]:
    options: JSONObject = {}
    if (await request.read()).strip():
        options = await object_body(request)
    policy = request.query.get("propagationPolicy") or options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is not None and policy not in _PROPAGATIONS:
        raise Invalid(f"propagationPolicy {policy!r} is not one of {list(_PROPAGATIONS)}", bad_request=True)
    found = options.get("preconditions") or {}
    preconditions = None
    if found.get("uid") or found.get("resourceVersion"):
        preconditions = Preconditions(uid=found.get("uid"), resource_version=found.get("resourceVersion"))
    propagation: Propagation | None = policy
    return propagation, preconditions
