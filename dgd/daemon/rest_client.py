"""The daemon's view of the cluster port: every request counted, watches timed, writes fenced.

``InstrumentedCluster`` wraps any ``Cluster`` and is one itself:

* every request is reported as ``(method, code)`` once it ends — ``GET``/``POST``/``PUT``/``PATCH``/
  ``DELETE`` and the HTTP code the API server answered (``<error>`` for a failure with no answer,
  as client-go counts it); a cancelled request is not reported;
* every sign of life of a list or watch (a list served, a watch opened, an event or bookmark
  received) is reported by resource (``plural.group``), so a stalled informer can be told from an
  idle one;
* with a ``Fence``, no write leaves the process once the fence is closed: it raises ``NotLeader``
  instead. Closing is synchronous, so the moment a leader learns it lost its lease, its writes stop,
  before any task has been cancelled;
* with a ``WriteObserver``, every write is announced before it is sent and its answer (the object
  written, ``None`` if it failed) told after, with the object it targets (``run --record`` tells the
  operator's own changes from everyone else's this way).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import (
    Cluster,
    ObjectList,
    Preconditions,
    Propagation,
    Scale,
    Watch,
    WatchEvent,
)
from dgd.cluster.resources import ObjectKey, Resource
from dgd.messages.base import JSONObject
from dgd.messages.meta import Event

T = TypeVar("T")
R = TypeVar("R")

#: Told ``(method, code)`` after every request.
RequestSink = Callable[[str, str], None]
#: Told the resource (``plural.group``) at every sign of life of a list or watch.
ActivitySink = Callable[[str], None]


#: The object a write targets: resource id (``plural.group``), namespace, name.
Target = tuple[str, str | None, str]


class WriteObserver(Protocol):
    """Hears about every write of an ``InstrumentedCluster``."""

    def writing(self, target: Target) -> None:
        """A write of ``target`` is about to be sent."""

    def written(self, target: Target, result: object | None) -> None:
        """It ended: ``result`` is what the server answered (``None``: the write failed)."""


def _target(resource: Resource[Any], obj: Any) -> Target:
    if isinstance(obj, dict):
        metadata = obj.get("metadata") or {}
        return str(resource), metadata.get("namespace"), str(metadata.get("name") or "")
    return str(resource), obj.metadata.namespace, obj.metadata.name or ""


class NotLeader(ClusterError):
    """A write refused inside this process: it lost its lease, so it may not write any more."""

    code = 503
    reason = "ServiceUnavailable"


class Fence:
    """Open until ``close``; a closed fence stays closed."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _key_target(key: ObjectKey[Any]) -> Target:
    return str(key.resource), key.namespace, key.name


def _code(error: BaseException) -> str:
    return str(error.code) if isinstance(error, ClusterError) else "<error>"


def _ignore(resource: str) -> None:
    pass


