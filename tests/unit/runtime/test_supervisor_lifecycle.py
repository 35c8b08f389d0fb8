"""Supervision of starting and stopping: children start in order and stop in reverse order, and shutdown
timeouts.
"""

from __future__ import annotations

import anyio
import pytest

from dgd.runtime import ManualClock, StartFailed, settle

from .cast import BOTH_LOOPS, Journal, running, supervisor, worker
from .supervisor_cases import asyncio_tasks, states

pytestmark = pytest.mark.anyio


# -- ordered start and stop --------------------------------------------------------------------------


@BOTH_LOOPS
async def test_children_start_in_order_and_stop_in_reverse_order_through_the_tree() -> None:
    # Given a tree: a, then a supervisor of b and c, then d
    journal = Journal()
    children = [
        worker("a", journal),
        supervisor("sup", [worker("b", journal), worker("c", journal)]),
        worker("d", journal),
    ]
    async with running(children):
        # When it is started, children start in order, depth first
        assert journal.starts() == ["/a", "/sup/b", "/sup/c", "/d"]

    # Then on shutdown they stop in exactly the reverse order
    assert journal.stops() == ["/d", "/sup/c", "/sup/b", "/a"]


async def test_a_child_that_fails_to_start_stops_its_started_siblings_and_fails_the_start() -> None:
    # Given a supervisor whose second child cannot start
    journal = Journal()
    children = [
        supervisor(
            "sup", [worker("a", journal), worker("b", journal, start_fails=True), worker("c", journal)]
        )
    ]
    tasks_before = set(asyncio_tasks())

    # When the system starts
    with pytest.raises(StartFailed) as failure:
        async with running(children):
            pass

    # Then a was stopped again, c was never started, the start failed naming the root, and no
    # task is left
    assert journal.events == ["start:/sup/a", "start:/sup/b", "stop:/sup/a"]
    assert failure.value.path == "/"
    assert set(asyncio_tasks()) == tasks_before


# -- shutdown timeouts -------------------------------------------------------------------------------


async def test_a_child_that_ignores_shutdown_is_cancelled_after_its_timeout() -> None:
    # Given a worker a, and after it a worker b whose on_stop never returns (shutdown: 3s)
    journal = Journal()
    clock = ManualClock()
    children = [worker("a", journal), worker("b", journal, stop_hangs=True, shutdown=3)]
    async with running(children, clock=clock) as system, anyio.create_task_group() as tg:
        # When the system shuts down
        tg.start_soon(system.shutdown)
        await settle()

        # Then b is stopping, and a (stopped after b) still runs, until 3 seconds pass
        assert journal.stops() == ["/b"]
        await clock.advance(2.9)
        assert states(system)["/a"] == ("running", 0)
        await clock.advance(0.1)

        # And then b was cancelled and a stopped
        assert journal.stops() == ["/b", "/a"]
        assert states(system)["/"][0] == "stopped"


async def test_shutdown_zero_cancels_a_child_at_once_without_on_stop() -> None:
    # Given a worker with shutdown=0 (OTP's brutal_kill)
    journal = Journal()
    clock = ManualClock()
    async with running([worker("w", journal, shutdown=0)], clock=clock) as system:
        # When the system shuts down
        await system.shutdown()

    # Then it was cancelled without running on_stop, and no time passed
    assert journal.stops() == []
    assert clock.now() == 0
