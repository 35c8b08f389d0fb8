"""Simulated time: an event loop whose clock jumps to the next timer whenever every task waits.

Under :class:`VirtualEventLoop`, ``loop.time()`` (so ``anyio.current_time()``, ``anyio.sleep``,
timeouts, the actor runtime's ``LoopClock`` and every ``call_later``) is virtual: it starts at 0 and
moves only when the loop has nothing ready to run, straight to the deadline of the earliest timer.
Simulated minutes therefore take the milliseconds the code needs, and a run replays exactly: timers
fire in deadline order, ties in the order they were set, and no wall-clock reading enters.

Guarantees and limits:

* Time never moves while a callback is ready: a task that yields (``checkpoint``) keeps it still.
* Work outside the loop takes no virtual time: while an executor job (``loop.run_in_executor``,
  ``asyncio.to_thread``) is running, time stands still and the loop waits for it in real time.
  anyio's ``to_thread`` runs its own worker threads, which the loop cannot see: time may jump
  while one works, so the simulation path does not use it.
* Real I/O is served as it arrives, but time does not wait for it: a simulation with sockets open to
  the outside world should run in real time (``run(..., virtual=False)``) instead.
* With nothing ready, no timer and no executor job, the loop blocks as a real loop would (only
  real I/O or a thread-safe call can wake it): that is a deadlock of the simulation.

uvloop's clock belongs to libuv and cannot be made virtual, so virtual runs use asyncio's selector
loop; real-time runs (demos) may use uvloop (see ``docs/decisions.md``).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Executor
from typing import Any, TypeVar, TypeVarTuple, Unpack

import anyio

T = TypeVar("T")
PosArgs = TypeVarTuple("PosArgs")

#: Where simulated cluster time starts: 2026-01-01T00:00:00Z, in seconds since the Unix epoch.
EPOCH = 1_767_225_600.0

#: The longest real wait, in seconds, for an executor job before the loop looks again.
_EXECUTOR_POLL = 0.001


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """An asyncio selector loop with a virtual clock (see the module's guarantees)."""

    def __init__(self) -> None:
        super().__init__()
        self._virtual_now = 0.0
        self._outside: set[asyncio.Future[Any]] = set()
        inner: selectors.BaseSelector = self._selector  # type: ignore[has-type]
        self._selector = _JumpingSelector(inner, self)

    def time(self) -> float:
        return self._virtual_now

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[Unpack[PosArgs]], T], *args: *PosArgs
    ) -> asyncio.Future[T]:
        future = super().run_in_executor(executor, func, *args)
        self._outside.add(future)
        future.add_done_callback(self._outside.discard)
        return future

    def advance(self, seconds: float) -> None:
        """Move the clock forward (only the selector does this, when every task waits)."""
        self._virtual_now += max(seconds, 0.0)

    @property
    def busy_outside(self) -> bool:
        """Whether an executor job is running (time must then stand still)."""
        return bool(self._outside)


class _JumpingSelector(selectors.BaseSelector):
    """The loop's selector, except that a wait for a timer moves virtual time instead of sleeping."""

    def __init__(self, inner: selectors.BaseSelector, loop: VirtualEventLoop) -> None:
        self._inner = inner
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # Real I/O first, without waiting; a poll (timeout 0) is only that.
        ready = self._inner.select(0)
        if ready or timeout == 0:
            return ready
        # Nothing scheduled: block for real I/O. A thread at work: wait for it in real time.
        if timeout is None:
            return self._inner.select(None)
        if self._loop.busy_outside:
            return self._inner.select(min(timeout, _EXECUTOR_POLL))
        # Every task waits on a timer: jump to it.
        self._loop.advance(timeout)
        return []

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def close(self) -> None:
        self._inner.close()

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.get_key(fileobj)

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._inner.get_map()


def backend_options(*, virtual: bool = True, use_uvloop: bool = False) -> dict[str, Any]:
    """anyio's asyncio backend options for a simulation in virtual or real time."""
    if virtual and use_uvloop:
        raise ValueError("uvloop's clock cannot be virtual: use virtual=False for a run on uvloop")
    if virtual:
        return {"loop_factory": VirtualEventLoop}
    return {"use_uvloop": use_uvloop}


def run(
    main: Callable[[Unpack[PosArgs]], Awaitable[T]],
    *args: *PosArgs,
    virtual: bool = True,
    use_uvloop: bool = False,
) -> T:
    """Run ``main`` on a fresh event loop: virtual time (the default) or real time (demos)."""
    options = backend_options(virtual=virtual, use_uvloop=use_uvloop)
    return anyio.run(main, *args, backend="asyncio", backend_options=options)


def is_virtual() -> bool:
    """Whether the running event loop's time is virtual."""
    return isinstance(asyncio.get_running_loop(), VirtualEventLoop)
