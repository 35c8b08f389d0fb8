"""The virtual-time loop: time jumps to the next timer when every task waits, and only then."""

from __future__ import annotations

import asyncio
import time

import anyio
import anyio.lowlevel
import pytest

from dgd.sim.clock import backend_options, is_virtual, run

pytestmark = pytest.mark.anyio


async def test_sleeping_tasks_wake_in_deadline_order_each_at_its_exact_virtual_time() -> None:
    # Given three tasks sleeping different virtual durations
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await anyio.sleep(seconds)
        woke.append((name, anyio.current_time()))

    # When they all run
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper, "hour", 3600)
        tg.start_soon(sleeper, "minute", 60)
        tg.start_soon(sleeper, "second", 1)

    # Then each woke at its own deadline, in order, on a virtual clock
    assert is_virtual()
    assert woke == [("second", 1.0), ("minute", 60.0), ("hour", 3600.0)]


async def test_time_stands_still_while_tasks_are_ready_to_run() -> None:
    # Given a timer a second away
    start = anyio.current_time()
    with anyio.move_on_after(1) as scope:
        # When a task yields many times without waiting on anything
        for _ in range(1000):
            await anyio.lowlevel.checkpoint()
        # Then no time has passed and the timeout has not fired
        assert anyio.current_time() == start
    assert not scope.cancelled_caught


async def test_time_stands_still_while_a_thread_works_for_the_loop() -> None:
    # Given a task that would wake in 5 virtual seconds
    woke: list[float] = []

    async def sleeper() -> None:
        await anyio.sleep(5)
        woke.append(anyio.current_time())

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        # When a thread takes 50 real milliseconds
        start = anyio.current_time()
        await asyncio.to_thread(time.sleep, 0.05)

        # Then it took no virtual time, and the sleeper has not woken early
        assert anyio.current_time() == start
        assert woke == []
    assert woke == [start + 5]


def test_virtual_time_cannot_run_on_uvloop() -> None:
    with pytest.raises(ValueError, match="uvloop"):
        backend_options(virtual=True, use_uvloop=True)


def test_a_simulation_can_run_in_real_time_on_uvloop() -> None:
    async def main() -> tuple[bool, str]:
        await anyio.sleep(0.001)
        return is_virtual(), type(asyncio.get_running_loop()).__module__

    virtual, module = run(main, virtual=False, use_uvloop=True)
    assert not virtual and module.startswith("uvloop")


def test_run_defaults_to_virtual_time() -> None:
    async def main() -> float:
        await anyio.sleep(86_400)
        return anyio.current_time()

    assert run(main) == 86_400
