"""Watch streaming over HTTP: a port ``Watch`` written out as the API server's newline-delimited events.

Each event is one line ``{"type": ..., "object": ...}``; a bookmark's object carries only the kind
and ``metadata.resourceVersion``. A ``Gone`` (the resourceVersion left the history, or an expiry
fault) ends the stream with an ``ERROR`` event holding the 410 ``Status``, as the API server does;
any other error likewise with its own ``Status``. The stream also ends when the watch ends (a
dropped watch), after ``timeoutSeconds``, or when the client goes away.

``WatchStreams`` knows every stream being served, so a test can end them all at once: ``drop``
(the client sees the stream end and resumes) or ``expire`` (the client gets 410 and re-lists).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import msgspec
from aiohttp import web

from dgd.cluster.errors import ClusterError, Gone
from dgd.cluster.protocol import Watch, WatchEvent
from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject
from dgd.sim.apiserver.wire import JSON, FieldSelector


class _Stream:
    __slots__ = ("expired", "watch")

    def __init__(self, watch: Watch[JSONObject]) -> None:
        self.watch = watch
        self.expired = False


class WatchStreams:
    """The watches being streamed; ``drop`` and ``expire`` end every one of them now."""

    def __init__(self) -> None:
        self._open: dict[_Stream, None] = {}

    def __len__(self) -> int:
        return len(self._open)

    async def drop(self) -> int:
        """End every stream (clients resume from the last resourceVersion they saw); how many."""
        return await self._end(expired=False)

    async def expire(self) -> int:
        """End every stream with 410 Gone (clients must re-list); how many."""
        return await self._end(expired=True)

    async def _end(self, *, expired: bool) -> int:
        streams = list(self._open)
        for stream in streams:
            stream.expired = expired
            await stream.watch.aclose()
        return len(streams)

    async def serve(
        self,
        request: web.Request,
        watch: Watch[JSONObject],
        *,
        resource: Resource[Any],
        timeout: float,
        selector: FieldSelector,
        view: Callable[[JSONObject], JSONObject] | None = None,
        render: Callable[[JSONObject], JSONObject] | None = None,
    ) -> web.StreamResponse:
        """Stream the events of an entered ``watch`` until it ends; the watch is closed afterwards.

        Each object is shown through ``view`` (a conversion), kept if it matches ``selector``, then
        written through ``render`` (a Table)."""
        stream = _Stream(watch)
        self._open[stream] = None
        try:
            response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            try:
                with anyio.move_on_after(timeout):
                    async for event in watch:
                        line = _line(event, resource, selector, view, render)
                        if line is not None:
                            await response.write(line)
                if stream.expired:
                    await response.write(_error(Gone(f"watch of {resource} expired")))
            except ClusterError as error:
                await response.write(_error(error))
            except ConnectionError:
                return response
            await response.write_eof()
            return response
        finally:
            del self._open[stream]
            await watch.aclose()


def _line(
    event: WatchEvent[JSONObject],
    resource: Resource[Any],
    selector: FieldSelector,
    view: Callable[[JSONObject], JSONObject] | None,
    render: Callable[[JSONObject], JSONObject] | None,
) -> bytes | None:
    if event.object is None:
        bookmark = {
            "kind": resource.kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": event.resource_version},
        }
        return msgspec.json.encode({"type": "BOOKMARK", "object": bookmark}) + b"\n"
    shown = view(event.object) if view is not None else event.object
    if not selector.matches(shown):
        return None
    written = render(shown) if render is not None else shown
    return msgspec.json.encode({"type": event.type, "object": written}) + b"\n"


def _error(error: ClusterError) -> bytes:
    return msgspec.json.encode({"type": "ERROR", "object": error.to_status()}) + b"\n"
