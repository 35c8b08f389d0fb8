"""Every message is accounted for while actors are killed at random under load."""

from __future__ import annotations

import contextlib
import random

import anyio
import msgspec
import pytest

from dgd.runtime import (
    Actor,
    ActorNotFound,
    ActorStopped,
    ChildSpec,
    MailboxFull,
    Request,
    Strategy,
    Supervisor,
)

from .cast import BOTH_LOOPS, immediate, running

pytestmark = pytest.mark.anyio

MESSAGES = 10_000


class Ledger:
    """What the counting actors handled, kept outside them since a restart resets actor state."""

    def __init__(self) -> None:
        self.processed = 0


class Tick(msgspec.Struct, frozen=True):
    n: int


class Tock(msgspec.Struct, frozen=True):
    n: int


class TickAsk(Request[Tock], frozen=True):
    n: int


class Counting(Actor[Tick | TickAsk]):
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def receive(self, message: Tick | TickAsk) -> Tock | None:
        self.ledger.processed += 1
        return Tock(message.n) if isinstance(message, TickAsk) else None


@BOTH_LOOPS
async def test_every_message_is_processed_dead_lettered_or_a_failed_ask_while_actors_are_killed() -> None:
    # Given six counting actors: three under the root (one_for_one), three under a one_for_all supervisor
    ledger = Ledger()
    rng = random.Random(2024)

    def counting(id: str) -> ChildSpec[Tick | TickAsk]:
        return ChildSpec(id, lambda: Counting(ledger))

    group = Supervisor(
        [counting(f"g{n}") for n in range(3)], immediate(Strategy.ONE_FOR_ALL, intensity=10**9)
    )
    children = [counting(f"c{n}") for n in range(3)] + [ChildSpec("group", lambda: group)]
    targets = ["/c0", "/c1", "/c2", "/group/g0", "/group/g1", "/group/g2"]
    victims = [*targets, "/group"]
    told = asked = answered = failed_asks = refused = kills = 0

    async with running(children, supervision=immediate(intensity=10**9)) as system:
        refs = [system.ref(path) for path in targets]  # refs follow their paths across restarts

        async def produce() -> None:
            # When 10,000 messages flow, a fifth of them asks, yielding every ten messages ...
            nonlocal told, asked, answered, failed_asks, refused
            for n in range(MESSAGES):
                target = rng.choice(refs)
                try:
                    if rng.random() < 0.2:
                        asked += 1
                        reply = await target.ask(TickAsk(n))
                        assert reply == Tock(n)
                        answered += 1
                    else:
                        told += 1
                        await target.tell(Tick(n))
                except ActorStopped:
                    failed_asks += 1
                except MailboxFull:
                    refused += 1
                if n % 10 == 0:
                    await anyio.sleep(0)
            done.set()

        async def chaos() -> None:
            # ... while actors (and their supervisor) are killed at random
            nonlocal kills
            while not done.is_set():
                await anyio.sleep(0)
                if rng.random() < 0.05:
                    with contextlib.suppress(ActorNotFound):  # its supervisor is restarting
                        kills += system.kill(rng.choice(victims))

        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            tg.start_soon(chaos)

    # Then after shutdown every message is accounted for exactly once
    dead = system.dead_letter_count
    assert told + asked == MESSAGES
    assert ledger.processed + dead + failed_asks + refused == MESSAGES
    # And the run was a real one: kills happened, and each outcome occurred
    assert refused == 0
    assert kills > 20
    assert dead > 0 and failed_asks > 0 and answered > 0
    assert ledger.processed > MESSAGES // 2
    # And every dead letter says who sent what to whom
    assert {letter.message_type for letter in system.dead_letters} == {"Tick"}
    assert {letter.target for letter in system.dead_letters} <= set(targets)
    assert {letter.sender for letter in system.dead_letters} == {None}
