"""Supervision: strategies, restart types, ordered start and stop, and shutdown timeouts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from dgd.runtime import (
    ActorSystem,
    ManualClock,
    Restart,
    StartFailed,
    Strategy,
    settle,
)

from .cast import (
    BOTH_LOOPS,
    Add,
    Crash,
    Finish,
    GetTotal,
    Journal,
    Total,
    delivered,
    immediate,
    running,
    supervisor,
    worker,
)
from .supervisor_cases import asyncio_tasks, states

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def three_workers(strategy: Strategy, *, holding: str) -> AsyncIterator[tuple[ActorSystem, Journal]]:
    """Workers a, b and c under ``strategy``, the one at ``holding`` with a total of 7; the journal
    then cleared, so it holds only what comes next."""
    journal = Journal()
    children = [worker(name, journal) for name in "abc"]
    async with running(children, supervision=immediate(strategy)) as system:
        await system.ref(holding).tell(Add(7))
        journal.clear()
        yield system, journal


# -- strategies ----------------------------------------------------------------------------------


@BOTH_LOOPS
async def test_one_for_one_restarts_only_the_child_that_crashed() -> None:
    # Given three workers under one_for_one, the middle one holding state
    async with three_workers(Strategy.ONE_FOR_ONE, holding="/b") as (system, journal):
        # When a crashes
        await delivered(system, "/a", Crash())

        # Then only a was restarted; b kept its state and nobody else stopped
        assert journal.events == ["start:/a"]
        assert await system.ref("/b").ask(GetTotal()) == Total(7, (7,))
        assert states(system) == {
            "/": ("running", 0),
            "/a": ("running", 1),
            "/b": ("running", 0),
            "/c": ("running", 0),
        }


@BOTH_LOOPS
async def test_one_for_all_stops_the_others_in_reverse_order_then_restarts_all_in_order() -> None:
    # Given three workers under one_for_all
    async with three_workers(Strategy.ONE_FOR_ALL, holding="/b") as (system, journal):
        # When b crashes
        await delivered(system, "/b", Crash())

        # Then c and a were stopped (reverse order), and all three started again in order
        assert journal.events == ["stop:/c", "stop:/a", "start:/a", "start:/b", "start:/c"]
        assert await system.ref("/b").ask(GetTotal()) == Total(0)
        assert [restarts for _, restarts in states(system).values()] == [0, 1, 1, 1]


async def test_rest_for_one_restarts_the_crashed_child_and_those_started_after_it() -> None:
    # Given three workers under rest_for_one
    async with three_workers(Strategy.REST_FOR_ONE, holding="/a") as (system, journal):
        # When b crashes
        await delivered(system, "/b", Crash())

        # Then c was stopped, and b and c started again in order; a kept running with its state
        assert journal.events == ["stop:/c", "start:/b", "start:/c"]
        assert await system.ref("/a").ask(GetTotal()) == Total(7, (7,))
        assert states(system)["/a"] == ("running", 0)


# -- restart types ---------------------------------------------------------------------------------


async def test_a_permanent_child_is_restarted_even_after_a_normal_stop() -> None:
    # Given a permanent worker
    journal = Journal()
    async with running([worker("w", journal, restart=Restart.PERMANENT)]) as system:
        # When it stops itself normally
        await delivered(system, "/w", Finish())

        # Then it was restarted
        assert journal.events == ["start:/w", "stop:/w", "start:/w"]
        assert states(system)["/w"] == ("running", 1)


async def test_a_transient_child_is_restarted_after_a_crash_but_not_after_a_normal_stop() -> None:
    # Given a transient worker
    journal = Journal()
    async with running([worker("w", journal, restart=Restart.TRANSIENT)]) as system:
        # When it crashes, it is restarted
        await delivered(system, "/w", Crash())
        assert states(system)["/w"] == ("running", 1)

        # When it then stops itself normally, it stays stopped
        await delivered(system, "/w", Finish())
        assert states(system)["/w"] == ("stopped", 1)


async def test_a_temporary_child_is_never_restarted_and_is_forgotten() -> None:
    # Given a temporary worker next to a permanent one
    journal = Journal()
    children = [worker("t", journal, restart=Restart.TEMPORARY), worker("p", journal)]
    async with running(children) as system:
        # When the temporary one crashes
        await delivered(system, "/t", Crash())

        # Then it is gone from the tree, and it was started only once
        assert list(states(system)) == ["/", "/p"]
        assert journal.starts() == ["/t", "/p"]


async def test_a_temporary_sibling_stopped_by_one_for_all_is_not_restarted() -> None:
    # Given a temporary and a permanent worker under one_for_all
    journal = Journal()
    children = [worker("t", journal, restart=Restart.TEMPORARY), worker("p", journal)]
    async with running(children, supervision=immediate(Strategy.ONE_FOR_ALL)) as system:
        journal.clear()

        # When the permanent one crashes
        await delivered(system, "/p", Crash())

        # Then the temporary one was stopped and forgotten; only the permanent one came back
        assert journal.events == ["stop:/t", "start:/p"]
        assert list(states(system)) == ["/", "/p"]


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
