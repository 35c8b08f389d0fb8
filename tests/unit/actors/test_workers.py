"""Reconcile workers: a bound on reconciles at once, served in turn, closed by a drain."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from dgd.actors.machinery.workers import Workers
from dgd.runtime import settle

pytestmark = pytest.mark.anyio


async def test_reconciles_get_the_workers_in_the_order_they_asked() -> None:
    workers = Workers(1)
    order: list[str] = []
    gate = anyio.Event()

    async def reconcile(key: str) -> None:
        async with workers.slot(key) as granted:
            assert granted
            order.append(key)
            await gate.wait()

    async with anyio.create_task_group() as tg:
        # given one reconcile holding the only worker and three more asking in turn
        for key in ("a", "b", "c", "d"):
            tg.start_soon(reconcile, key)
            await settle()
        assert order == ["a"] and workers.queued == {"b", "c", "d"}

        # when the gate opens, then the others run one after another, first come first served
        gate.set()
    assert order == ["a", "b", "c", "d"] and workers.busy == 0


async def test_closing_sends_waiting_reconciles_away_and_lets_running_ones_finish() -> None:
    workers = Workers(1)
    ran: list[str] = []
    refused: list[str] = []
    gate = anyio.Event()

    async def reconcile(key: str) -> None:
        async with workers.slot(key) as granted:
            if not granted:
                refused.append(key)
                return
            await gate.wait()
            ran.append(key)

    async with anyio.create_task_group() as tg:
        # given one reconcile running and two waiting for the only worker
        for key in ("a", "b", "c"):
            tg.start_soon(reconcile, key)
        await settle()

        # when the workers close (a drain), then the waiting ones are sent away at once
        workers.close()
        await settle()
        assert sorted(refused) == ["b", "c"] and workers.queued == frozenset()

        # and the running one finishes, while a reconcile asking afterwards gets no worker
        gate.set()
        tg.start_soon(reconcile, "d")
    assert ran == ["a"] and sorted(refused) == ["b", "c", "d"] and workers.busy == 0


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        Workers(0)


async def test_a_reconcile_cancelled_while_holding_or_waiting_gives_its_place_back() -> None:
    workers = Workers(1)

    async def reconcile(key: str) -> None:
        async with workers.slot(key):
            await anyio.sleep_forever()

    # given a reconcile holding the only worker and another waiting (their actors then killed)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reconcile, "held")
        tg.start_soon(reconcile, "waiting")
        await settle()
        assert workers.busy == 1 and workers.queued == {"waiting"}
        tg.cancel_scope.cancel()

    # then the worker is free and nobody is queued: the next reconcile gets it at once
    assert workers.busy == 0 and workers.queued == frozenset()
    with anyio.fail_after(10):  # a hang guard: a leaked worker would block here for ever
        async with workers.slot("next") as granted:
            assert granted


async def _queue(workers: Workers, asks: list[tuple[str, bool]]) -> list[str]:
    """The order in which ``asks`` (key, first) get the only worker, asked while it is held."""
    order: list[str] = []
    gate = anyio.Event()

    async def reconcile(key: str, first: bool) -> None:
        async with workers.slot(key, first=first) as granted:
            assert granted
            order.append(key)
            if key == "holder":
                await gate.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reconcile, "holder", True)
        await settle()
        for key, first in asks:
            tg.start_soon(reconcile, key, first)
            await settle()
        gate.set()
    return order[1:]


async def test_a_follow_up_reconcile_is_served_before_first_reconciles_that_asked_earlier() -> None:
    # given first reconciles of new DGDs queued, then the second reconcile of a DGD already reconciled
    asks = [("new-1", True), ("new-2", True), ("done-soon", False)]

    # then the follow-up goes first: a DGD whose children are ready does not wait for every new one
    assert await _queue(Workers(1), asks) == ["done-soon", "new-1", "new-2"]


async def test_follow_ups_never_starve_a_first_reconcile() -> None:
    # given a first reconcile waiting behind a stream of follow-ups
    asks = [("new", True)] + [(f"again-{i}", False) for i in range(5)]

    # then after at most three follow-ups in a row, the first reconcile gets its worker
    assert await _queue(Workers(1), asks) == ["again-0", "again-1", "again-2", "new", "again-3", "again-4"]


async def test_a_worker_handed_to_a_reconcile_cancelled_meanwhile_passes_to_the_next() -> None:
    workers = Workers(1)
    ran: list[str] = []
    doomed = anyio.CancelScope()

    async def holder() -> None:
        async with workers.slot("holder", first=True):
            await settle()
            # when the worker is handed on in the very step the next reconcile's actor is killed
            doomed.cancel()
        ran.append("holder")

    async def reconcile(key: str) -> None:
        async with workers.slot(key, first=True) as granted:
            assert granted
            ran.append(key)

    async def killed() -> None:
        with doomed:
            await reconcile("doomed")

    # (a hang guard: a lost worker would leave "next" waiting for ever)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await anyio.lowlevel.checkpoint()
            tg.start_soon(killed)
            await anyio.lowlevel.checkpoint()
            tg.start_soon(reconcile, "next")
    # then the worker is not lost: the next one ran, and nothing is held or queued
    assert ran == ["holder", "next"] and workers.busy == 0 and workers.queued == frozenset()
