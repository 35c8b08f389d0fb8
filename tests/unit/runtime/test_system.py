"""The system: addressing by path, kill, tree, shutdown without leftovers, metrics and logs."""

from __future__ import annotations

import asyncio
import logging

import anyio
import pytest

from dgd.runtime import (
    Actor,
    ActorCrashed,
    ActorInfo,
    ActorNotFound,
    ActorStopped,
    ActorSystem,
    Backoff,
    ChildSpec,
    CountingMetrics,
    DynamicSupervisor,
    Killed,
    ManualClock,
    StartChild,
    Supervision,
    settle,
)

from .cast import (
    BOTH_LOOPS,
    Add,
    Crash,
    GetTotal,
    Hang,
    Journal,
    Total,
    Worker,
    delivered,
    failing,
    immediate,
    running,
    supervisor,
    worker,
)

pytestmark = pytest.mark.anyio


@BOTH_LOOPS
async def test_kill_ends_an_actor_as_if_it_crashed_and_its_supervisor_restarts_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker holding state
    journal = Journal()
    metrics = CountingMetrics()
    async with running([worker("w", journal)], metrics=metrics) as system:
        ref = system.ref("/w")
        await ref.tell(Add(4))

        # When it is killed
        assert system.kill("/w") is True
        await settle()

        # Then it was restarted from fresh state, its end recorded as a crash with Killed
        assert await ref.ask(GetTotal()) == Total(0)
        assert metrics.crashes["/w"] == 1
        assert metrics.restarts["/w"] == 1
        assert "actor /w killed" in caplog.text
        assert journal.events == ["start:/w", "start:/w"]  # no on_stop: it did not stop gracefully


async def test_kill_reports_actors_that_are_not_running_and_refuses_unknown_paths_and_the_root() -> None:
    # Given a worker waiting for its restart (a 10s backoff on a clock that does not move)
    journal = Journal()
    clock = ManualClock()
    policy = Supervision(backoff=Backoff(initial=10, maximum=10, jitter=0))
    async with running([worker("w", journal, shutdown=0)], clock=clock, supervision=policy) as system:
        await delivered(system, "/w", Crash())

        # When it is killed, nothing happens
        assert system.kill("/w") is False

        # And unknown paths and the root are refused
        with pytest.raises(ActorNotFound):
            system.kill("/nobody")
        with pytest.raises(ValueError, match="root"):
            system.kill("/")


async def test_tree_shows_every_actor_with_its_state_restarts_and_mailbox_depth() -> None:
    # Given a worker, and a supervisor of two workers, one of which crashed once
    journal = Journal()
    children = [worker("a", journal), supervisor("sup", [worker("b", journal), worker("c", journal)])]
    async with running(children) as system:
        await delivered(system, "/sup/b", Crash())

        # When the tree is read
        tree = system.tree()

    # Then it lists every actor depth first, in start order
    assert tree == [
        ActorInfo("/", "Supervisor", "running", 0, 0),
        ActorInfo("/a", "Worker", "running", 0, 0),
        ActorInfo("/sup", "Supervisor", "running", 0, 0),
        ActorInfo("/sup/b", "Worker", "running", 1, 0),
        ActorInfo("/sup/c", "Worker", "running", 0, 0),
    ]


@BOTH_LOOPS
async def test_shutdown_leaves_no_task_behind_and_refuses_further_asks() -> None:
    # Given a system of ten workers under a dynamic supervisor and a static one
    journal = Journal()
    tasks_before = set(asyncio.all_tasks())
    children = [ChildSpec("dgds", DynamicSupervisor), worker("w", journal)]
    async with running(children) as system:
        for n in range(10):
            await system.ref("/dgds").ask(StartChild(worker(f"ns/{n}", journal)))
        assert len(asyncio.all_tasks()) > len(tasks_before) + 10
        ref = system.ref("/dgds/ns/3")

        # When it shuts down
        await system.shutdown(timeout=5)

        # Then no task of the system is left, and the actors no longer answer
        assert set(asyncio.all_tasks()) == tasks_before
        with pytest.raises(ActorStopped):
            await ref.ask(GetTotal())
    assert len(journal.stops()) == 11


async def test_a_ref_follows_its_path_when_the_supervisor_above_it_restarts() -> None:
    # Given a ref to a worker under a nested supervisor
    journal = Journal()
    async with running([supervisor("sup", [worker("w", journal)])]) as system:
        ref = system.ref("/sup/w")
        await ref.tell(Add(1))

        # When the nested supervisor is killed and restarted (with a new worker)
        system.kill("/sup")
        await settle()

        # Then the old ref reaches the new worker
        await ref.tell(Add(2))
        assert await ref.ask(GetTotal()) == Total(2, (2,))


async def test_a_typed_ref_checks_the_kind_of_actor_at_the_path() -> None:
    # Given a worker at /w
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        # Then a ref typed Worker is given, any other kind or an unknown path is refused
        assert system.ref("/w", Worker).path == "/w"
        with pytest.raises(TypeError, match="/w runs Worker, not ActorSystem"):
            system.ref("/w", ActorSystem)  # type: ignore[type-var]
        with pytest.raises(ActorNotFound):
            system.ref("/nobody")


