"""Time as the runtime sees it: an injected :class:`Clock`, so runs can be replayed.

Every wait in the runtime (restart backoff, ask and block timeouts, shutdown timeouts) goes through
the system's clock; nothing reads the wall clock. :class:`LoopClock` (the default) uses the running
event loop's time, so a loop whose time is virtual (looptime) makes the whole runtime virtual with no
change. :class:`ManualClock` is moved by hand, for tests that must not depend on how fast a machine is.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.lowlevel


class Timer(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None:
        """Call the callback off; does nothing if it already ran."""


class Clock(Protocol):
    """The source of time for one actor system."""

    def now(self) -> float:
        """Seconds since an arbitrary origin; never goes backwards."""

    async def sleep(self, delay: float) -> None:
        """Return once ``delay`` seconds have passed on this clock (cancellable)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` on the event loop once ``delay`` seconds have passed on this clock."""


class LoopClock:
    """The running event loop's clock (``loop.time()``); real time, or virtual under looptime."""

    # asyncio's own calls: what anyio's would come to on the asyncio backend the runtime runs on,
    # without looking the backend up on every read of the clock.

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay, callback)


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback: Callable[[], None] | None = callback
        self.cancelled = False

    def cancel(self) -> None:
        # What the callback holds (an ask's reply and message) goes now, not when the timer is due.
        self.cancelled = True
        self.callback = None


class ManualClock:
    """A clock that moves only when :meth:`advance` is called.

    Guarantee: timers fire in deadline order (ties in the order they were set), each with ``now()``
    equal to its deadline, and every task gets to react to one timer (the loop :func:`settle` s)
    before the next one fires. So a run driven by a ManualClock and a seeded random source does the
    same thing on every machine.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, delay: float) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = self.call_later(delay, lambda: _resolve(done))
        try:
            await done
        finally:
            timer.cancel()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(self._now + max(delay, 0.0), callback)
        heapq.heappush(self._timers, (timer.when, next(self._order), timer))
        return timer

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing every timer that falls due on the way."""
        if seconds < 0:
            raise ValueError(f"time only moves forward, not by {seconds}")
        target = self._now + seconds
        await settle()
        while self._timers and self._timers[0][0] <= target:
            _, _, timer = heapq.heappop(self._timers)
            if timer.cancelled or timer.callback is None:
                continue
            self._now = max(self._now, timer.when)
            timer.callback()
            await settle()
        self._now = target
        await settle()

    def pending(self) -> int:
        """How many timers are set and not cancelled."""
        return sum(1 for _, _, timer in self._timers if not timer.cancelled)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _is_blocked(task: asyncio.Task[object]) -> bool:
    # A task suspended on a future that is not done will not run until something happens.
    waiter: asyncio.Future[object] | None = getattr(task, "_fut_waiter", None)
    return waiter is not None and not waiter.done()


async def settle(max_rounds: int = 10_000) -> None:
    """Yield until every other task on the loop waits on something (seen twice in a row).

    Only for asyncio loops (plain or uvloop); used by :class:`ManualClock` and by tests to let the
    system react to an event without sleeping on the wall clock. Gives up after ``max_rounds``
    yields (a task that spins without waiting never settles).
    """
    this = asyncio.current_task()
    quiet = 0
    for _ in range(max_rounds):
        await anyio.lowlevel.checkpoint()
        if all(task is this or _is_blocked(task) for task in asyncio.all_tasks()):
            quiet += 1
            if quiet == 2:
                return
        else:
            quiet = 0
