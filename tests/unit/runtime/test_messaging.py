"""tell and ask: ordering, typed replies, unknown messages, timeouts, and what a crash does to asks."""

from __future__ import annotations

import contextlib
import gc
import logging
import weakref
from collections.abc import Iterator
from typing import Any

import anyio
import msgspec
import pytest

from dgd.runtime import (
    Actor,
    ActorCrashed,
    ActorStopped,
    AskTimeout,
    BadReply,
    ChildSpec,
    Killed,
    ManualClock,
    Request,
    Restart,
    UnknownMessage,
    settle,
)

from .cast import (
    BOTH_LOOPS,
    Add,
    AskSelf,
    Crash,
    CrashWhileAsked,
    Finish,
    GetTotal,
    Hang,
    Journal,
    Total,
    Unrelated,
    WrongReply,
    delivered,
    failing,
    held_busy,
    immediate,
    running,
    worker,
)

pytestmark = pytest.mark.anyio


@BOTH_LOOPS
async def test_ask_returns_the_reply_typed_by_the_request() -> None:
    # Given a running worker that was told to add 2 and 3
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        ref = system.ref("/w")
        await ref.tell(Add(2))
        await ref.tell(Add(3))

        # When it is asked for its total
        reply = await ref.ask(GetTotal())

    # Then the reply is the request's reply type, with both additions
    assert reply == Total(5, (2, 3))


@BOTH_LOOPS
async def test_messages_from_one_sender_are_handled_in_the_order_sent() -> None:
    # Given a worker
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        ref = system.ref("/w")

        # When one sender tells it 500 numbers in order, without yielding in between
        for n in range(500):
            ref.tell_nowait(Add(n))
        reply = await ref.ask(GetTotal())

    # Then it saw them in exactly that order
    assert reply.seen == tuple(range(500))


async def test_a_message_outside_the_actors_union_is_refused_loudly_at_the_sender() -> None:
    # Given a worker, whose union does not contain Unrelated
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        ref = system.ref("/w")

        # When a sender tells or asks it an Unrelated message
        with pytest.raises(UnknownMessage, match="/w does not accept Unrelated"):
            await ref.tell(Unrelated())  # type: ignore[arg-type]
        with pytest.raises(UnknownMessage):
            ref.tell_nowait(Unrelated())  # type: ignore[arg-type]

        # Then nothing was dead-lettered or delivered: the worker is untouched and still answers
        assert system.dead_letter_count == 0
        assert await ref.ask(GetTotal()) == Total(0)


async def test_actor_classes_must_declare_msgspec_struct_messages() -> None:
    # When an actor declares a message union that is not made of msgspec Structs
    with pytest.raises(TypeError, match="actor messages must be msgspec Structs"):

        class Broken(Actor[int]):  # type: ignore[type-var]
            pass


@BOTH_LOOPS
async def test_an_ask_in_flight_fails_at_once_when_the_actor_crashes() -> None:
    # Given a worker on a clock that never moves, so no ask can time out
    journal = Journal()
    clock = ManualClock()
    async with running([worker("w", journal)], clock=clock) as system:
        ref = system.ref("/w")

        # When it crashes while handling an ask with a long timeout
        with pytest.raises(ActorCrashed) as failure:
            await ref.ask(CrashWhileAsked(), timeout=60)

        # Then the ask failed at once, naming the actor and the exception that ended it
        assert clock.now() == 0
        assert failure.value.path == "/w"
        assert isinstance(failure.value.cause, RuntimeError)
        assert str(failure.value.cause) == "asked to crash"


async def test_asks_queued_behind_a_crash_fail_at_once_and_queued_tells_are_dead_lettered() -> None:
    # Given a worker held busy by an ask, with another ask and two tells queued behind it
    journal = Journal()
    clock = ManualClock()
    outcomes: list[BaseException] = []
    async with running([worker("w", journal)], clock=clock) as system:
        ref = system.ref("/w")
        async with anyio.create_task_group() as tg:
            tg.start_soon(failing, ref.ask(Hang(), timeout=60), ActorCrashed, outcomes)
            await settle()
            tg.start_soon(failing, ref.ask(GetTotal(), timeout=60), ActorCrashed, outcomes)
            await settle()
            await ref.tell(Add(1))
            await ref.tell(Add(2))

            # When it is killed
            assert system.kill("/w")

    # Then both asks failed with the kill as their cause, before any timeout
    assert clock.now() == 0
    assert [type(error.cause) for error in outcomes if isinstance(error, ActorCrashed)] == [Killed, Killed]
    # And the two tells are dead letters naming sender, target and message type
    letters = [(letter.sender, letter.target, letter.message_type) for letter in system.dead_letters]
    assert letters == [(None, "/w", "Add"), (None, "/w", "Add")]


async def test_an_ask_times_out_on_the_system_clock() -> None:
    # Given a worker that will never answer (and is cancelled at once on shutdown)
    journal = Journal()
    clock = ManualClock()
    outcome: list[BaseException] = []
    async with running([worker("w", journal, shutdown=0)], clock=clock) as system:
        ref = system.ref("/w")
        async with anyio.create_task_group() as tg:
            tg.start_soon(failing, ref.ask(Hang(), timeout=5), AskTimeout, outcome)

            # When 4.9 seconds pass, the ask still waits
            await clock.advance(4.9)
            assert outcome == []

            # When the fifth second passes
            await clock.advance(0.1)

    # Then it failed with AskTimeout
    assert len(outcome) == 1
    assert isinstance(outcome[0], AskTimeout)
    assert outcome[0].timeout == 5


