"""Event-loop stalls in a chaos campaign: the loop callbacks that ran over ``SLOW`` seconds of wall time.

Every step the operator takes on the event loop holds every other actor, watch and timer until it
returns; in the daemon, a step that holds the loop for long delays lease renewals too. A chaos campaign
therefore lists the callbacks that took longer than ``SLOW`` (100 ms) of wall time, and which schedule
ran them. They are not part of the campaign report (``chaos.CampaignReport``): wall time differs
from run to run and machine to machine, and the report is the same bytes for the same campaign.

asyncio's own slow-callback warning (debug mode, ``loop.slow_callback_duration``) cannot see them: it
measures with ``loop.time()``, which the virtual clock (``dgd.sim.clock``) holds still while a callback
runs. ``watching_stalls`` instead times every callback with ``time.perf_counter`` by wrapping
``asyncio.events.Handle._run``, through which every callback and task step of an asyncio loop runs (as
aiodebug and logfire do); it costs two clock readings a callback and changes no scheduling, so runs
replay as before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import CoroutineType, FrameType
from typing import Any

import msgspec

#: A callback that holds the loop longer than this (seconds of wall time) is a stall.
SLOW = 0.1
#: The longest stalls the summary shows.
SHOWN = 10
#: The package's sources: where a stalled task waits is shown in them if it can be.
_PACKAGE = Path(__file__).resolve().parents[1]


class Stall(msgspec.Struct, frozen=True):
    """One callback that held the event loop for ``seconds`` of wall time, while ``schedule`` was being
    replayed: ``what`` names it (an actor's or other task's step, with where it stopped, or a callback)."""

    schedule: str
    seconds: float
    what: str


class StallWatch:
    """The stalls seen so far, attributed to the schedule being replayed (see ``during``)."""

    def __init__(self, slow: float) -> None:
        self.slow = slow
        self.stalls: list[Stall] = []
        self._schedule = ""

    @contextmanager
    def during(self, schedule: str) -> Iterator[None]:
        """Stalls seen meanwhile happened while ``schedule`` was being replayed."""
        self._schedule = schedule
        try:
            yield
        finally:
            self._schedule = ""

    def _saw(self, seconds: float, handle: asyncio.Handle) -> None:
        self.stalls.append(Stall(self._schedule, round(seconds, 3), described(handle)))


@contextmanager
def watching_stalls(slow: float = SLOW) -> Iterator[StallWatch]:
    """Time every event-loop callback run meanwhile (on any asyncio loop of this process); those over
    ``slow`` seconds of wall time are kept in the watch's ``stalls``."""
    watch = StallWatch(slow)
    run: Callable[[asyncio.Handle], None] = asyncio.events.Handle._run

    def timed(handle: asyncio.Handle) -> None:
        started = time.perf_counter()
        try:
            run(handle)
        finally:
            seconds = time.perf_counter() - started
            if seconds > watch.slow:
                watch._saw(seconds, handle)

    asyncio.events.Handle._run = timed  # type: ignore[method-assign,assignment]
    try:
        yield watch
    finally:
        asyncio.events.Handle._run = run  # type: ignore[method-assign,assignment]


def stalls_summary(stalls: Sequence[Stall], slow: float = SLOW) -> str:
    """The stalls for people: a section of its own, printed after a campaign's summary, the longest first."""
    heading = f"event-loop stalls (wall time: not in the report, differs from run to run), over {slow:g}s:"
    if not stalls:
        return f"{heading} none\n"
    lines = [f"{heading} {len(stalls)}"]
    longest = sorted(stalls, key=lambda stall: -stall.seconds)
    lines += [
        f"  {stall.seconds:.3f}s  {stall.schedule or 'outside a replay'}: {stall.what}"
        for stall in longest[:SHOWN]
    ]
    if len(longest) > SHOWN:
        lines.append(f"  and {len(longest) - SHOWN} shorter ones")
    return "\n".join(lines) + "\n"


def described(handle: asyncio.Handle) -> str:
    """What ``handle`` ran: a task's step (its name, for an actor its path, and where it stopped next),
    or the callback's name."""
    callback: Any = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    if isinstance(task, asyncio.Task):
        where = _stopped_at(task)
        return f"task {task.get_name()}" + (f", then waited in {where}" if where else ", then ended")
    return str(getattr(callback, "__qualname__", None) or repr(callback))


def _stopped_at(task: asyncio.Task[Any]) -> str:
    """Where ``task`` waits now, as ``function (file:line)``: the innermost coroutine of this package
    it waits in, else its own coroutine; empty once it is done."""
    coroutine: Any = task.get_coro()
    frames: list[FrameType] = []
    while isinstance(coroutine, CoroutineType) and coroutine.cr_frame is not None:
        frames.append(coroutine.cr_frame)
        coroutine = coroutine.cr_await
    ours = [frame for frame in frames if Path(frame.f_code.co_filename).is_relative_to(_PACKAGE)]
    frame = ours[-1] if ours else frames[0] if frames else None
    if frame is None:
        return ""
    path = Path(frame.f_code.co_filename)
    shown = path.relative_to(_PACKAGE.parent) if path.is_relative_to(_PACKAGE) else path.name
    return f"{frame.f_code.co_qualname} ({shown}:{frame.f_lineno})"
