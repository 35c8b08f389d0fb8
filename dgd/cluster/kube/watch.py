"""A watch of the kube adapter: the API server's event stream, read as the port's ``Watch``.

Entering sends the request (and raises its error: ``Forbidden``, ``TooManyRequests``, ...).
Iterating reads newline-delimited events from the response and decodes each object straight from
its bytes. An ``ERROR`` event raises its error once the events before it are delivered — ``Gone``
for an expired resourceVersion (kubernetes-asyncio's own ``Watch`` would retry a 410 once and then
raise; this one always hands ``Gone`` to the caller, who re-lists). The iteration ends (plain
``StopAsyncIteration``) when the server closes the stream, the connection breaks, nothing at all
arrived for ``idle_timeout`` seconds (a stalled connection; ask for bookmarks to keep a quiet watch
alive), or the watch is closed — by ``aclose``, from any task.

Like the memory adapter's, a watch that falls behind is dropped rather than buffering without
bound: when the reader comes back for more and finds over ``capacity`` events waiting, it is
handed the first ``capacity`` and then the stream ends; resuming from the last resourceVersion
delivered loses nothing. (A watch started without a resourceVersion is never dropped: its initial
``ADDED`` events carry no resumable order.)
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal, Self, TypeVar

import aiohttp
import anyio
import msgspec

from dgd.cluster.errors import ClusterError, ServerError
from dgd.cluster.kube.wire import Query, Subject, Transport, complete, status_error
from dgd.cluster.protocol import EventType, Watch, WatchEvent
from dgd.cluster.resources import Rejected, Resource

T = TypeVar("T")


class _Wire(msgspec.Struct):
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
    object: msgspec.Raw


class _Version(msgspec.Struct):
    resourceVersion: str = ""


class _Meta(msgspec.Struct):
    metadata: _Version = msgspec.field(default_factory=_Version)


class KubeWatch(Watch[T]):
    """The client side of one watch request. Use once: enter, iterate, leave."""

    def __init__(
        self,
        transport: Transport,
        resource: Resource[T],
        url: str,
        query: Query,
        *,
        subject: Subject,
        capacity: int,
        droppable: bool,
        idle_timeout: float | None,
    ) -> None:
        self._transport, self._resource, self._url, self._query = transport, resource, url, query
        self._subject, self._capacity, self._droppable = subject, capacity, droppable
        self._idle_timeout = idle_timeout
        self._response: aiohttp.ClientResponse | None = None
        self._buffer = bytearray()
        self._pending: deque[WatchEvent[T]] = deque()
        self._error: ClusterError | None = None
        self._reading: anyio.CancelScope | None = None
        self._ended = False
        self._closed = False

    async def __aenter__(self) -> Self:
        self._response = await self._transport.open(
            "GET", self._url, self._subject, query=self._query, stream=True
        )
        return self

    async def __anext__(self) -> WatchEvent[T]:
        if self._response is None:
            raise RuntimeError("enter the watch (async with) before iterating it")
        if not self._pending and not self._closed and not self._ended and self._error is None:
            await self._fill()
        if self._pending:
            return self._pending.popleft()
        if self._error is not None:
            error, self._error = self._error, None
            await self.aclose()
            raise error
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop the watch; an iteration waiting in another task ends too."""
        self._closed = True
        self._pending.clear()
        if self._reading is not None:
            self._reading.cancel()
        if self._response is not None:
            self._response.close()

    async def _fill(self) -> None:
        """Read until at least one event (or the end) has arrived, then take whatever else has."""
        while not self._pending and self._error is None and not self._ended:
            chunk = await self._read()
            if not chunk:
                # The stream ended (a line cut short by a broken connection is dropped with it).
                self._ended = True
                self._buffer.clear()
                break
            self._buffer += chunk
            self._parse()
        # Whatever has arrived already says whether the reader fell behind.
        response = self._response
        if response is not None and not self._ended and not self._closed:
            try:
                self._buffer += response.content.read_nowait()
            except (aiohttp.ClientError, ConnectionError):
                self._ended = True
            self._parse()
        if self._droppable and len(self._pending) > self._capacity:
            while len(self._pending) > self._capacity:
                self._pending.pop()
            self._error = None
            self._ended = True
            if response is not None:
                response.close()

    async def _read(self) -> bytes:
        """The next bytes of the stream; ``b""`` at its end, on a broken connection, when idle too
        long, or once closed."""
        response = self._response
        if response is None or self._closed:
            return b""
        with anyio.CancelScope() as scope:
            self._reading = scope
            if self._idle_timeout is not None:
                scope.deadline = anyio.current_time() + self._idle_timeout
            try:
                return await response.content.readany()
            except (aiohttp.ClientError, ConnectionError):
                return b""
            finally:
                self._reading = None
        return b""

    def _parse(self) -> None:
        """Turn every complete line of the buffer into a pending event (or the error that ends them)."""
        while self._error is None:
            end = self._buffer.find(b"\n")
            if end < 0:
                return
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if line.strip():
                self._accept(line)

    def _accept(self, line: bytes) -> None:
        try:
            wire = msgspec.json.decode(line, type=_Wire)
            if wire.type == "ERROR":
                status = msgspec.json.decode(wire.object)
                self._error = complete(
                    status_error(status if isinstance(status, dict) else {}), self._subject
                )
                return
            if wire.type == "BOOKMARK":
                version = msgspec.json.decode(wire.object, type=_Meta).metadata.resourceVersion
                self._pending.append(WatchEvent("BOOKMARK", None, version))
                return
            obj = self._resource.decode_or_reject(wire.object)
        except msgspec.DecodeError as error:
            self._error = ServerError(f"undecodable watch event from the API server: {error}")
            return
        event_type: EventType = wire.type
        if isinstance(obj, Rejected):
            self._pending.append(WatchEvent(event_type, None, obj.resource_version, obj))
            return
        self._pending.append(WatchEvent(event_type, obj, _resource_version(obj)))


def _resource_version(obj: Any) -> str:
    if isinstance(obj, dict):
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return str(obj.metadata.resource_version or "")
