"""Supervision when children keep failing: restart intensity and escalation, failed restarts, and backoff."""

from __future__ import annotations

import random

import anyio
import pytest

from dgd.runtime import (
    Backoff,
    ChildSpec,
    CountingMetrics,
    ManualClock,
    RestartIntensityExceeded,
    Supervision,
    Supervisor,
)

from .cast import (
    Add,
    Crash,
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
from .supervisor_cases import asyncio_tasks, states

pytestmark = pytest.mark.anyio


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
