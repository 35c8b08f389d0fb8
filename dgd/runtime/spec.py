"""Supervision as data: child specs, restart types, strategies, intensity and backoff (OTP's model).

A supervisor is described, not programmed: ``Supervision(Strategy.ONE_FOR_ALL, intensity=3,
period=5)`` plus an ordered list of ``ChildSpec(id, factory, restart, shutdown)``.
"""

from __future__ import annotations

import enum
import math
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

if TYPE_CHECKING:
    from dgd.runtime.actor import Actor

M = TypeVar("M")


class Restart(enum.Enum):
    """When a child that ended is started again."""

    PERMANENT = "permanent"  #: always, however it ended
    TRANSIENT = "transient"  #: only when it ended abnormally (crash, ``Killed``, escalation)
    TEMPORARY = "temporary"  #: never; it is removed from its supervisor when it ends


class Strategy(enum.Enum):
    """Which children a supervisor restarts when one of them must be restarted."""

    ONE_FOR_ONE = "one_for_one"  #: only the child that ended
    ONE_FOR_ALL = "one_for_all"  #: all children: the others are stopped, then all are started again
    REST_FOR_ONE = "rest_for_one"  #: the child that ended and the children started after it


class Backoff(msgspec.Struct, frozen=True):
    """Exponential backoff with jitter between a child's restarts.

    The n-th restart of a child that keeps failing (n counts from 0 and resets once the child has
    stayed up for a whole intensity period) waits ``min(maximum, initial * multiplier**n)``, shortened
    by up to ``jitter`` of itself at random: the shape of tenacity's ``wait_exponential`` plus
    jitter, with the jitter drawn from the system's injected random source so runs replay.
    """

    initial: float = 0.1
    maximum: float = 10.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < self.initial:
            raise ValueError(f"backoff needs 0 <= initial <= maximum, got {self.initial}, {self.maximum}")
        if self.multiplier < 1:
            raise ValueError(f"backoff multiplier must be at least 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter is a fraction in [0, 1], got {self.jitter}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before restart number ``attempt`` (0-based) of a failing child."""
        exponent = min(attempt, 64)
        base = min(self.maximum, self.initial * self.multiplier**exponent)
        if self.jitter == 0 or base == 0:
            return base
        return base * (1.0 - self.jitter * rng.random())


#: Restart at once, with no backoff (OTP's behaviour).
NO_BACKOFF = Backoff(initial=0.0, maximum=0.0, jitter=0.0)


class Supervision(msgspec.Struct, frozen=True):
    """How a supervisor treats its children (OTP's supervisor flags, plus backoff).

    Restart intensity: if more than ``intensity`` restarts happen among its children within
    ``period`` seconds, the supervisor stops all its children and fails to its own parent with
    ``RestartIntensityExceeded`` (escalation). ``intensity=0`` escalates on the first failure.

    ``park``: for a supervisor of many independent children (one per object), the intensity is each
    child's own, and a child over it is *parked* instead: restarted only after its backoff (which keeps
    growing, as long as it does not stay up a whole period), its supervising actor told
    (``Actor.child_parked``). Such a supervisor never escalates: no number of failing children fails it.
    """

    strategy: Strategy = Strategy.ONE_FOR_ONE
    intensity: int = 3
    period: float = 5.0
    backoff: Backoff = Backoff()
    park: bool = False

    def __post_init__(self) -> None:
        if self.park and self.strategy is not Strategy.ONE_FOR_ONE:
            raise ValueError("only a one-for-one supervisor parks its children")
        if self.intensity < 0:
            raise ValueError(f"restart intensity must not be negative, got {self.intensity}")
        if not self.period > 0:
            raise ValueError(f"restart period must be positive, got {self.period}")


class ChildSpec(msgspec.Struct, Generic[M], frozen=True):
    """One child of a supervisor, as data.

    ``id`` names the child under its supervisor (its path is the supervisor's path plus ``/id``;
    an id may itself contain ``/``, as in ``ns/name``). ``factory`` builds a fresh actor for every
    start: state is never carried over a restart. ``shutdown`` is how many seconds a graceful stop
    may take before the child is cancelled; ``0`` cancels at once (OTP's ``brutal_kill``) and
    ``math.inf`` waits for as long as it takes.
    """

    id: str
    factory: Callable[[], Actor[Any]]
    restart: Restart = Restart.PERMANENT
    shutdown: float = 5.0

    def __post_init__(self) -> None:
        if not self.id or self.id.startswith("/") or self.id.endswith("/"):
            raise ValueError(f"a child id is a non-empty name not starting or ending in '/': {self.id!r}")
        if self.shutdown < 0 or math.isnan(self.shutdown):
            raise ValueError(f"shutdown must be a non-negative number of seconds, got {self.shutdown}")
