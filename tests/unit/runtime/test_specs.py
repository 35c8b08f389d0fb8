"""Supervision and mailboxes are data: invalid specs are refused when they are built."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import msgspec
import pytest

from dgd.runtime import (
    Backoff,
    ChildSpec,
    DynamicSupervisor,
    MailboxConfig,
    Request,
    Strategy,
    Supervision,
    Supervisor,
)
from dgd.runtime.message import reply_type

from .cast import Worker


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: ChildSpec("", Worker), "non-empty name"),
        (lambda: ChildSpec("/a", Worker), "not starting or ending in '/'"),
        (lambda: ChildSpec("a/", Worker), "not starting or ending in '/'"),
        (lambda: ChildSpec("a", Worker, shutdown=-1), "non-negative number of seconds"),
        (lambda: ChildSpec("a", Worker, shutdown=math.nan), "non-negative number of seconds"),
        (lambda: Backoff(initial=2, maximum=1), "initial <= maximum"),
        (lambda: Backoff(multiplier=0.5), "multiplier must be at least 1"),
        (lambda: Backoff(jitter=1.5), "fraction in"),
        (lambda: Supervision(intensity=-1), "must not be negative"),
        (lambda: Supervision(period=0), "must be positive"),
        (lambda: MailboxConfig(block_timeout=-1), "must not be negative"),
        (lambda: Supervisor([ChildSpec("a", Worker), ChildSpec("a", Worker)]), "unique"),
        (lambda: DynamicSupervisor(Supervision(Strategy.ONE_FOR_ALL)), "one for one"),
    ],
)
def test_an_invalid_spec_is_refused_when_built(build: Callable[[], object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        build()


def test_backoff_grows_exponentially_up_to_its_maximum_and_jitter_only_shortens_it() -> None:
    # Given a backoff of 1s doubling up to 8s, with and without jitter
    exact = Backoff(initial=1, maximum=8, multiplier=2, jitter=0)
    jittered = Backoff(initial=1, maximum=8, multiplier=2, jitter=0.5)
    rng = random.Random(3)

    # Then the exact one doubles and stops at the maximum, even after very many attempts
    assert [exact.delay(attempt, rng) for attempt in range(6)] == [1, 2, 4, 8, 8, 8]
    assert exact.delay(10_000, rng) == 8
    # And the jittered one stays within [half, whole] of it
    for attempt in range(6):
        delay = jittered.delay(attempt, rng)
        assert exact.delay(attempt, rng) / 2 <= delay <= exact.delay(attempt, rng)


class Answer(msgspec.Struct, frozen=True):
    pass


class Other(msgspec.Struct, frozen=True):
    pass


class AskOne(Request[Answer], frozen=True):
    pass


class AskEither(Request[Answer | Other], frozen=True):
    pass


class AskNothing(Request[None], frozen=True):
    pass


class AskList(Request[list[int]], frozen=True):
    pass


class AskOneAgain(AskOne, frozen=True):
    pass


def test_a_request_names_the_classes_its_reply_is_checked_against() -> None:
    # A single class, a union, None, a generic alias (its origin), and an inherited reply type
    assert reply_type(AskOne) == (Answer,)
    assert reply_type(AskEither) == (Answer, Other)
    assert reply_type(AskNothing) == (type(None),)
    assert reply_type(AskList) == (list,)
    assert reply_type(AskOneAgain) == (Answer,)  # inherited from its base request
