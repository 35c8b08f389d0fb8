"""How one actor reaches another: a :class:`Ref` sends by path, across restarts.

Delivery guarantees (for every sender, inside an actor or not):

* ``tell`` is fire and forget, at most once. It raises only for the sender's own mistakes or for
  backpressure: :class:`UnknownMessage` (not in the target's union) and :class:`MailboxFull`. A
  message the target cannot take (stopped, crashed, restarting, no actor at the path) goes to the
  system's dead-letter log with sender, target and message type, and ``tell`` returns normally.
* ``ask`` returns the reply, typed by the request (``Request[R]`` gives ``R``), or raises:
  :class:`ActorStopped` when the target is not running, :class:`ActorCrashed` at once when the
  target crashes before replying, :class:`AskTimeout` after ``timeout`` seconds (of the system
  clock) without a reply. A request whose asker gave up (timeout, cancellation) before the target
  reached it is not delivered.
* Two messages from the same sender to the same target are handled in the order they were sent.
"""

from __future__ import annotations

import asyncio
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dgd.runtime.errors import ActorError, ActorStopped, AskTimeout
from dgd.runtime.mailbox import Offer
from dgd.runtime.message import Envelope, Request

if TYPE_CHECKING:
    from dgd.runtime.cell import ActorCell
    from dgd.runtime.system import ActorSystem

M = TypeVar("M")
R = TypeVar("R")

#: The default seconds an ask waits for its reply.
ASK_TIMEOUT = 30.0

#: The actor whose task is running (``None`` outside actors); the sender of what it sends.
current_actor: ContextVar[ActorCell[Any] | None] = ContextVar("current_actor", default=None)


class Ref(Generic[M]):
    """The address of the actor at one path; it stays valid while that actor restarts. It holds the
    actor it last found weakly: a ``Ref`` kept after its actor stopped does not keep it in memory."""

    __slots__ = ("_cell", "_path", "_system")

    def __init__(self, system: ActorSystem, path: str, cell: ActorCell[Any] | None = None) -> None:
        self._system = system
        self._path = path
        self._cell: weakref.ref[ActorCell[Any]] | None = weakref.ref(cell) if cell is not None else None

    @property
    def path(self) -> str:
        return self._path

    @property
    def alive(self) -> bool:
        """Whether an actor is running at this path now."""
        cell = self._resolve()
        return cell is not None and cell.running

    def __repr__(self) -> str:
        return f"Ref({self._path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ref) and other._path == self._path and other._system is self._system

    def __hash__(self) -> int:
        return hash(self._path)

    async def tell(self, message: M) -> None:
        """Send without waiting for an answer; waits only for mailbox room (policy ``BLOCK``)."""
        addressed = self._addressed(message)
        if addressed is None:
            return
        cell, envelope = addressed
        mailbox = cell.mailbox_now
        outcome = mailbox.offer(envelope)
        if outcome is Offer.QUEUED:
            return
        if outcome is Offer.FULL:
            await mailbox.enter(envelope, self._system.clock, self._path)
        elif outcome is Offer.CLOSED:
            self._system.dead_letter(envelope, self._path, cell.down_reason)
        else:
            self._system.metrics.message_coalesced(self._path, type(message))

    def tell_nowait(self, message: M) -> None:
        """Send without waiting at all: a full mailbox raises ``MailboxFull`` whatever its policy."""
        addressed = self._addressed(message)
        if addressed is None:
            return
        cell, envelope = addressed
        outcome = cell.mailbox_now.offer(envelope)
        if outcome is Offer.FULL:
            cell.refuse(message)
        elif outcome is Offer.CLOSED:
            self._system.dead_letter(envelope, self._path, cell.down_reason)
        elif outcome is Offer.COALESCED:
            self._system.metrics.message_coalesced(self._path, type(message))

    async def ask(self, message: Request[R], *, timeout: float | None = ASK_TIMEOUT) -> R:
        """Send a request and wait for its reply (see the module's guarantees)."""
        cell = self._resolve()
        if cell is None:
            raise ActorStopped(self._path, "is not running (no actor at path)")
        cell.check(message)
        asker = current_actor.get()
        if asker is cell:
            raise RuntimeError(f"{self._path} asked itself: that can only time out")
        system = self._system
        clock = system.clock
        sent = clock.now()
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        envelope = Envelope(message, asker.path if asker is not None else None, reply)
        mailbox = cell.mailbox_now
        outcome = mailbox.offer(envelope)
        if outcome is Offer.FULL:
            await mailbox.enter(envelope, clock, self._path)
        elif outcome is Offer.CLOSED:
            system.metrics.ask_completed(self._path, type(message), 0.0, False)
            raise ActorStopped(self._path, f"is not running ({cell.state.value})")
        timer = None
        if timeout is not None:
            timer = clock.call_later(timeout, lambda: _expire(reply, self._path, message, timeout))
        try:
            answer: R = await reply
        except ActorError:
            system.metrics.ask_completed(self._path, type(message), clock.now() - sent, False)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        system.metrics.ask_completed(self._path, type(message), clock.now() - sent, True)
        return answer

    def _addressed(self, message: M) -> tuple[ActorCell[Any], Envelope] | None:
        """The cell a told ``message`` goes to and its envelope, the message checked against the cell's
        kind; ``None`` when no actor is at the path (the message is then a dead letter)."""
        cell = self._resolve()
        if cell is None:
            self._system.dead_letter(Envelope(message, _sender(), None), self._path, "no actor at path")
            return None
        cell.check(message)
        return cell, Envelope(message, _sender(), None)

    def _resolve(self) -> ActorCell[Any] | None:
        # Follow the path again once the cell we knew was replaced (its supervisor restarted) or gone.
        known = self._cell
        cell = known() if known is not None else None
        if cell is None or cell.retired:
            cell = self._system.lookup(self._path)
            self._cell = weakref.ref(cell) if cell is not None else None
        return cell


def _sender() -> str | None:
    cell = current_actor.get()
    return cell.path if cell is not None else None


def _expire(reply: asyncio.Future[Any], path: str, message: object, timeout: float) -> None:
    if not reply.done():
        reply.set_exception(AskTimeout(path, type(message).__name__, timeout))
