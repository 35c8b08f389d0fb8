"""Bounded mailboxes: overflow policies, coalescing, and what happens to waiting senders."""

from __future__ import annotations

import contextlib
from collections.abc import Hashable

import anyio
import msgspec
import pytest

from dgd.runtime import (
    Actor,
    ActorCrashed,
    ChildSpec,
    CountingMetrics,
    MailboxConfig,
    MailboxFull,
    ManualClock,
    Overflow,
    Request,
    settle,
)

from .cast import BOTH_LOOPS, Add, GetTotal, Journal, Total, Wait, Worker, failing, held_busy, running

pytestmark = pytest.mark.anyio


class TwoOrFail(Worker):
    mailbox = MailboxConfig(capacity=2, overflow=Overflow.FAIL)


class OneOrWait(Worker):
    mailbox = MailboxConfig(capacity=1, overflow=Overflow.BLOCK, block_timeout=2.0)


@BOTH_LOOPS
async def test_fail_policy_refuses_a_tell_to_a_full_mailbox_at_once() -> None:
    # Given a worker with room for two messages, held busy so it takes none
    journal = Journal()
    async with running([ChildSpec("w", lambda: TwoOrFail(journal))]) as system:
        ref = system.ref("/w")
        async with held_busy(ref, journal):
            await ref.tell(Add(1))
            await ref.tell(Add(2))

            # When a third message is told
            with pytest.raises(MailboxFull) as refused:
                await ref.tell(Add(3))

        # Then it was refused with the capacity, and only the first two were handled
        assert refused.value.capacity == 2
        assert await ref.ask(GetTotal()) == Total(3, (1, 2))


async def test_block_policy_holds_senders_until_there_is_room_and_admits_them_in_order() -> None:
    # Given a worker with room for one message, held busy, with its mailbox full
    journal = Journal()
    done: list[int] = []
    async with running([ChildSpec("w", lambda: OneOrWait(journal))]) as system:
        ref = system.ref("/w")

        async def send(n: int) -> None:
            await ref.tell(Add(n))
            done.append(n)

        async with held_busy(ref, journal) as tg:
            await ref.tell(Add(1))

            # When two more senders tell it something, one after the other
            tg.start_soon(send, 2)
            await settle()
            tg.start_soon(send, 3)
            await settle()

            # Then both wait while it is full
            assert done == []
            assert system.tree()[1].mailbox_depth == 3

            # And once it works again, they are admitted and handled in the order they waited
            journal.gate.set()

        assert done == [2, 3]
        assert await ref.ask(GetTotal()) == Total(6, (1, 2, 3))


async def test_an_ask_to_a_full_blocking_mailbox_waits_for_room_like_a_tell() -> None:
    # Given a worker with room for one message, held busy, with its mailbox full
    journal = Journal()
    replies: list[Total] = []
    async with running([ChildSpec("w", lambda: OneOrWait(journal))]) as system:
        ref = system.ref("/w")

        async def ask() -> None:
            replies.append(await ref.ask(GetTotal()))

        async with held_busy(ref, journal) as tg:
            await ref.tell(Add(1))

            # When it is asked
            tg.start_soon(ask)
            await settle()
            assert replies == []
            journal.gate.set()

    # Then the ask got in once there was room, after the tell ahead of it
    assert replies == [Total(1, (1,))]


async def test_block_policy_gives_up_after_the_block_timeout() -> None:
    # Given a worker with room for one message, held busy, with its mailbox full
    journal = Journal()
    clock = ManualClock()
    outcome: list[BaseException] = []
    async with running([ChildSpec("w", lambda: OneOrWait(journal))], clock=clock) as system:
        ref = system.ref("/w")
        async with held_busy(ref, journal) as tg:
            await ref.tell(Add(1))
            tg.start_soon(failing, ref.tell(Add(2)), MailboxFull, outcome)

            # When the block timeout (2s) passes without room
            await clock.advance(1.9)
            assert outcome == []
            await clock.advance(0.1)

            # Then the sender got MailboxFull, and its message is not handled later
            assert len(outcome) == 1

        assert await ref.ask(GetTotal()) == Total(1, (1,))


async def test_tell_nowait_refuses_a_full_mailbox_whatever_the_policy() -> None:
    # Given a blocking mailbox that is full
    journal = Journal()
    async with running([ChildSpec("w", lambda: OneOrWait(journal))]) as system:
        ref = system.ref("/w")
        async with held_busy(ref, journal):
            ref.tell_nowait(Add(1))

            # When a sender tells without waiting
            with pytest.raises(MailboxFull):
                ref.tell_nowait(Add(2))


