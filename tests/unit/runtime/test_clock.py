"""The manual clock: time moves only when told, timers fire in order, each one settled."""

from __future__ import annotations

import anyio
import pytest

from dgd.runtime import ManualClock

pytestmark = pytest.mark.anyio


async def test_timers_fire_in_deadline_order_each_at_its_own_time() -> None:
    # Given timers set out of order, one of them cancelled
    clock = ManualClock(start=100.0)
    fired: list[tuple[str, float]] = []
    clock.call_later(3, lambda: fired.append(("c", clock.now())))
    clock.call_later(1, lambda: fired.append(("a", clock.now())))
    clock.call_later(2, lambda: fired.append(("b", clock.now())))
    clock.call_later(2, lambda: fired.append(("b2", clock.now())))
    clock.call_later(1.5, lambda: fired.append(("cancelled", clock.now()))).cancel()

    # When 2.5 seconds pass
    await clock.advance(2.5)

    # Then the due ones fired in order (ties in the order set), each seeing its deadline as now
    assert fired == [("a", 101.0), ("b", 102.0), ("b2", 102.0)]
    assert clock.now() == 102.5
    assert clock.pending() == 1


async def test_a_sleeping_task_wakes_when_its_time_has_come_and_reacts_before_the_next_timer() -> None:
    # Given a task that sleeps 2 seconds, then records the time and sets a 1-second timer
    clock = ManualClock()
    seen: list[str] = []

    async def sleeper() -> None:
        await clock.sleep(2)
        seen.append(f"woke at {clock.now():g}")
        clock.call_later(1, lambda: seen.append(f"timer at {clock.now():g}"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)

        # When 5 seconds pass in one step
        await clock.advance(5)

    # Then the task woke at 2, and its timer (set when it woke) fired at 3 within the same step
    assert seen == ["woke at 2", "timer at 3"]
