"""A supervisor whose children are added and removed at run time (one per DGD, later).

It is OTP's ``simple_one_for_one``/``DynamicSupervisor``: every child is restarted one for one by its
own restart type and counts against one restart intensity; a child that ends for good (temporary, or
transient after a normal end) is forgotten; on shutdown all children are stopped at once, each
within its own shutdown timeout. It is driven by messages, so any actor can ask it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec

from dgd.runtime.actor import Actor
from dgd.runtime.context import Context
from dgd.runtime.errors import StartFailed
from dgd.runtime.message import Request
from dgd.runtime.ref import Ref
from dgd.runtime.spec import ChildSpec, Strategy, Supervision


class Started(msgspec.Struct, frozen=True):
    """The child runs; ``created`` is ``False`` when it was already running."""

    ref: Ref[Any]
    created: bool


class StartRefused(msgspec.Struct, frozen=True):
    """The child could not be started (its factory or ``on_start`` raised, or the limit is reached)."""

    id: str
    reason: str


class StartChild(Request[Started | StartRefused], frozen=True):
    """Start a child from ``spec``, or find it running already (idempotent per id) and then tell it
    ``if_running`` if given. Told rather than asked, a refusal is logged by the supervisor."""

    spec: ChildSpec[Any]
    if_running: Any = None


class Stopped(msgspec.Struct, frozen=True):
    """The child is stopped and forgotten; ``existed`` is ``False`` if there was none."""

    id: str
    existed: bool


class StopChild(Request[Stopped], frozen=True):
    """Stop the child ``id`` gracefully (within its shutdown timeout) and forget it."""

    id: str


class RestartChildNow(msgspec.Struct, frozen=True):
    """If the child ``id`` waits for its restart (parked, say), restart it now (told, not asked)."""

    id: str


class ChildIds(msgspec.Struct, frozen=True):
    ids: tuple[str, ...]


class WhichChildren(Request[ChildIds], frozen=True):
    """The ids of the current children, in start order."""


logger = logging.getLogger("dgd.actors")

DynamicMessage = StartChild | StopChild | WhichChildren | RestartChildNow


class DynamicSupervisor(Actor[DynamicMessage]):
    """Supervises children added with :class:`StartChild` and removed with :class:`StopChild`."""

    dynamic = True

    def __init__(
        self,
        supervision: Supervision | None = None,
        *,
        max_children: int | None = None,
        on_parked: Callable[[Context[Any], str, float], None] | None = None,
    ) -> None:
        self.supervision = supervision or Supervision()
        if self.supervision.strategy is not Strategy.ONE_FOR_ONE:
            raise ValueError("a dynamic supervisor restarts one for one")
        self._max_children = max_children
        self._on_parked = on_parked

    def child_parked(self, id: str, retry_in: float) -> None:
        if self._on_parked is not None:
            self._on_parked(self.context, id, retry_in)

    async def receive(self, message: DynamicMessage) -> object:
        match message:
            case StartChild(spec=spec, if_running=if_running):
                return await self._start(spec, if_running)
            case StopChild(id=id):
                return Stopped(id, await self.context.stop_child(id))
            case WhichChildren():
                return ChildIds(tuple(self.context.child_ids()))
            case RestartChildNow(id=id):
                self.context.restart_child_now(id)
                return None

    async def _start(self, spec: ChildSpec[Any], if_running: Any) -> Started | StartRefused:
        if self.context.has_child(spec.id):
            child = self.context.child(spec.id)
            if if_running is not None:
                child.tell_nowait(if_running)
            return Started(child, created=False)
        if self._max_children is not None and self.context.child_count >= self._max_children:
            return self._refused(spec.id, f"at its limit of {self._max_children} children")
        try:
            return Started(await self.context.start_child(spec), created=True)
        except StartFailed as failed:
            return self._refused(spec.id, str(failed))

    def _refused(self, id: str, reason: str) -> StartRefused:
        logger.error("%s: could not start %s: %s", self.context.path, id, reason)
        return StartRefused(id, reason)