async def test_senders_waiting_for_room_are_released_when_the_actor_dies() -> None:
    # Given a full blocking mailbox with a sender waiting for room
    journal = Journal()
    returned: list[str] = []
    async with running([ChildSpec("w", lambda: OneOrWait(journal))]) as system:
        ref = system.ref("/w")

        async def hold() -> None:
            with contextlib.suppress(ActorCrashed):
                await ref.ask(Wait())

        async def send() -> None:
            await ref.tell(Add(2))
            returned.append("sent")

        async with anyio.create_task_group() as tg:
            tg.start_soon(hold)
            await settle()
            await ref.tell(Add(1))
            tg.start_soon(send)
            await settle()
            assert returned == []

            # When the actor is killed
            system.kill("/w")

    # Then the waiting sender returned, and both queued messages are dead letters
    assert returned == ["sent"]
    assert [letter.message_type for letter in system.dead_letters] == ["Add", "Add"]


class Nudge(msgspec.Struct, frozen=True):
    key: str | None
    version: int


class Seen(msgspec.Struct, frozen=True):
    nudges: tuple[tuple[str | None, int], ...]


class GetSeen(Request[Seen], frozen=True):
    pass


class Hold(Request[Seen], frozen=True):
    pass


def nudge_key(message: object) -> Hashable | None:
    return message.key if isinstance(message, Nudge) else None


class Reconciler(Actor[Nudge | GetSeen | Hold]):
    """Records the nudges it handles; its mailbox coalesces nudges by key."""

    mailbox = MailboxConfig(capacity=10, coalesce=nudge_key)

    def __init__(self, gate: anyio.Event) -> None:
        self.gate = gate
        self.seen: list[tuple[str | None, int]] = []

    async def receive(self, message: Nudge | GetSeen | Hold) -> object:
        match message:
            case Nudge(key=key, version=version):
                self.seen.append((key, version))
            case Hold():
                await self.gate.wait()
        return Seen(tuple(self.seen))


async def test_coalescing_replaces_a_pending_message_with_the_same_key_in_its_place() -> None:
    # Given a coalescing actor held busy, with nudges for a and b pending
    gate = anyio.Event()
    metrics = CountingMetrics()
    async with running([ChildSpec("r", lambda: Reconciler(gate))], metrics=metrics) as system:
        ref = system.ref("/r")
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Hold())
            await settle()
            await ref.tell(Nudge("a", 1))
            await ref.tell(Nudge("b", 1))

            # When a newer nudge for a arrives, and then one for c
            await ref.tell(Nudge("a", 2))
            await ref.tell(Nudge("c", 1))

            # Then a's pending nudge took the new content in place, taking no extra room
            assert system.tree()[1].mailbox_depth == 3
            gate.set()

        seen = await ref.ask(GetSeen())
        assert seen.nudges == (("a", 2), ("b", 1), ("c", 1))
        assert metrics.coalesced["/r"] == 1


async def test_a_key_is_coalesced_again_only_while_its_message_is_pending() -> None:
    # Given a coalescing actor that already handled a nudge for a
    gate = anyio.Event()
    async with running([ChildSpec("r", lambda: Reconciler(gate))]) as system:
        ref = system.ref("/r")
        await ref.tell(Nudge("a", 1))
        await settle()

        # When another nudge for a arrives after that
        await ref.tell(Nudge("a", 2))
        seen = await ref.ask(GetSeen())

    # Then it is handled too: coalescing only merges messages that wait together
    assert seen.nudges == (("a", 1), ("a", 2))


async def test_keyless_messages_and_asks_are_never_coalesced() -> None:
    # Given a coalescing actor held busy
    gate = anyio.Event()
    async with running([ChildSpec("r", lambda: Reconciler(gate))]) as system:
        ref = system.ref("/r")
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Hold())
            await settle()

            # When it gets two nudges without a key, and two asks
            await ref.tell(Nudge(None, 1))
            await ref.tell(Nudge(None, 2))
            tg.start_soon(ref.ask, GetSeen())
            tg.start_soon(ref.ask, GetSeen())
            await settle()

            # Then all four wait in the mailbox
            assert system.tree()[1].mailbox_depth == 4
            gate.set()

        seen = await ref.ask(GetSeen())
        assert seen.nudges == ((None, 1), (None, 2))


def test_a_mailbox_needs_room_for_at_least_one_message() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MailboxConfig(capacity=0)
