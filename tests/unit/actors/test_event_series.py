"""Repeats of an event join its series (``dgd.actors.machinery.events``), as client-go's recorder aggregates
them: posted once, then counted, the count written onto the posted event at most every flush period."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dgd.actors.machinery.events import SERIES_FLUSH, SERIES_WINDOW, EventPoster, PostEvent, Recorder
from dgd.cluster.errors import ServerError
from dgd.domain.events import EventRecord
from dgd.messages.meta import Event, ObjectReference

pytestmark = pytest.mark.anyio


class Server:
    """The two calls the poster makes: ``emit`` names each event, ``patch`` records series updates."""

    def __init__(self) -> None:
        self.posted: list[Event] = []
        self.patches: list[tuple[str | None, str, Any]] = []
        self.refuse_patches = False

    async def emit(self, event: Event) -> Event:
        metadata = msgspec.structs.replace(event.metadata, name=f"demo.{len(self.posted)}")
        named = msgspec.structs.replace(event, metadata=metadata)
        self.posted.append(named)
        return named

    async def patch(self, key: Any, patch: Any) -> Any:
        if self.refuse_patches:
            raise ServerError("etcd is down")
        self.patches.append((key.namespace, key.name, patch))
        return patch


def scaled(note: str) -> EventRecord:
    return EventRecord(type="Normal", reason="Scaled", note=note, action="Scale")


async def test_a_repeated_event_is_posted_once_and_counted_on_its_series() -> None:
    # Given a poster and a clock.
    server, now = Server(), [1000.0]
    recorder = Recorder(server, instance="test", now=lambda: now[0])  # type: ignore[arg-type]
    poster = EventPoster(server, recorder)  # type: ignore[arg-type]
    regarding = ObjectReference(
        api_version="nvidia.com/v1beta1", kind="DGD", name="demo", namespace="ns", uid="u1"
    )

    async def tell(record: EventRecord) -> None:
        await poster.receive(PostEvent(recorder.event("ns", regarding, record)))

    # When the same event comes three times within the flush period, and another event once.
    for _ in range(3):
        await tell(scaled("from 1 to 2"))
    await tell(scaled("from 2 to 3"))
    # Then each distinct event was posted once, and no series was written yet.
    assert [e.note for e in server.posted] == ["from 1 to 2", "from 2 to 3"]
    assert server.patches == []

    # When the repeat comes again after the flush period.
    now[0] += SERIES_FLUSH
    await tell(scaled("from 1 to 2"))
    # Then the first event's series says four, on the event the server named.
    ((namespace, name, patch),) = server.patches
    assert (namespace, name, patch["series"]["count"]) == ("ns", "demo.0", 4)

    # When a series update is refused, it is dropped with a warning that names the event, not raised.
    server.refuse_patches = True
    now[0] += SERIES_FLUSH
    await tell(scaled("from 1 to 2"))
    assert recorder.dropped["refused"] == 1

    # When the window has passed, the event is posted anew.
    now[0] += SERIES_WINDOW
    await tell(scaled("from 1 to 2"))
    assert [e.note for e in server.posted] == ["from 1 to 2", "from 2 to 3", "from 1 to 2"]
