"""A supervisor whose children are added and removed at run time (one per DGD, later).

It is OTP's ``simple_one_for_one``/``DynamicSupervisor``: every child is restarted one for one by its
own restart type and counts against one restart intensity; a child that ends for good (temporary, or
transient after a normal end) is forgotten; on shutdown all children are stopped at once, each
within its own shutdown timeout. It is driven by messages, so any actor can ask it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.actors.runtime.actor import Actor
from dgd.actors.runtime.errors import StartFailed
from dgd.actors.runtime.message import Request
from dgd.actors.runtime.ref import Ref
from dgd.actors.runtime.spec import ChildSpec, Strategy, Supervision


class Started(msgspec.Struct, frozen=True):
    """The child runs; ``created`` is ``False`` when it was already running."""

    ref: Ref[Any]
    created: bool


class StartRefused(msgspec.Struct, frozen=True):
    """The child could not be started (its factory or ``on_start`` raised, or the limit is reached)."""

    id: str
    reason: str


class StartChild(Request[Started | StartRefused], frozen=True):
    """Start a child from ``spec``, or find it running already (idempotent per id)."""

    spec: ChildSpec[Any]


class Stopped(msgspec.Struct, frozen=True):
    """The child is stopped and forgotten; ``existed`` is ``False`` if there was none."""

    id: str
    existed: bool


class StopChild(Request[Stopped], frozen=True):
    """Stop the child ``id`` gracefully (within its shutdown timeout) and forget it."""

    id: str


class ChildIds(msgspec.Struct, frozen=True):
    ids: tuple[str, ...]


class WhichChildren(Request[ChildIds], frozen=True):
    """The ids of the current children, in start order."""


DynamicMessage = StartChild | StopChild | WhichChildren


class DynamicSupervisor(Actor[DynamicMessage]):
    """Supervises children added with :class:`StartChild` and removed with :class:`StopChild`."""

    dynamic = True

    def __init__(self, supervision: Supervision | None = None, *, max_children: int | None = None) -> None:
        self.supervision = supervision or Supervision()
        if self.supervision.strategy is not Strategy.ONE_FOR_ONE:
            raise ValueError("a dynamic supervisor restarts one for one")
        self._max_children = max_children

    async def receive(self, message: DynamicMessage) -> object:
        match message:
            case StartChild(spec=spec):
                return await self._start(spec)
            case StopChild(id=id):
                return Stopped(id, await self.context.stop_child(id))
            case WhichChildren():
                return ChildIds(tuple(self.context.child_ids()))

    async def _start(self, spec: ChildSpec[Any]) -> Started | StartRefused:
        if self.context.has_child(spec.id):
            return Started(self.context.child(spec.id), created=False)
        if self._max_children is not None and self.context.child_count >= self._max_children:
            return StartRefused(spec.id, f"at its limit of {self._max_children} children")
        try:
            return Started(await self.context.start_child(spec), created=True)
        except StartFailed as failed:
            return StartRefused(spec.id, str(failed))
