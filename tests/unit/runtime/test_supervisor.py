"""Supervision: strategies and restart types."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from dgd.runtime import ActorSystem, Restart, Strategy

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
    worker,
)
from .supervisor_cases import states

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
