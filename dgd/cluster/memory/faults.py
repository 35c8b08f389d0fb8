"""Fault hooks of the memory adapter: make chosen requests fail, slow down, read stale, or lose watches.

A rule matches requests by Kubernetes verb (``get list watch create update patch delete``),
resource, subresource (``""`` for the object itself, ``"status"``, ``"scale"``; ``None`` for any),
namespace and name, and fires ``times`` times (``None``: forever), each time with ``probability``.
Rules are checked in the order they were added, once per request; every probability draw comes
from the seeded generator the cluster was given, so a run is reproducible from its seed.

Actions:

- ``Fail(error)`` — the request raises a copy of ``error`` (any port error) instead of running.
  On ``watch`` it is raised when the watch is entered.
- ``Delay(seconds)`` — the request waits this long (event-loop time) before running.
- ``DropWatch(after_events)`` — the watch stream ends after that many events (resume from the
  last resourceVersion).
- ``ExpireWatch(after_events)`` — the watch raises ``Gone`` after that many events (re-list).
- ``StaleRead(behind)`` — a ``get`` or ``list`` is served as of ``behind`` writes ago: an older
  version, or ``NotFound`` for an object created since (a lagging watch cache).

A request takes every delay that fires, the first error that fires (later rules are not checked),
the largest staleness, and the first drop or expiry.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from dgd.cluster.errors import ClusterError
from dgd.cluster.resources import Resource

Verb = Literal["get", "list", "watch", "create", "update", "patch", "delete"]
VERBS: frozenset[str] = frozenset(("get", "list", "watch", "create", "update", "patch", "delete"))


class Request(msgspec.Struct, frozen=True):
    """What a rule matches: one API request (``resource`` is ``plural.group``)."""

    verb: Verb
    resource: str
    subresource: str = ""
    namespace: str | None = None
    name: str | None = None


class Fail(msgspec.Struct, frozen=True):
    #: A port error, or (to see a bug contained) any exception.
    error: ClusterError | Exception


class Delay(msgspec.Struct, frozen=True):
    seconds: float


class DropWatch(msgspec.Struct, frozen=True):
    after_events: int = 0


class ExpireWatch(msgspec.Struct, frozen=True):
    after_events: int = 0


class StaleRead(msgspec.Struct, frozen=True):
    behind: int = 1


Action = Fail | Delay | DropWatch | ExpireWatch | StaleRead


class Decision(msgspec.Struct):
    """What the fired rules do to one request."""

    delay: float = 0.0
    error: ClusterError | Exception | None = None
    stale_behind: int | None = None
    drop_after: int | None = None
    expire_after: int | None = None


class FaultRule:
    """One rule; ``fired`` counts how often it fired. Remove it with ``Faults.remove``."""

    def __init__(
        self,
        action: Action,
        *,
        verbs: frozenset[str] | None,
        resource: str | None,
        subresource: str | None,
        namespace: str | None,
        name: str | None,
        times: int | None,
        probability: float,
    ) -> None:
        if verbs is not None and not verbs <= VERBS:
            raise ValueError(f"unknown verbs {sorted(verbs - VERBS)}; use {sorted(VERBS)}")
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability {probability} is not in [0, 1]")
        self.action = action
        self.verbs, self.resource, self.subresource = verbs, resource, subresource
        self.namespace, self.name = namespace, name
        self.times, self.probability = times, probability
        self.fired = 0

    def matches(self, request: Request) -> bool:
        return (
            (self.times is None or self.fired < self.times)
            and (self.verbs is None or request.verb in self.verbs)
            and (self.resource is None or request.resource == self.resource)
            and (self.subresource is None or request.subresource == self.subresource)
            and (self.namespace is None or request.namespace == self.namespace)
            and (self.name is None or request.name == self.name)
        )

    def __repr__(self) -> str:
        where = [f"{k}={v!r}" for k, v in vars(self).items() if k != "action" and v is not None]
        return f"FaultRule({self.action!r}, {', '.join(where)})"


class Faults:
    """The fault rules of one cluster. Every adding method returns the rule it added."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.rules: list[FaultRule] = []

    def fail(self, error: ClusterError, **match: Any) -> FaultRule:
        """Requests matching ``match`` raise ``error``."""
        return self.add(Fail(error), **match)

    def delay(self, seconds: float, **match: Any) -> FaultRule:
        """Requests matching ``match`` take ``seconds`` longer."""
        return self.add(Delay(seconds), **match)

    def drop_watch(self, after_events: int = 0, **match: Any) -> FaultRule:
        """Watches opened while this fires end after ``after_events`` events."""
        return self.add(DropWatch(after_events), **{"verb": "watch", **match})

    def expire_watch(self, after_events: int = 0, **match: Any) -> FaultRule:
        """Watches opened while this fires raise ``Gone`` after ``after_events`` events."""
        return self.add(ExpireWatch(after_events), **{"verb": "watch", **match})

    def stale_read(self, behind: int = 1, **match: Any) -> FaultRule:
        """Gets and lists are served as of ``behind`` writes ago."""
        return self.add(StaleRead(behind), **{"verb": ("get", "list"), **match})

    def add(
        self,
        action: Action,
        *,
        verb: str | Iterable[str] | None = None,
        resource: Resource[Any] | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        times: int | None = None,
        probability: float = 1.0,
    ) -> FaultRule:
        """Add a rule: ``action`` on requests matching every given criterion."""
        verbs = None if verb is None else frozenset((verb,) if isinstance(verb, str) else verb)
        rule = FaultRule(
            action,
            verbs=verbs,
            resource=None if resource is None else str(resource),
            subresource=subresource,
            namespace=namespace,
            name=name,
            times=times,
            probability=probability,
        )
        self.rules.append(rule)
        return rule

    def remove(self, rule: FaultRule) -> None:
        self.rules.remove(rule)

    def clear(self) -> None:
        self.rules.clear()

    def decide(self, request: Request) -> Decision:
        """Fire the rules that match ``request`` and say what they do to it."""
        decision = Decision()
        for rule in self.rules:
            if not rule.matches(request):
                continue
            if rule.probability < 1.0 and self._rng.random() >= rule.probability:
                continue
            rule.fired += 1
            action = rule.action
            if isinstance(action, Fail):
                decision.error = copy.copy(action.error)
                break
            if isinstance(action, Delay):
                decision.delay += action.seconds
            elif isinstance(action, StaleRead):
                decision.stale_behind = max(decision.stale_behind or 0, action.behind)
            elif isinstance(action, DropWatch) and decision.drop_after is None:
                decision.drop_after = action.after_events
            elif isinstance(action, ExpireWatch) and decision.expire_after is None:
                decision.expire_after = action.after_events
        return decision
