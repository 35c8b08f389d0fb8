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
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import msgspec

from dgd.cluster.protocol import Cluster, Watch
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.messages.base import JSONObject

T = TypeVar("T")
R = TypeVar("R")


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
    """Every permission a list of RBAC ``PolicyRule`` s grants, one per group, resource, verb and name; a
    non-resource URL's as the URL (it starts with ``/``) in no group."""
    granted: set[Permission] = set()
    for rule in rules:
        for url in rule.get("nonResourceURLs") or []:
            granted.update(Permission("", url, verb) for verb in rule.get("verbs") or [])
        names: list[str | None] = list(rule.get("resourceNames") or [None])
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    granted.update(Permission(group, resource, verb, name) for name in names)
    return granted


def _body(obj: Any) -> Any:
    return obj if isinstance(obj, dict) else msgspec.to_builtins(obj)


class RecordingCluster(ClusterProxy):
    """The ``Cluster`` port around ``inner``, recording every call into ``calls`` (see the module)."""

    def __init__(self, inner: Cluster, calls: builtins.list[Call] | None = None) -> None:
        super().__init__(inner)
        self.calls: builtins.list[Call] = calls if calls is not None else []

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        self._record(call)
        return await send()

    def opened(self, call: APICall, watch: Watch[T]) -> Watch[T]:
        self._record(call)
        return watch

    def _record(self, call: APICall) -> None:
        resource = call.resource
        body = _body(call.body) if call.body else None
        self.calls.append(
            Call(
                call.verb, resource.group, resource.plural, call.subresource, call.namespace, call.name, body
            )
        )
