"""Saying why an object's actor stopped working on it.

A DGD actor or scaling-adapter actor that keeps crashing (beyond the reconcile, which catches what it
raises) goes over its own restart intensity and is parked by its dynamic supervisor
(``Supervision.park``): it starts again only after its backoff, or at once when its object's spec
changes (the router asks for that). While it is parked nothing of it runs, so this actor says it in
its place: the DGD's status turns ``failed`` with a reason a user understands (no actor paths, no
exception names: those are in the operator's log), and a Warning event is recorded on the object.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Literal

import msgspec

from dgd.actors.cache import Cache
from dgd.actors.dgd_writer import DGDWriter
from dgd.actors.recorder import Recorder
from dgd.actors.runtime import Actor
from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import DGD, DGDSA
from dgd.domain.adapters import adapter_reference
from dgd.domain.events import reconcile_error
from dgd.domain.projection import FAILED_TO_RECONCILE, fail, starting_status
from dgd.messages.timestamps import rfc3339

logger = logging.getLogger("dgd.reconcile")


def parked_message(retry_in: float) -> str:
    """What the status and the event say of an object whose actor is parked for ``retry_in`` seconds."""
    return (
        "The operator stopped working on this resource after repeated internal failures; it tries "
        f"again in about {math.ceil(retry_in)} s, or at once when the spec changes (the operator's log "
        "has the details)"
    )


class Parked(msgspec.Struct, frozen=True):
    """The actor of the ``kind`` object ``namespace/name`` is parked for ``retry_in`` seconds."""

    kind: Literal["dgd", "adapter"]
    namespace: str
    name: str
    retry_in: float


class ParkedReporter(Actor[Parked]):
    """Writes the status and the event of an object whose actor is parked (see the module)."""

    def __init__(
        self, *, cache: Cache, dgd_writer: DGDWriter, recorder: Recorder, wall: Callable[[], float]
    ) -> None:
        self._cache = cache
        self._dgd_writer = dgd_writer
        self._recorder = recorder
        self._wall = wall

    async def receive(self, message: Parked) -> None:
        note = parked_message(message.retry_in)
        if message.kind == "adapter":
            adapter = self._cache.get(DGDSA, message.namespace, message.name)
            if adapter is not None:
                self._recorder.emit_regarding(
                    message.namespace, adapter_reference(adapter), reconcile_error(note)
                )
            return
        dgd = self._cache.get(DGD, message.namespace, message.name)
        if dgd is None or dgd.metadata.deletion_timestamp:
            return
        generation = dgd.metadata.generation
        status = fail(
            starting_status(dgd.status), generation=generation, reason=FAILED_TO_RECONCILE, message=note,
            now=rfc3339(self._wall()),
        )  # fmt: skip
        try:
            written = await self._dgd_writer.write_status(dgd, status)
        except ClusterError as error:
            logger.info("%s/%s: parked, status not written: %s", message.namespace, message.name, error)
            return
        await self._recorder.emit(written, reconcile_error(note))
