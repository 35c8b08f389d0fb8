"""The daemon's view of the cluster port: every request counted, watches timed, writes fenced.

``InstrumentedCluster`` wraps any ``Cluster`` and is one itself (a ``ClusterProxy``):

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
from typing import Generic, Protocol, Self, TypeVar

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster, Watch, WatchEvent
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import EVENT

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


class NotLeader(ClusterError, code=503, reason="ServiceUnavailable"):
    """A write refused inside this process: it lost its lease, so it may not write any more."""


class Fence:
    """Open until ``close``; a closed fence stays closed."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _code(error: BaseException) -> str:
    return str(error.code) if isinstance(error, ClusterError) else "<error>"


def _ignore(resource: str) -> None:
    pass


def _observed(call: APICall) -> Target | None:
    """The object a write targets, for the ``WriteObserver`` (bindings and Events are not observed)."""
    if not call.writes or call.subresource == "binding" or call.resource == EVENT:
        return None
    return str(call.resource), call.namespace, call.name or ""


class InstrumentedCluster(ClusterProxy):
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
        super().__init__(inner)
        self._requests = requests
        self._activity = activity
        self._fence = fence
        self._writes = writes

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        if call.writes and self._fence is not None and self._fence.closed:
            what = f"{call.verb} {call.resource.kind}" + (f" {call.subresource}" if call.subresource else "")
            raise NotLeader(f"{what} refused: this process lost its leader lease and may not write")
        target = _observed(call) if self._writes is not None else None
        if self._writes is not None and target is not None:
            self._writes.writing(target)
        result: R | None = None
        try:
            result = await send()
        except Exception as error:
            self._requests(call.method, _code(error))
            raise
        finally:
            if self._writes is not None and target is not None:
                self._writes.written(target, result)
        self._requests(call.method, "201" if call.method == "POST" else "200")
        if call.verb == "list":
            self._activity(str(call.resource))
        return result

    def opened(self, call: APICall, watch: Watch[T]) -> Watch[T]:
        return _InstrumentedWatch(watch, str(call.resource), self._requests, self._activity)


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
