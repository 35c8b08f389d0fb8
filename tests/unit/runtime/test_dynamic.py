"""The dynamic supervisor: children started and stopped at run time, one per DGD later."""

from __future__ import annotations

import anyio
import pytest

from dgd.runtime import (
    ActorSystem,
    ChildIds,
    ChildSpec,
    DynamicSupervisor,
    ManualClock,
    Restart,
    StartChild,
    Started,
    StartRefused,
    StopChild,
    Stopped,
    Supervisor,
    WhichChildren,
    settle,
)

from .cast import BOTH_LOOPS, Add, Crash, Finish, GetTotal, Journal, Total, immediate, running, worker

pytestmark = pytest.mark.anyio


def dgds(**options: object) -> ChildSpec[object]:
    return ChildSpec("dgds", lambda: DynamicSupervisor(immediate(), **options))  # type: ignore[arg-type]


@BOTH_LOOPS
async def test_children_are_started_and_stopped_at_run_time() -> None:
    # Given an empty dynamic supervisor
    journal = Journal()
    async with running([dgds()]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)

        # When two children are started
        first = await sup.ask(StartChild(worker("ns/a", journal)))
        second = await sup.ask(StartChild(worker("ns/b", journal)))

        # Then both run at their paths and answer
        assert isinstance(first, Started) and first.created
        assert isinstance(second, Started) and second.ref.path == "/dgds/ns/b"
        await first.ref.tell(Add(3))
        assert await first.ref.ask(GetTotal()) == Total(3, (3,))
        assert await sup.ask(WhichChildren()) == ChildIds(("ns/a", "ns/b"))

        # When one is stopped, it is stopped gracefully and forgotten
        assert await sup.ask(StopChild("ns/a")) == Stopped("ns/a", existed=True)
        assert journal.stops() == ["/dgds/ns/a"]
        assert await sup.ask(WhichChildren()) == ChildIds(("ns/b",))
        assert await sup.ask(StopChild("ns/a")) == Stopped("ns/a", existed=False)


async def test_a_ref_to_a_child_that_was_stopped_for_good_dead_letters_its_messages() -> None:
    # Given a ref to a dynamic child, which is then stopped and forgotten
    journal = Journal()
    async with running([dgds()]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)
        started = await sup.ask(StartChild(worker("ns/a", journal)))
        assert isinstance(started, Started)
        await sup.ask(StopChild("ns/a"))

        # When something is told to it
        await started.ref.tell(Add(1))

        # Then it is a dead letter saying there is no actor at that path
        [letter] = system.dead_letters
        assert (letter.target, letter.reason) == ("/dgds/ns/a", "no actor at path")


async def test_starting_a_child_that_already_runs_returns_it() -> None:
    # Given a dynamic supervisor with a child ns/a
    journal = Journal()
    async with running([dgds()]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)
        await sup.ask(StartChild(worker("ns/a", journal)))

        # When it is asked to start ns/a again
        again = await sup.ask(StartChild(worker("ns/a", journal)))

    # Then it answers with the running child, which was started only once
    assert isinstance(again, Started) and not again.created
    assert again.ref.path == "/dgds/ns/a"
    assert journal.starts() == ["/dgds/ns/a"]


async def test_a_child_that_cannot_start_is_refused_and_leaves_no_trace() -> None:
    # Given a dynamic supervisor
    journal = Journal()
    async with running([dgds()]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)

        # When a child whose on_start raises is started
        refused = await sup.ask(StartChild(worker("ns/a", journal, start_fails=True)))

        # Then it is refused with the reason, and neither the child nor its path remain
        assert isinstance(refused, StartRefused)
        assert "cannot start" in refused.reason
        assert await sup.ask(WhichChildren()) == ChildIds(())
        assert [info.path for info in system.tree()] == ["/", "/dgds"]


async def test_the_child_limit_refuses_more_children() -> None:
    # Given a dynamic supervisor limited to one child, which it has
    journal = Journal()
    async with running([dgds(max_children=1)]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)
        await sup.ask(StartChild(worker("ns/a", journal)))

        # When a second child is started
        refused = await sup.ask(StartChild(worker("ns/b", journal)))

    # Then it is refused, saying why
    assert refused == StartRefused("ns/b", "at its limit of 1 children")


async def test_a_crashed_child_is_restarted_in_place_and_a_finished_transient_one_is_forgotten() -> None:
    # Given two transient children
    journal = Journal()
    async with running([dgds()]) as system:
        sup = system.ref("/dgds", DynamicSupervisor)
        for name in ("ns/a", "ns/b"):
            await sup.ask(StartChild(worker(name, journal, restart=Restart.TRANSIENT)))

        # When a crashes and b finishes normally
        await system.ref("/dgds/ns/a").tell(Crash())
        await system.ref("/dgds/ns/b").tell(Finish())
        await settle()

        # Then a runs again at its path, and b is gone
        assert await sup.ask(WhichChildren()) == ChildIds(("ns/a",))
        assert {info.path: info.restarts for info in system.tree()}["/dgds/ns/a"] == 1


async def test_a_dgd_like_child_supervises_its_own_children_addressed_by_path() -> None:
    # Given a dynamic child that is itself a supervisor of a rollout worker (as a DGD actor is)
    journal = Journal()
    dgd = ChildSpec(
        "ns/name", lambda: Supervisor([worker("rollout", journal)], immediate()), restart=Restart.TRANSIENT
    )
    async with running([dgds()]) as system:
        await system.ref("/dgds").ask(StartChild(dgd))
        rollout = system.ref("/dgds/ns/name/rollout")
        await rollout.tell(Add(1))

        # When the DGD actor is killed
        system.kill("/dgds/ns/name")
        await settle()

        # Then it was restarted with a fresh rollout child, reachable through the same ref
        assert await rollout.ask(GetTotal()) == Total(0)
        assert journal.starts() == ["/dgds/ns/name/rollout"] * 2


async def test_shutdown_stops_all_dynamic_children_at_once_each_within_its_timeout() -> None:
    # Given two children whose on_stop never returns: x may take 3s to stop, y 5s
    journal = Journal()
    clock = ManualClock()
    async with running([dgds()], clock=clock) as system, anyio.create_task_group() as tg:
        sup = system.ref("/dgds", DynamicSupervisor)
        await sup.ask(StartChild(worker("x", journal, stop_hangs=True, shutdown=3)))
        await sup.ask(StartChild(worker("y", journal, stop_hangs=True, shutdown=5)))

        # When the system shuts down
        tg.start_soon(system.shutdown)
        await settle()

        # Then both began stopping at once, without waiting for each other
        assert sorted(journal.stops()) == ["/dgds/x", "/dgds/y"]

        # And x was cancelled after its 3s while y still had time, then y after its 5s
        await clock.advance(3)
        assert (state(system, "/dgds/x"), state(system, "/dgds/y")) == ("stopped", "stopping")
        await clock.advance(2)
        assert state(system, "/") == "stopped"


def state(system: ActorSystem, path: str) -> str:
    return {info.path: info.state for info in system.tree()}[path]
