"""Ctrl-C while a command runs: it stops as Python and asyncio stop it, and nothing it says on the way
down reaches the user.

Outside an event loop, SIGINT raises ``KeyboardInterrupt`` where the command is. Inside one
(``anyio.run`` runs an ``asyncio.Runner``), the first SIGINT cancels the runner's main task, as the
runner's own handler would: cancellation unwinds the task groups in order, where an exception raised
between two bytecodes may be caught by some task and leave the loop waiting for ever. A second SIGINT
raises ``KeyboardInterrupt``. From the first SIGINT on, logging, warnings and unraisable exceptions are
silenced: actors cancelled mid-step log how they ended, coroutines never awaited warn at exit, and an
event loop a ``KeyboardInterrupt`` left mid-step complains when it is collected ("Exception ignored
in: BaseEventLoop.__del__"), all after the one line that says the command was interrupted.

asyncio's runner puts its own handler only in place of Python's default one, so it leaves this one
alone; this one finds the runner's main task where the runner keeps it (``Runner.run``'s ``task``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from types import FrameType, TracebackType
from typing import Any


class CtrlC:
    """The SIGINT handler while one command runs, as a context manager; it stands aside in a thread
    other than the main one, and where SIGINT is ignored (a background job) or handled already."""

    def __init__(self) -> None:
        self.pressed = 0
        self._installed = False

    def __enter__(self) -> CtrlC:
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    def ended(self, exc: BaseException) -> bool:
        """Whether ``exc`` is how the command ended on Ctrl-C (also inside a task group's group)."""
        if isinstance(exc, BaseExceptionGroup):
            return (
                exc.subgroup(lambda inner: not isinstance(inner, BaseExceptionGroup) and self.ended(inner))
                is not None
            )
        if isinstance(exc, KeyboardInterrupt):
            return True
        return isinstance(exc, asyncio.CancelledError) and self.pressed > 0

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.pressed += 1
        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")
        sys.unraisablehook = _unraised
        task = _runner_task(frame)
        if self.pressed == 1 and task is not None and not task.done():
            task.cancel()
            # Wake a loop that waits in select() with a long timeout.
            task.get_loop().call_soon_threadsafe(_nothing)
            return
        raise KeyboardInterrupt


def _unraised(unraisable: Any) -> None:
    """Say nothing of an exception raised where nothing can catch it (a finaliser, at exit)."""


def _runner_task(frame: FrameType | None) -> asyncio.Task[Any] | None:
    """The main task of the ``asyncio.Runner`` running below ``frame``, if one is."""
    for below in _frames(frame):
        if below.f_code is asyncio.Runner.run.__code__:
            task = below.f_locals.get("task")
            return task if isinstance(task, asyncio.Task) else None
    return None


def _frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def _nothing() -> None:
    pass