async def test_a_request_whose_asker_gave_up_is_not_delivered() -> None:
    # Given a worker held busy until its gate opens, with a tell queued
    journal = Journal()
    clock = ManualClock()
    outcome: list[BaseException] = []
    async with running([worker("w", journal)], clock=clock) as system:
        ref = system.ref("/w")
        async with held_busy(ref, journal) as tg:
            await ref.tell(Add(1))

            # When a request queued behind them times out before the worker reaches it
            tg.start_soon(failing, ref.ask(CrashWhileAsked(), timeout=1), AskTimeout, outcome)
            await clock.advance(1)
            assert len(outcome) == 1

        # Then the worker never handled it (it would have crashed), but handled the tell before it
        assert await ref.ask(GetTotal()) == Total(1, (1,))
        assert system.tree()[1].restarts == 0


async def test_a_wrongly_typed_reply_crashes_the_actor_and_fails_the_ask() -> None:
    # Given a worker that answers WrongReply with a string instead of a Total
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        ref = system.ref("/w")

        # When it is asked
        with pytest.raises(ActorCrashed) as failure:
            await ref.ask(WrongReply())
        await settle()

        # Then the asker learns of the bad reply, and the worker was restarted
        assert isinstance(failure.value.cause, BadReply)
        assert "answered WrongReply with str, not Total" in str(failure.value.cause)
        assert system.tree()[1].restarts == 1


async def test_an_actor_asking_itself_gets_an_error_instead_of_a_deadlock() -> None:
    # Given a worker that asks itself for its total while handling a request
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        # When it is asked to do so
        with pytest.raises(ActorCrashed) as failure:
            await system.ref("/w").ask(AskSelf(), timeout=None)

    # Then its self-ask raised at once (crashing it) rather than hanging forever
    assert "/w asked itself" in str(failure.value.cause)


async def test_an_ask_to_an_actor_that_is_not_running_fails_at_once() -> None:
    # Given a transient worker that finished normally (so it is not restarted)
    journal = Journal()
    async with running([worker("w", journal, restart=Restart.TRANSIENT)]) as system:
        ref = system.ref("/w")
        await ref.tell(Finish())
        await settle()
        assert not ref.alive

        # When it is asked
        with pytest.raises(ActorStopped, match="/w"):
            await ref.ask(GetTotal(), timeout=None)


class Relay(msgspec.Struct, frozen=True):
    target: str


class Relayer(Actor[Relay]):
    """Tells Add(1) to another actor, so the message has an actor as its sender."""

    async def receive(self, message: Relay) -> None:
        await self.context.system.ref(message.target).tell(Add(1))


async def test_a_tell_to_a_stopped_actor_is_a_dead_letter_with_its_sender() -> None:
    # Given a transient worker that has finished, and a relaying actor
    journal = Journal()
    children = [worker("w", journal, restart=Restart.TRANSIENT), ChildSpec("relay", Relayer)]
    async with running(children) as system:
        await delivered(system, "/w", Finish())

        # When the relay tells the stopped worker something
        await delivered(system, "/relay", Relay("/w"))

        # Then the message is in the dead-letter log with sender, target, type and why
        [letter] = system.dead_letters
        assert (letter.sender, letter.target, letter.message_type) == ("/relay", "/w", "Add")
        assert letter.reason == "actor stopped"
        assert system.dead_letter_count == 1


async def test_a_crash_told_to_a_worker_does_not_reach_the_sender() -> None:
    # Given a worker
    journal = Journal()
    async with running([worker("w", journal)]) as system:
        # When a told message crashes it
        await delivered(system, "/w", Crash())

        # Then the sender carried on (tell is fire and forget) and the worker was restarted fresh
        assert await system.ref("/w").ask(GetTotal()) == Total(0)
        assert journal.starts() == ["/w", "/w"]


class Payload:
    """Something big a message carries (weakly referenceable, so the test can see it freed)."""


class CarryAndCrash(Request[Total], frozen=True):
    payload: Any


class Carrier(Actor[CarryAndCrash]):
    async def receive(self, message: CarryAndCrash) -> Total:
        raise RuntimeError("crashed while carrying")


@pytest.fixture
def unlogged() -> Iterator[None]:
    """No log records for the test: pytest's capture keeps every record, and a crash's record holds
    its traceback (the very frames under test)."""
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.usefixtures("unlogged")
async def test_crashed_asks_do_not_keep_what_their_messages_carried() -> None:
    # Given an actor that crashes on every ask (and is restarted each time)
    async with running([ChildSpec("carrier", Carrier)], supervision=immediate(intensity=100)) as system:
        ref = system.ref("/carrier")
        alive: list[weakref.ref[Payload]] = []

        # When it is asked twenty times, each message carrying a payload of its own
        for _ in range(20):
            payload = Payload()
            alive.append(weakref.ref(payload))
            with contextlib.suppress(ActorCrashed):
                await ref.ask(CarryAndCrash(payload), timeout=60)
            del payload
            await settle()

        # Then, once collected, at most the last crash's payload is still held (by the crash record the
        # supervisor keeps): the rest were freed, with the envelopes and tracebacks that reached them
        gc.collect()
        assert sum(1 for ref_ in alive if ref_() is not None) <= 1
