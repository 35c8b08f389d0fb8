"""A recording decorator of the cluster port, and what Kubernetes authorizes each recorded call as.

``RecordingCluster(cluster)`` forwards every call of the ``Cluster`` port and records it first, as a
``Call``: the request the kube adapter sends for it (``dgd.cluster.protocol`` maps each method to one
REST call), named the way the API server's authorizer names it (verb, API group, resource,
subresource, namespace, name). A call is recorded before it is forwarded, so a refused or failed one
counts too: authorization happens before anything else.

``Permission`` is one (apiGroup, resource[/subresource], verb) triple, optionally narrowed to one
object name: what an RBAC rule grants and what a call needs.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from dgd.cluster.protocol import Cluster, ObjectList, Preconditions, Propagation, Scale, Watch
from dgd.cluster.resources import EVENT, ObjectKey, Resource
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event

T = TypeVar("T")


class Permission(msgspec.Struct, frozen=True, order=True):
    """``verb`` on ``resource`` (``plural`` or ``plural/subresource``) of ``group`` (``""``: core),
    for the object ``name`` only, or for every object (``name`` ``None``)."""

    group: str
    resource: str
    verb: str
    name: str | None = None

    def __str__(self) -> str:
        where = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {where}" + (f" ({self.name})" if self.name else "")


class Call(msgspec.Struct, frozen=True):
    """One request as the authorizer sees it, with the body written (create, update, patch)."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str | None
    name: str | None
    body: Any = None

    @property
    def permission(self) -> Permission:
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return Permission(self.group, resource, self.verb)


def permissions(rules: Iterable[JSONObject]) -> set[Permission]:
    """Every permission a list of RBAC ``PolicyRule`` s grants, one per group, resource, verb and name."""
    granted: set[Permission] = set()
    for rule in rules:
        names: list[str | None] = list(rule.get("resourceNames") or [None])
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    granted.update(Permission(group, resource, verb, name) for name in names)
    return granted


def _body(obj: Any) -> Any:
    return obj if isinstance(obj, dict) else msgspec.to_builtins(obj)


def _where(obj: Any) -> tuple[str | None, str | None]:
    if isinstance(obj, dict):
        metadata = obj.get("metadata") or {}
        return metadata.get("namespace"), metadata.get("name")
    return obj.metadata.namespace, obj.metadata.name


class RecordingCluster:
    """The ``Cluster`` port around ``inner``, recording every call into ``calls`` (see the module)."""

    def __init__(self, inner: Cluster, calls: builtins.list[Call] | None = None) -> None:
        self._inner = inner
        self.calls: builtins.list[Call] = calls if calls is not None else []

    def _record(
        self,
        verb: str,
        resource: Resource[Any],
        namespace: str | None,
        name: str | None,
        *,
        subresource: str = "",
        body: Any = None,
    ) -> None:
        self.calls.append(
            Call(
                verb,
                resource.group,
                resource.plural,
                subresource,
                namespace,
                name,
                _body(body) if body else None,
            )
        )

    async def get(self, key: ObjectKey[T]) -> T:
        self._record("get", key.resource, key.namespace, key.name)
        return await self._inner.get(key)

    async def list(
        self, resource: Resource[T], *, namespace: str | None = None, label_selector: str | None = None
    ) -> ObjectList[T]:
        self._record("list", resource, namespace, None)
        return await self._inner.list(resource, namespace=namespace, label_selector=label_selector)

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> Watch[T]:
        self._record("watch", resource, namespace, None)
        return self._inner.watch(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=resource_version,
            bookmarks=bookmarks,
        )

    async def create(self, resource: Resource[T], obj: T) -> T:
        self._record("create", resource, *_where(obj), body=obj)
        return await self._inner.create(resource, obj)

    async def replace(self, resource: Resource[T], obj: T) -> T:
        self._record("update", resource, *_where(obj), body=obj)
        return await self._inner.replace(resource, obj)

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        self._record("patch", key.resource, key.namespace, key.name, body=patch)
        return await self._inner.patch(key, patch, resource_version=resource_version)

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        self._record("delete", key.resource, key.namespace, key.name)
        return await self._inner.delete(key, propagation=propagation, preconditions=preconditions)

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        self._record("update", resource, *_where(obj), subresource="status", body=obj)
        return await self._inner.replace_status(resource, obj)

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        self._record("patch", key.resource, key.namespace, key.name, subresource="status", body=patch)
        return await self._inner.patch_status(key, patch, resource_version=resource_version)

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        self._record("get", key.resource, key.namespace, key.name, subresource="scale")
        return await self._inner.get_scale(key)

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        self._record("update", key.resource, key.namespace, key.name, subresource="scale", body=scale)
        return await self._inner.replace_scale(key, scale)

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        self._record("create", key.resource, key.namespace, key.name, subresource="binding")
        await self._inner.bind(key, node)

    async def emit(self, event: Event) -> Event:
        namespace = event.metadata.namespace or (event.regarding.namespace if event.regarding else None)
        self._record("create", EVENT, namespace, event.metadata.name, body=event)
        return await self._inner.emit(event)
