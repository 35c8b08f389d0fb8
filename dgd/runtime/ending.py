"""How an incarnation's end is settled: who hears of it, and what becomes of what it leaves.

An incarnation always ends the same way, crashed, stopped or cancelled (``ActorCell._exit``, which
runs even while a cancellation unwinds): every ask left in its mailbox, and the one in hand, fails at
once with a typed error (``ActorStopped``, or ``ActorCrashed`` with the reason); every tell nobody
will take goes to the system's dead-letter log; whoever waits for the end (``ends_within``: a stop
given a shutdown time) is told; a crash is counted and logged (an actor cancelled by the stop it was
asked for, or with its supervisor, only at debug: a clean shutdown is quiet); and an end its
supervisor did not ask for is reported to it as a :class:`Parent`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from anyio import TaskHandle

from dgd.runtime.errors import ActorCrashed, ActorStopped, Killed
from dgd.runtime.message import Envelope

if TYPE_CHECKING:
    from dgd.runtime.cell import ActorCell
    from dgd.runtime.clock import Clock
    from dgd.runtime.system import ActorSystem

logger = logging.getLogger("dgd.actors")


class Parent(Protocol):
    """Who is told when a cell's incarnation ends without being asked to (a supervisor)."""

    def child_exited(self, cell: ActorCell[Any], generation: int, reason: BaseException | None) -> None:
        """The incarnation ``generation`` of ``cell`` ended: crashed (``reason``) or by itself."""


def settle(system: ActorSystem, path: str, left: list[Envelope], reason: BaseException | None) -> None:
    """Settle the messages an incarnation left (``reason``: why it ended, ``None`` if it stopped)."""
    # Asks fail at once with a typed error; tells nobody will take go to the dead-letter log.
    why = f"actor crashed ({type(reason).__name__})" if reason is not None else "actor stopped"
    for envelope in left:
        reply = envelope.reply
        if reply is None:
            system.dead_letter(envelope, path, why)
        elif not reply.done():
            if reason is None:
                reply.set_exception(ActorStopped(path, "stopped before replying"))
            else:
                reply.set_exception(ActorCrashed(path, reason))


def report(system: ActorSystem, path: str, reason: BaseException, *, stopping: bool) -> None:
    """Count and log an incarnation that ended with ``reason`` (``stopping``: its stop was asked)."""
    system.metrics.crashed(path, reason)
    if isinstance(reason, Killed) and (stopping or reason.incidental):
        # Cancelled by the stop it was asked for (shutdown=0, or its time was up: warned of then), or
        # with its supervisor, whose end is the one reported.
        logger.debug("%s ended while stopping: %r", path, reason)
    elif stopping:
        logger.warning("%s failed while stopping: %r", path, reason, exc_info=reason)
    elif isinstance(reason, Killed):
        logger.warning("%s", reason)
    else:
        logger.error("%s crashed: %r", path, reason, exc_info=reason)


async def ends_within(waiters: list[asyncio.Future[bool]], clock: Clock, timeout: float) -> bool:
    """Whether the incarnation ends within ``timeout`` seconds: the future this adds to its end's
    ``waiters`` is told ``True`` by the end, ``False`` by the timer, whichever comes first."""
    ended: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    waiters.append(ended)
    timer = clock.call_later(timeout, lambda: resolve(ended, False))
    try:
        return await ended
    finally:
        timer.cancel()


def running(handle: TaskHandle[None]) -> bool:
    """Whether the incarnation's task has not ended yet."""
    return handle.status in (TaskHandle.Status.PENDING, TaskHandle.Status.CANCELLING)


def resolve(future: asyncio.Future[bool], value: bool) -> None:
    """Tell a waiter for the end whether it came (``True``) or its time ran out (``False``)."""
    if not future.done():
        future.set_result(value)