async def test_metrics_hooks_see_messages_asks_crashes_restarts_escalations_and_dead_letters() -> None:
    # Given a nested supervisor that escalates on its first restart
    journal = Journal()
    metrics = CountingMetrics()
    nested = supervisor("sup", [worker("w", journal)], intensity=0)
    async with running([nested], metrics=metrics) as system:
        ref = system.ref("/sup/w")

        # When the worker is told a message and asked once before it runs (two in its mailbox), then crashes
        await ref.tell(Add(1))
        await ref.ask(GetTotal())
        await ref.tell(Crash())
        await settle()

    # Then every kind of event reached the hooks
    assert metrics.processed["/sup/w"] == 2
    assert metrics.asks_ok == 1 and len(metrics.ask_seconds) == 1
    assert metrics.crashes == {"/sup/w": 1, "/sup": 1}
    assert metrics.escalations == {"/sup": 1}
    assert metrics.restarts == {"/sup": 1}
    # and the mailbox sample saw both messages that were waiting when it woke
    assert metrics.max_depth["/sup/w"] == 2


async def test_the_dead_letter_log_keeps_the_latest_letters_and_counts_them_all() -> None:
    # Given a system whose log keeps three dead letters, and a worker waiting for a long restart
    journal = Journal()
    clock = ManualClock()
    policy = Supervision(backoff=Backoff(initial=10, maximum=10, jitter=0))
    async with running(
        [worker("w", journal, shutdown=0)], clock=clock, supervision=policy, dead_letter_limit=3
    ) as system:
        await delivered(system, "/w", Crash())

        # When five messages are told to it while it is down
        for n in range(5):
            await system.ref("/w").tell(Add(n))

        # Then all five are counted, the last three kept, each saying why
        assert system.dead_letter_count == 5
        assert [letter.reason for letter in system.dead_letters] == ["actor restarting"] * 3


async def test_a_crash_is_logged_with_the_actor_path_and_the_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given a worker
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        # When it crashes
        with caplog.at_level(logging.ERROR, logger="dgd.actors"):
            await delivered(system, "/w", Crash("the disk is on fire"))

    # Then one error names its path and the exception, with the traceback attached
    [record] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert record.getMessage() == "/w crashed: RuntimeError('the disk is on fire')"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


async def test_a_clean_shutdown_logs_nothing_at_info_even_for_actors_cancelled_on_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given workers stopped by cancelling them (shutdown=0, as the operator's informers) and others not
    journal = Journal()
    children = [worker(f"w{n}", journal, shutdown=0 if n % 2 else 5.0) for n in range(6)]
    with caplog.at_level(logging.INFO, logger="dgd.actors"):
        async with running(children) as system:
            await delivered(system, "/w1", Add(1))
        # When the system shuts down

    # Then nothing was said at info or above: no Killed(...) line per cancelled actor
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []


async def test_a_killed_supervisor_is_one_warning_not_one_per_child(caplog: pytest.LogCaptureFixture) -> None:
    # Given a supervisor of three workers
    journal = Journal()
    tree = [supervisor("s", [worker(f"w{n}", journal) for n in range(3)])]
    async with running(tree) as system:
        # When the supervisor is killed (its children are cancelled with it)
        with caplog.at_level(logging.INFO, logger="dgd.actors"):
            assert system.kill("/s") is True
            await settle()

    # Then only the supervisor's own end is a warning
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["actor /s killed"]


class FailsOnStop(Actor[Add]):
    async def receive(self, message: Add) -> None:
        return None

    async def on_stop(self) -> None:
        raise RuntimeError("could not flush")


async def test_an_actor_that_fails_while_stopping_is_still_logged(caplog: pytest.LogCaptureFixture) -> None:
    # Given an actor whose stop fails
    with caplog.at_level(logging.INFO, logger="dgd.actors"):
        async with running([ChildSpec("f", FailsOnStop)]):
            await settle()
        # When the system shuts down

    # Then that failure is one warning, with its path, the exception and the traceback
    [record] = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "/f failed while stopping: RuntimeError('could not flush')"
    assert record.exc_info is not None


async def test_a_killed_actor_fails_its_pending_asks_with_killed_as_the_cause() -> None:
    # Given a worker busy with an ask it will never answer
    journal = Journal()
    failures: list[ActorCrashed] = []
    async with running([worker("w", journal)], supervision=immediate()) as system:
        ref = system.ref("/w")
        async with anyio.create_task_group() as tg:
            tg.start_soon(failing, ref.ask(Hang()), ActorCrashed, failures)
            await settle()

            # When it is killed
            system.kill("/w")

    # Then the ask failed, naming the kill as its cause
    assert len(failures) == 1
    assert isinstance(failures[0].cause, Killed)


async def test_an_error_in_the_body_shuts_the_system_down_gracefully_and_propagates_as_it_is() -> None:
    # Given a running system
    journal = Journal()

    # When the code inside its block raises
    with pytest.raises(LookupError, match="the body failed"):
        async with running([worker("a", journal), worker("b", journal)]):
            raise LookupError("the body failed")

    # Then the error came out unwrapped, after every actor stopped gracefully
    assert journal.stops() == ["/b", "/a"]


class Prober(Worker):
    """A plain worker (it supervises nothing) that reports what its context refuses."""

    async def on_start(self) -> None:
        await super().on_start()
        refusals: list[str] = []
        try:
            self.context.child("nobody")
        except ActorNotFound as error:
            refusals.append(str(error))
        try:
            await self.context.start_child(worker("x", self.journal))
        except RuntimeError as error:
            refusals.append(str(error))
        self.journal.events.extend(refusals)


async def test_a_plain_actor_has_no_children_to_find_or_start() -> None:
    # Given a worker that, on start, looks for a child and tries to start one
    journal = Journal()
    async with running([ChildSpec("p", lambda: Prober(journal))]) as system:
        # Then both were refused, naming the path, and the system runs once only
        assert journal.events == [
            "start:/p",
            "no actor at /p/nobody",
            "/p does not supervise (its actor sets no supervision)",
        ]
        with pytest.raises(RuntimeError, match="runs once"):
            await system.__aenter__()
