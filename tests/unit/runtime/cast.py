"""The actors and helpers the runtime tests share: a journal of lifecycle events and an obedient worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import msgspec
import pytest
from anyio.abc import TaskGroup

from dgd.runtime import (
    NO_BACKOFF,
    Actor,
    ActorSystem,
    ChildSpec,
    Ref,
    Request,
    Restart,
    Strategy,
    Supervision,
    Supervisor,
    settle,
)

E = TypeVar("E", bound=BaseException)

#: Wall-clock seconds after which a test is failed as hung: a guard, never a timing assertion.
HANG_GUARD = 30.0

#: Parametrize ``anyio_backend`` with this to run a test on plain asyncio and on uvloop.
BOTH_LOOPS = pytest.mark.parametrize(
    "anyio_backend",
    [pytest.param("asyncio", id="asyncio"), pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")],
)


class Journal:
    """What the workers of one test did, in order (``start:/path``, ``stop:/path``), and a gate
    that holds every worker asked to :class:`Wait` until the test opens it."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.gate = anyio.Event()

    def record(self, event: str) -> None:
        self.events.append(event)

    def starts(self) -> list[str]:
        return [event.removeprefix("start:") for event in self.events if event.startswith("start:")]

    def stops(self) -> list[str]:
        return [event.removeprefix("stop:") for event in self.events if event.startswith("stop:")]

    def clear(self) -> None:
        self.events.clear()


class Add(msgspec.Struct, frozen=True):
    n: int = 1


class Total(msgspec.Struct, frozen=True):
    n: int
    seen: tuple[int, ...] = ()


class GetTotal(Request[Total], frozen=True):
    pass


class Crash(msgspec.Struct, frozen=True):
    why: str = "boom"


class CrashWhileAsked(Request[Total], frozen=True):
    pass


class Hang(Request[Total], frozen=True):
    """Never answered: the worker waits forever (until it is stopped by force)."""


class Wait(Request[Total], frozen=True):
    """Answered once the journal's gate opens; the worker handles nothing else meanwhile."""


class AskSelf(Request[Total], frozen=True):
    """The worker asks itself for its total."""


class Finish(msgspec.Struct, frozen=True):
    """The worker stops itself normally."""


class WrongReply(Request[Total], frozen=True):
    """The worker answers with a string: a programming error."""


class Unrelated(msgspec.Struct, frozen=True):
    """A message no worker accepts."""


WorkerMessage = Add | GetTotal | Crash | CrashWhileAsked | Hang | Wait | AskSelf | Finish | WrongReply


class Worker(Actor[WorkerMessage]):
    """Keeps a running total and does what it is told, recording its start and stop."""

    def __init__(self, journal: Journal, *, start_fails: bool = False, stop_hangs: bool = False) -> None:
        self.journal = journal
        self.start_fails = start_fails
        self.stop_hangs = stop_hangs
        self.seen: list[int] = []

    async def on_start(self) -> None:
        self.journal.record(f"start:{self.context.path}")
        if self.start_fails:
            raise RuntimeError("cannot start")

    async def receive(self, message: WorkerMessage) -> object:
        match message:
            case Add(n=n):
                self.seen.append(n)
            case GetTotal():
                return Total(sum(self.seen), tuple(self.seen))
            case Crash(why=why):
                raise RuntimeError(why)
            case CrashWhileAsked():
                raise RuntimeError("asked to crash")
            case Hang():
                await anyio.sleep_forever()
            case Wait():
                await self.journal.gate.wait()
                return Total(sum(self.seen), tuple(self.seen))
            case AskSelf():
                return await self.context.ref.ask(GetTotal())
            case Finish():
                self.context.stop()
            case WrongReply():
                return "not a total"
        return None

    async def on_stop(self) -> None:
        self.journal.record(f"stop:{self.context.path}")
        if self.stop_hangs:
            await anyio.sleep_forever()


def worker(
    id: str,
    journal: Journal,
    *,
    restart: Restart = Restart.PERMANENT,
    shutdown: float = 5.0,
    start_fails: bool = False,
    stop_hangs: bool = False,
) -> ChildSpec[WorkerMessage]:
    return ChildSpec(
        id,
        lambda: Worker(journal, start_fails=start_fails, stop_hangs=stop_hangs),
        restart=restart,
        shutdown=shutdown,
    )


def supervisor(
    id: str,
    children: Sequence[ChildSpec[Any]],
    strategy: Strategy = Strategy.ONE_FOR_ONE,
    *,
    intensity: int = 3,
    period: float = 5.0,
    restart: Restart = Restart.PERMANENT,
) -> ChildSpec[Any]:
    policy = Supervision(strategy, intensity=intensity, period=period, backoff=NO_BACKOFF)
    return ChildSpec(id, lambda: Supervisor(children, policy), restart=restart)


def immediate(
    strategy: Strategy = Strategy.ONE_FOR_ONE, *, intensity: int = 3, period: float = 5.0
) -> Supervision:
    """A policy that restarts without backoff, so tests need not move a clock."""
    return Supervision(strategy, intensity=intensity, period=period, backoff=NO_BACKOFF)


@asynccontextmanager
async def running(children: Sequence[ChildSpec[Any]], **options: Any) -> AsyncIterator[ActorSystem]:
    """An actor system for one test, failed as hung after HANG_GUARD wall-clock seconds."""
    options.setdefault("supervision", immediate())
    with anyio.fail_after(HANG_GUARD):
        async with ActorSystem(children, **options) as system:
            yield system


async def delivered(system: ActorSystem, path: str, message: Any) -> None:
    """Tell the actor at ``path`` ``message``, then settle: it and what it caused are handled."""
    await system.ref(path).tell(message)
    await settle()


@asynccontextmanager
async def held_busy(ref: Ref[Any], journal: Journal) -> AsyncIterator[TaskGroup]:
    """A task group in which the worker at ``ref`` is busy on a :class:`Wait`, handling nothing else,
    until the journal's gate opens (at the latest when the block ends)."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(ref.ask, Wait())
        await settle()
        try:
            yield tg
        finally:
            journal.gate.set()


async def failing(call: Awaitable[object], expected: type[E], failures: list[E]) -> None:
    """Await ``call``, which must fail with ``expected``; the error goes to ``failures``."""
    with pytest.raises(expected) as raised:
        await call
    failures.append(raised.value)
