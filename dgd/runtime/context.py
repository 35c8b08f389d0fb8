"""What an actor sees of the runtime: its ``context`` (path, refs, children, clock, random).

An actor reaches everything outside itself through its context: its own ref and path, refs to its
children and (through ``system``) to any actor by path, the system's clock and seeded random source
(the only ones it may use), and, for a supervising actor, starting and stopping children at run time.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dgd.runtime.clock import Clock
from dgd.runtime.errors import ActorNotFound
from dgd.runtime.ref import Ref
from dgd.runtime.spec import ChildSpec

if TYPE_CHECKING:
    from dgd.runtime.supervisor import Children
    from dgd.runtime.system import ActorSystem

M = TypeVar("M")
C = TypeVar("C")


class Context(Generic[M]):
    """The runtime as one actor sees it. Use it from the actor's own hooks only."""

    __slots__ = ()

    # Provided by the cell that runs the actor.
    path: str
    system: ActorSystem
    _children: Children | None

    @property
    def ref(self) -> Ref[M]:
        """This actor's own ref."""
        return Ref(self.system, self.path)

    @property
    def clock(self) -> Clock:
        return self.system.clock

    @property
    def random(self) -> random.Random:
        """The system's seeded random source: the only one actors may draw from."""
        return self.system.random

    def child(self, id: str) -> Ref[Any]:
        """The ref of the child ``id`` of this supervising actor (``ActorNotFound`` if none)."""
        cell = self._children.get(id) if self._children is not None else None
        if cell is None:
            raise ActorNotFound(f"{self.path}/{id}")
        return cell.ref

    def has_child(self, id: str) -> bool:
        return self._children is not None and self._children.get(id) is not None

    @property
    def child_count(self) -> int:
        return len(self._children) if self._children is not None else 0

    def child_ids(self) -> list[str]:
        """The ids of this actor's children, in start order."""
        return self._children.ids() if self._children is not None else []

    async def start_child(self, spec: ChildSpec[C]) -> Ref[C]:
        """Start one more child (after the others); returns once its ``on_start`` is done.

        Raises ``StartFailed`` if it could not start, ``ValueError`` if the id is taken, and
        ``RuntimeError`` if this actor does not supervise.
        """
        if self._children is None:
            raise RuntimeError(f"{self.path} does not supervise (its actor sets no supervision)")
        cell = await self._children.start(spec)
        return cell.ref

    async def stop_child(self, id: str) -> bool:
        """Stop the child ``id`` gracefully and forget it; ``False`` if there is no such child."""
        if self._children is None:
            return False
        return await self._children.stop(id)

    def restart_child_now(self, id: str) -> bool:
        """End the wait of the child ``id`` for its restart (see ``Supervision.park``); ``False`` if it
        was not waiting for one."""
        return self._children is not None and self._children.restart_now(id)

    def stop(self) -> None:
        """Stop this actor once the message in hand is done: a normal end, after which a transient
        child is not restarted (a permanent one is)."""
        self._stop_self()

    def _stop_self(self) -> None:
        raise NotImplementedError  # provided by the cell