class InstrumentedCluster:
    """``inner`` with every request reported to ``requests``, list and watch activity to ``activity``,
    and writes stopped by ``fence`` once it is closed (see the module)."""

    def __init__(
        self,
        inner: Cluster,
        *,
        requests: RequestSink,
        activity: ActivitySink = _ignore,
        fence: Fence | None = None,
        writes: WriteObserver | None = None,
    ) -> None:
        self._inner = inner
        self._requests = requests
        self._activity = activity
        self._fence = fence
        self._writes = writes

    def _check_fence(self, what: str) -> None:
        if self._fence is not None and self._fence.closed:
            raise NotLeader(f"{what} refused: this process lost its leader lease and may not write")

    async def get(self, key: ObjectKey[T]) -> T:
        try:
            obj = await self._inner.get(key)
        except Exception as error:
            self._requests("GET", _code(error))
            raise
        self._requests("GET", "200")
        return obj

    async def list(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> ObjectList[T]:
        try:
            listing = await self._inner.list(resource, namespace=namespace, label_selector=label_selector)
        except Exception as error:
            self._requests("GET", _code(error))
            raise
        self._requests("GET", "200")
        self._activity(str(resource))
        return listing

    def watch(
        self,
        resource: Resource[T],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        resource_version: str | None = None,
        bookmarks: bool = False,
    ) -> Watch[T]:
        inner = self._inner.watch(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=resource_version,
            bookmarks=bookmarks,
        )
        return _InstrumentedWatch(inner, str(resource), self._requests, self._activity)

    async def create(self, resource: Resource[T], obj: T) -> T:
        self._check_fence(f"create {resource.kind}")
        return await self._write("POST", "201", self._inner.create(resource, obj), _target(resource, obj))

    async def replace(self, resource: Resource[T], obj: T) -> T:
        self._check_fence(f"update {resource.kind}")
        return await self._write("PUT", "200", self._inner.replace(resource, obj), _target(resource, obj))

    async def patch(self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None) -> T:
        self._check_fence(f"patch {key}")
        call = self._inner.patch(key, patch, resource_version=resource_version)
        return await self._write("PATCH", "200", call, _key_target(key))

    async def delete(
        self,
        key: ObjectKey[T],
        *,
        propagation: Propagation | None = None,
        preconditions: Preconditions | None = None,
    ) -> T | None:
        self._check_fence(f"delete {key}")
        call = self._inner.delete(key, propagation=propagation, preconditions=preconditions)
        return await self._write("DELETE", "200", call, _key_target(key))

    async def replace_status(self, resource: Resource[T], obj: T) -> T:
        self._check_fence(f"update {resource.kind} status")
        call = self._inner.replace_status(resource, obj)
        return await self._write("PUT", "200", call, _target(resource, obj))

    async def patch_status(
        self, key: ObjectKey[T], patch: JSONObject, *, resource_version: str | None = None
    ) -> T:
        self._check_fence(f"patch {key} status")
        call = self._inner.patch_status(key, patch, resource_version=resource_version)
        return await self._write("PATCH", "200", call, _key_target(key))

    async def get_scale(self, key: ObjectKey[T]) -> Scale:
        try:
            scale = await self._inner.get_scale(key)
        except Exception as error:
            self._requests("GET", _code(error))
            raise
        self._requests("GET", "200")
        return scale

    async def replace_scale(self, key: ObjectKey[T], scale: Scale) -> Scale:
        self._check_fence(f"scale {key}")
        return await self._write("PUT", "200", self._inner.replace_scale(key, scale), _key_target(key))

    async def bind(self, key: ObjectKey[T], node: str) -> None:
        self._check_fence(f"bind {key}")
        await self._write("POST", "201", self._inner.bind(key, node), None)

    async def emit(self, event: Event) -> Event:
        self._check_fence("emit Event")
        return await self._write("POST", "201", self._inner.emit(event), None)

    async def _write(self, method: str, ok: str, call: Awaitable[R], target: Target | None) -> R:
        observer = self._writes if target is not None else None
        if observer is not None and target is not None:
            observer.writing(target)
        result: R | None = None
        try:
            result = await call
        except Exception as error:
            self._requests(method, _code(error))
            raise
        finally:
            if observer is not None and target is not None:
                observer.written(target, result)
        self._requests(method, ok)
        return result


class _InstrumentedWatch(Generic[T]):
    """A watch whose opening is counted as a ``GET`` and whose every event is a sign of life."""

    def __init__(self, inner: Watch[T], resource: str, requests: RequestSink, activity: ActivitySink) -> None:
        self._inner = inner
        self._resource = resource
        self._requests = requests
        self._activity = activity

    async def __aenter__(self) -> Self:
        try:
            await self._inner.__aenter__()
        except Exception as error:
            self._requests("GET", _code(error))
            raise
        self._requests("GET", "200")
        self._activity(self._resource)
        return self

    async def __aexit__(
        self,
        exc_type: builtins.type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._inner.__aexit__(exc_type, exc, traceback)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> WatchEvent[T]:
        event = await self._inner.__anext__()
        self._activity(self._resource)
        return event

    async def aclose(self) -> None:
        await self._inner.aclose()
