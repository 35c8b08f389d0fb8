"""The root of an actor tree: addressing by path, chaos kill, introspection, graceful shutdown.

``async with ActorSystem(children, clock=..., random=..., metrics=...) as system:`` starts the root
supervisor and its children in order; leaving the block shuts everything down gracefully. The
system is structured: every actor task lives inside that block, and none outlives it.

Guarantees:

* A crash is contained by supervision; it never ends the system. Only the root supervisor exceeding
  its restart intensity does: then the block's body is cancelled and the ``async with`` raises
  ``RestartIntensityExceeded`` (a daemon exits and lets Kubernetes restart it).
* ``shutdown(timeout)`` stops children before parents, siblings in reverse start order, each
  within its own shutdown timeout; whatever is still running after ``timeout`` is cancelled. When it
  returns, no actor task is left and no timer of the runtime is pending.
* Every told message nobody could take is recorded in the dead-letter log (the last
  ``dead_letter_limit`` of them; ``dead_letter_count`` counts all).
"""

from __future__ import annotations

import logging
import random as random_module
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

import anyio
import msgspec
from anyio.abc import TaskGroup

from dgd.runtime.actor import Actor
from dgd.runtime.cell import ActorCell
from dgd.runtime.clock import Clock, LoopClock
from dgd.runtime.errors import ActorNotFound, StartFailed
from dgd.runtime.message import DeadLetter, Envelope
from dgd.runtime.metrics import Metrics, NullMetrics
from dgd.runtime.ref import Ref
from dgd.runtime.spec import ChildSpec, Supervision
from dgd.runtime.supervisor import Supervisor

M = TypeVar("M")

logger = logging.getLogger("dgd.actors")


class ActorInfo(msgspec.Struct, frozen=True):
    """One line of ``ActorSystem.tree()``."""

    path: str
    actor: str
    state: str
    restarts: int
    mailbox_depth: int


class ActorSystem:
    """The root supervisor and what every actor shares: clock, random source, metrics, registry."""

    def __init__(
        self,
        children: Sequence[ChildSpec[Any]],
        *,
        supervision: Supervision | None = None,
        clock: Clock | None = None,
        random: random_module.Random | None = None,
        metrics: Metrics | None = None,
        shutdown_timeout: float = 10.0,
        dead_letter_limit: int = 10_000,
    ) -> None:
        self.clock: Clock = clock or LoopClock()
        self.random = random or random_module.Random()
        self.metrics: Metrics = metrics or NullMetrics()
        self.shutdown_timeout = shutdown_timeout
        self.dead_letter_count = 0
        self._dead_letters: deque[DeadLetter] = deque(maxlen=dead_letter_limit)
        self._cells: dict[str, ActorCell[Any]] = {}
        self._failure: BaseException | None = None
        self._tg: TaskGroup | None = None
        specs = tuple(children)
        root_spec: ChildSpec[Any] = ChildSpec("root", lambda: Supervisor(specs, supervision))
        self._root: ActorCell[Any] = ActorCell(self, root_spec, "/", self)
        self.register(self._root)

    # -- lifetime --------------------------------------------------------------------------------

    async def __aenter__(self) -> ActorSystem:
        if self._tg is not None:
            raise RuntimeError("an actor system runs once")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            await self._root.begin(self._tg)
        except StartFailed:
            await self._tg.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert self._tg is not None
        # Shut down gracefully also when the body failed or was cancelled (bounded by the timeout).
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
        try:
            with anyio.CancelScope(shield=exc is not None):
                await self.shutdown()
        finally:
            # A cancellation goes to the task group (it may be the group's own, from a failed root);
            # any other exception of the body propagates as it is, not wrapped in a group.
            if exc is None or cancelled:
                suppressed = bool(await self._tg.__aexit__(exc_type, exc, tb))
            else:
                await self._tg.__aexit__(None, None, None)
                suppressed = False
        if self._failure is not None:
            raise self._failure
        return suppressed

    async def shutdown(self, timeout: float | None = None) -> None:
        """Stop every actor gracefully within ``timeout`` seconds (default: ``shutdown_timeout``)."""
        root = self._root
        if root.running:
            root.request_stop()
            await root.wait_stopped(self.shutdown_timeout if timeout is None else timeout)

    def child_exited(self, cell: ActorCell[Any], generation: int, reason: BaseException | None) -> None:
        # The root ended without being asked to: the system has failed.
        self._failure = reason or RuntimeError("the root supervisor stopped by itself")
        logger.critical("the actor system failed: %r", self._failure)
        assert self._tg is not None
        self._tg.cancel_scope.cancel()

    # -- addressing ------------------------------------------------------------------------------

    @overload
    def ref(self, path: str) -> Ref[Any]: ...

    @overload
    def ref(self, path: str, kind: type[Actor[M]]) -> Ref[M]: ...  # type: ignore[type-var]

    def ref(self, path: str, kind: type[Actor[Any]] | None = None) -> Ref[Any]:
        """The ref of the actor at ``path`` (``ActorNotFound`` if there is none now).

        With ``kind``, the ref is typed by that actor's messages, and the actor must be one.
        """
        cell = self.lookup(path)
        if cell is None:
            raise ActorNotFound(path)
        if kind is not None and not (cell.actor_type and issubclass(cell.actor_type, kind)):
            raise TypeError(f"{path} runs {cell.kind}, not {kind.__name__}")
        return cell.ref

    def kill(self, path: str) -> bool:
        """End the actor at ``path`` as if it crashed with ``Killed`` (for chaos testing).

        Its supervisor restarts it by its policy. ``False`` if it was not running (e.g. waiting for
        its restart). The root cannot be killed.
        """
        if path == "/":
            raise ValueError("the root supervisor cannot be killed; use shutdown()")
        cell = self.lookup(path)
        if cell is None:
            raise ActorNotFound(path)
        return cell.kill()

    def tree(self) -> list[ActorInfo]:
        """Every actor, depth first in start order: path, actor class, state, restarts, mailbox."""
        out: list[ActorInfo] = []
        pending = [self._root]
        while pending:
            cell = pending.pop()
            out.append(ActorInfo(cell.path, cell.kind, cell.state.value, cell.restarts, cell.mailbox_depth))
            if cell.children is not None:
                pending.extend(reversed(cell.children.cells()))
        return out

    def lookup(self, path: str) -> ActorCell[Any] | None:
        return self._cells.get(path)

    def register(self, cell: ActorCell[Any]) -> None:
        if cell.path in self._cells:
            raise ValueError(f"an actor already lives at {cell.path}")
        self._cells[cell.path] = cell

    def unregister(self, cell: ActorCell[Any]) -> None:
        cell.retired = True
        if self._cells.get(cell.path) is cell:
            del self._cells[cell.path]

    # -- dead letters ----------------------------------------------------------------------------

    @property
    def dead_letters(self) -> list[DeadLetter]:
        """The most recent dead letters, oldest first."""
        return list(self._dead_letters)

    def dead_letter(self, envelope: Envelope, target: str, reason: str) -> None:
        """Record a told message that could not be delivered to ``target``."""
        letter = DeadLetter(
            envelope.sender, target, type(envelope.message).__name__, reason, self.clock.now()
        )
        self._dead_letters.append(letter)
        self.dead_letter_count += 1
        self.metrics.dead_lettered(letter)
        logger.debug("dead letter: %s", letter)
