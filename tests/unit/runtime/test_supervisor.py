"""Supervision: strategies, restart types, intensity and escalation, backoff, ordered start and stop."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from dgd.runtime import (
    ActorSystem,
    Backoff,
    ChildSpec,
    CountingMetrics,
    ManualClock,
    Restart,
    RestartIntensityExceeded,
    StartFailed,
    Strategy,
    Supervision,
    Supervisor,
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
    Worker,
    WorkerMessage,
    delivered,
    immediate,
    running,
    supervisor,
    worker,
)

pytestmark = pytest.mark.anyio


def asyncio_tasks() -> set[asyncio.Task[object]]:
    return set(asyncio.all_tasks())


def states(system: ActorSystem) -> dict[str, tuple[str, int]]:
    return {info.path: (info.state, info.restarts) for info in system.tree()}


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


# -- intensity and escalation ------------------------------------------------------------------------


async def test_a_supervisor_past_its_intensity_stops_its_children_and_escalates_to_its_parent() -> None:
    # Given a nested supervisor allowing 2 restarts in 5 seconds, on a clock that does not move
    journal = Journal()
    metrics = CountingMetrics()
    clock = ManualClock()
    nested = supervisor("sup", [worker("a", journal), worker("b", journal)], intensity=2, period=5)
    async with running([nested], clock=clock, metrics=metrics) as system:
        # When a crashes twice, the nested supervisor restarts it each time
        for _ in range(2):
            await delivered(system, "/sup/a", Crash())
        assert states(system)["/sup"] == ("running", 0)
        assert states(system)["/sup/a"] == ("running", 2)
        await system.ref("/sup/b").tell(Add(5))
        journal.clear()

        # When a crashes a third time within the period
        await delivered(system, "/sup/a", Crash())

        # Then the nested supervisor stopped b and failed; the root restarted it with fresh children
        assert metrics.escalations == {"/sup": 1}
        assert journal.events == ["stop:/sup/b", "start:/sup/a", "start:/sup/b"]
        assert states(system) == {
            "/": ("running", 0),
            "/sup": ("running", 1),
            "/sup/a": ("running", 0),
            "/sup/b": ("running", 0),
        }
        assert await system.ref("/sup/b").ask(GetTotal()) == Total(0)


async def test_restarts_spread_over_more_than_the_period_never_escalate() -> None:
    # Given a worker under a supervisor allowing 1 restart in 5 seconds
    journal = Journal()
    metrics = CountingMetrics()
    clock = ManualClock()
    async with running(
        [worker("w", journal)], clock=clock, metrics=metrics, supervision=immediate(intensity=1, period=5)
    ) as system:
        # When the worker crashes once every 5.1 seconds, five times
        for _ in range(5):
            await delivered(system, "/w", Crash())
            await clock.advance(5.1)

        # Then each crash was restarted and the supervisor never escalated
        assert states(system)["/w"] == ("running", 5)
        assert metrics.escalations == {}


async def test_the_root_past_its_intensity_fails_the_whole_system() -> None:
    # Given a root supervisor that allows no restart at all
    journal = Journal()
    tasks_before = set(asyncio_tasks())
    with pytest.raises(RestartIntensityExceeded) as failure:
        async with running([worker("w", journal)], supervision=immediate(intensity=0)) as system:
            # When its worker crashes
            await system.ref("/w").tell(Crash())
            await anyio.sleep_forever()  # the body is cancelled when the system fails

    # Then the `async with` raised the escalation, and no task of the system is left
    assert failure.value.path == "/"
    assert set(asyncio_tasks()) == tasks_before


def restarts_fail_twice(journal: Journal) -> ChildSpec[WorkerMessage]:
    """A worker ``w`` that starts, then fails the next two starts (its restarts), then starts again."""
    attempts = iter([False, True, True, False])
    return ChildSpec("w", lambda: Worker(journal, start_fails=next(attempts)))


async def test_a_restart_that_fails_to_start_counts_as_another_failure() -> None:
    # Given a worker whose next two starts fail, under a supervisor allowing 3 restarts
    journal = Journal()
    spec = restarts_fail_twice(journal)
    metrics = CountingMetrics()
    clock = ManualClock()
    async with running([spec], clock=clock, metrics=metrics, supervision=immediate(intensity=3)) as system:
        # When it crashes once
        await delivered(system, "/w", Crash())

        # Then it was started three more times (two failed) and runs, with no escalation
        assert journal.starts() == ["/w"] * 4
        assert states(system)["/w"] == ("running", 1)
        assert metrics.escalations == {}


async def test_failing_restarts_beyond_the_intensity_escalate() -> None:
    # Given the same worker (its next two starts fail) under a nested supervisor allowing 2 restarts
    journal = Journal()
    spec = restarts_fail_twice(journal)
    nested = ChildSpec("sup", lambda: Supervisor([spec], immediate(intensity=2)))
    metrics = CountingMetrics()
    clock = ManualClock()
    async with running([nested], clock=clock, metrics=metrics) as system:
        # When it crashes once
        await delivered(system, "/sup/w", Crash())

        # Then the crash and two failed restarts made three: the nested supervisor escalated, and
        # the root restarted it, which started the worker a fourth time
        assert metrics.escalations == {"/sup": 1}
        assert journal.starts() == ["/sup/w"] * 4
        assert states(system) == {"/": ("running", 0), "/sup": ("running", 1), "/sup/w": ("running", 0)}


async def test_a_factory_that_raises_is_a_start_failure_like_a_failing_on_start() -> None:
    # Given a worker whose factory raises from its second call on, under a supervisor allowing 1 restart
    journal = Journal()
    calls = iter(range(100))

    def build() -> Worker:
        if next(calls) >= 1:
            raise OSError("no such config")
        return Worker(journal)

    metrics = CountingMetrics()
    nested = ChildSpec("sup", lambda: Supervisor([ChildSpec("w", build)], immediate(intensity=1)))
    tree_before: dict[str, tuple[str, int]] = {}
    with pytest.raises(RestartIntensityExceeded):
        async with running([nested], metrics=metrics, supervision=immediate(intensity=0)) as system:
            tree_before = states(system)

            # When the worker crashes, and its restart cannot even build it
            await system.ref("/sup/w").tell(Crash())
            await anyio.sleep_forever()

    # Then the failed build counted as a second failure: the nested supervisor escalated, and the
    # root, allowing nothing, failed the system
    assert tree_before["/sup/w"] == ("running", 0)
    assert metrics.escalations == {"/sup": 1, "/": 1}


# -- backoff ---------------------------------------------------------------------------------------


async def test_a_restart_waits_its_exponential_backoff_on_the_system_clock() -> None:
    # Given a worker restarted after 1s, then 2s, without jitter
    journal = Journal()
    clock = ManualClock()
    policy = Supervision(backoff=Backoff(initial=1, maximum=8, multiplier=2, jitter=0), intensity=10)
    async with running([worker("w", journal)], clock=clock, supervision=policy) as system:
        # When it crashes, it waits to be restarted for just under a second
        await system.ref("/w").tell(Crash())
        await clock.advance(0.99)
        assert states(system)["/w"] == ("restarting", 0)

        # Then it is restarted once the second has passed
        await clock.advance(0.01)
        assert states(system)["/w"] == ("running", 1)

        # When it crashes again at once, the backoff has doubled
        await system.ref("/w").tell(Crash())
        await clock.advance(1.99)
        assert states(system)["/w"] == ("restarting", 1)
        await clock.advance(0.01)
        assert states(system)["/w"] == ("running", 2)


async def test_backoff_jitter_draws_only_from_the_injected_random_source() -> None:
    # Given full jitter, an injected source seeded 7, and the global random module in a known state
    journal = Journal()
    clock = ManualClock()
    policy = Supervision(backoff=Backoff(initial=4, maximum=4, jitter=1.0))
    expected = Backoff(initial=4, maximum=4, jitter=1.0).delay(0, random.Random(7))
    random.seed(1234)
    global_state = random.getstate()
    async with running(
        [worker("w", journal)], clock=clock, supervision=policy, random=random.Random(7)
    ) as system:
        # When the worker crashes
        await system.ref("/w").tell(Crash())

        # Then it is restarted exactly after the delay the seeded source gives
        await clock.advance(expected - 1e-6)
        assert states(system)["/w"] == ("restarting", 0)
        await clock.advance(1e-6)
        assert states(system)["/w"] == ("running", 1)

    # And the global random module was never drawn from
    assert 0 < expected < 4
    assert random.getstate() == global_state


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
