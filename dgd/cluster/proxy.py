"""``ClusterProxy``: the port around another port, every call described once and handed on.

A proxy is a ``Cluster`` that forwards each of the port's methods to ``inner``. Every call is first
described as an ``APICall`` — the request as the API server's authorizer names it (verb, resource,
subresource, namespace, name) with the body written — and passed, with the forwarding itself, to
``forward``. Subclasses override only what they change:

* ``forward(call, send)`` — around every call but ``watch`` (count it, fence it, record it);
* ``opened(call, watch)`` — around the watch a ``watch`` call returns;
* ``scope(resource, namespace)`` — the namespace a ``list`` or ``watch`` is narrowed to.

The daemon's instrumented client, ``sim world``'s namespaced view and the tests' recording client are
proxies, so the port's signatures are written here once more and nowhere else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from dgd.cluster.protocol import Cluster, ObjectList, Preconditions, Propagation, Scale, Watch
from dgd.cluster.resources import EVENT, ObjectKey, Resource
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event

T = TypeVar("T")
R = TypeVar("R")

#: The authorizer's verbs for the calls the port makes.
Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete"]

_METHODS: dict[str, str] = {
    "get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
    "delete": "DELETE",
}  # fmt: skip


class APICall(msgspec.Struct, frozen=True):
    """One call of the port as one REST request: the authorizer's verb on ``resource`` (and
    ``subresource``), the object it names, and the body it writes (create, update, patch)."""

    verb: Verb
    resource: Resource[Any]
    namespace: str | None
    name: str | None
    subresource: str = ""
    body: Any = None

    @property
    def method(self) -> str:
        """The HTTP method of the request (``GET`` for get, list and watch)."""
        return _METHODS[self.verb]

    @property
    def writes(self) -> bool:
        return self.verb not in ("get", "list", "watch")


def _named(verb: Verb, resource: Resource[Any], obj: Any, subresource: str = "") -> APICall:
    """The call that writes ``obj`` (a Struct or raw JSON), named by the object's own metadata."""
    if isinstance(obj, dict):
        metadata = obj.get("metadata") or {}
        namespace, name = metadata.get("namespace"), metadata.get("name")
    else:
        namespace, name = obj.metadata.namespace, obj.metadata.name
    return APICall(verb, resource, namespace, name, subresource, obj)


def _keyed(verb: Verb, key: ObjectKey[Any], subresource: str = "", body: Any = None) -> APICall:
    return APICall(verb, key.resource, key.namespace, key.name, subresource, body)


class ClusterProxy:
    """The port around ``inner`` (see the module); as it is, it forwards every call unchanged."""

    def __init__(self, inner: Cluster) -> None:
        self.inner = inner

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        """Send ``call`` (``send()`` forwards it to ``inner``) and return its answer."""
        return await send()

    def opened(self, call: APICall, watch: Watch[T]) -> Watch[T]:
        """The watch to hand out for the ``watch`` call ``call`` (``watch`` is ``inner``'s)."""
        return watch

    def scope(self, resource: Resource[Any], namespace: str | None) -> str | None:
        """The namespace a list or watch of ``resource`` asked for ``namespace`` goes to."""
        return namespace

    async def get(self, key: ObjectKey[T]) -> T:
        return await self.forward(_keyed("get", key), lambda: self.inner.get(key))

    async def list(
        self, resource: Resource[T], *, namespace: str | None = None, label_selector: str | None = None
    ) -> ObjectList[T]:
        where = self.scope(resource, namespace)
        call = APICall("list", resource, where, None)
        return await self.forward(
            call, lambda: self.inner.list(resource, namespace=where, label_selector=label_selector)
        )

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> Watch[T]:
        where = self.scope(resource, namespace)
        inner = self.inner.watch(
            resource,
            namespace=where,
            label_selector=label_selector,
            resource_version=resource_version,
            bookmarks=bookmarks,
        )
        return self.opened(APICall("watch", resource, where, None), inner)

    async def create(self, resource: Resource[T], obj: T) -> T:
        return await self.forward(_named("create", resource, obj), lambda: self.inner.create(resource, obj))

    async def replace(self, resource: Resource[T], obj: T) -> T:
        return await self.forward(_named("update", resource, obj), lambda: self.inner.replace(resource, obj))

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        call = _keyed("patch", key, body=patch)
        return await self.forward(
            call, lambda: self.inner.patch(key, patch, resource_version=resource_version)
        )

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        send = lambda: self.inner.delete(key, propagation=propagation, preconditions=preconditions)  # noqa: E731
        return await self.forward(_keyed("delete", key), send)

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        call = _named("update", resource, obj, "status")
        return await self.forward(call, lambda: self.inner.replace_status(resource, obj))

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        call = _keyed("patch", key, "status", patch)
        send = lambda: self.inner.patch_status(key, patch, resource_version=resource_version)  # noqa: E731
        return await self.forward(call, send)

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        return await self.forward(_keyed("get", key, "scale"), lambda: self.inner.get_scale(key))

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        call = _keyed("update", key, "scale", scale)
        return await self.forward(call, lambda: self.inner.replace_scale(key, scale))

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        await self.forward(_keyed("create", key, "binding"), lambda: self.inner.bind(key, node))

    async def emit(self, event: Event) -> Event:
        namespace = event.metadata.namespace or (event.regarding.namespace if event.regarding else None)
        call = APICall("create", EVENT, namespace, event.metadata.name, body=event)
        return await self.forward(call, lambda: self.inner.emit(event))


if TYPE_CHECKING:
    # mypy proves a proxy implements the port.
    def _check(cluster: ClusterProxy) -> Cluster:
        return cluster
