"""The daemon's timers on the simulation's virtual loop, for tests whose waits must cost no wall time.

``VIRTUAL`` is the ``anyio_backend`` to parametrize such a test with. ``threads_stop_the_clock``
makes ``anyio.to_thread.run_sync`` (certificates are made in threads) run on the loop's own
executor, which the virtual loop waits for with its clock still: without it, virtual time would
jump while a certificate is being made, and a ten-second guard could pass in a millisecond.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
import pytest

from dgd.sim.clock import backend_options

T = TypeVar("T")

VIRTUAL = ("asyncio", backend_options(virtual=True))


async def _on_the_loops_executor(func: Callable[..., T], *args: object, **_: object) -> T:
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(func, *args))


@pytest.fixture
def threads_stop_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anyio.to_thread, "run_sync", _on_the_loops_executor)
