"""The replica arithmetic of the managed worker rollout (dgd-domain §12.3–§12.6), as pure functions.

A worker *generation* is the set of worker DCDs that carry one worker hash. During a rollout each
worker component has a new generation and old ones (``Generations``, built from what the ``rollout``
child actor observes of the DCDs, ``WorkerDCD``); this module says how many replicas each of them
gets, within the component's strategy. The state machine that drives the rollout from one reconcile
to the next, and the worker hashes it records, are in ``dgd.domain.rollout``.

* ``strategy`` resolves the component's annotations into ``maxSurge``/``maxUnavailable`` (§12.4);
* ``drained`` is the ``Recreate`` barrier and ``is_updated`` a component's completion test (§12.3);
* ``targets`` and ``distribute`` are the replica arithmetic (§12.4, §12.5);
* ``merged_status`` is the component status during a rollout (§12.6).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from dgd.messages.dgd import ComponentReplicaStatus

STRATEGY = "nvidia.com/deployment-strategy"
MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
DEFAULT_BOUND = "25%"

_INT_OR_PERCENT = re.compile(r"^(0|[1-9][0-9]*)%?$")


class InvalidStrategy(ValueError):
    """A rollout annotation that is neither an integer nor a percentage (names the key and value)."""


# Strategy (§12.4).


class Strategy(msgspec.Struct, frozen=True):
    """How one worker component rolls: ``Recreate``, or ``RollingUpdate`` within the two bounds."""

    recreate: bool = False
    max_surge: int = 1
    max_unavailable: int = 0


def _bound(annotations: Mapping[str, str], key: str, desired: int, *, round_up: bool) -> int:
    value = annotations.get(key, DEFAULT_BOUND).strip()
    if not _INT_OR_PERCENT.match(value):
        raise InvalidStrategy(
            f'annotation {key}: {value!r} is not allowed: use a non-negative integer ("1") or a '
            'percentage ("25%")'
        )
    if value.endswith("%"):
        scaled = desired * int(value[:-1]) / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(value)


def strategy(annotations: Mapping[str, str], desired: int) -> Strategy:
    """The strategy a component's merged annotations ask for, resolved against ``desired`` replicas."""
    if annotations.get(STRATEGY) == "Recreate":
        return Strategy(recreate=True, max_surge=0, max_unavailable=desired)
    surge = _bound(annotations, MAX_SURGE, desired, round_up=True)
    unavailable = _bound(annotations, MAX_UNAVAILABLE, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        surge = 1
    return Strategy(max_surge=surge, max_unavailable=unavailable)


# What the rollout sees of the cluster.


class WorkerDCD(msgspec.Struct, frozen=True, kw_only=True):
    """One worker DCD as the rollout reads it: its generation, replicas and readiness."""

    name: str
    component: str
    hash: str
    replicas: int  #: spec.replicas (default 1)
    available: int = 0
    ready: int = 0
    actual: int = 0  #: status.component.replicas: pods that exist and are not terminating
    created: str = ""  #: creationTimestamp (RFC 3339 sorts as time)
    processed: bool = True  #: status.observedGeneration ≥ metadata.generation
    deleting: bool = False
    status: ComponentReplicaStatus | None = None


class Generations(msgspec.Struct, frozen=True, kw_only=True):
    """One worker component during a reconcile: its desired replicas and strategy, the DCD of the new
    generation (if it exists), the DCDs of every other generation, and whether the old generations'
    pods have all terminated (the Recreate barrier; ``True`` for RollingUpdate)."""

    component: str
    desired: int
    strategy: Strategy
    new: WorkerDCD | None = None
    old: tuple[WorkerDCD, ...] = ()
    drained: bool = True


def drained(old: Sequence[WorkerDCD], pods: Iterable[tuple[str, bool]]) -> bool:
    """The Recreate barrier (§12.3): every old DCD at 0 replicas, processed, reporting none, and every
    pod of theirs (``(selector label, terminal)``) terminal."""
    if any(dcd.replicas != 0 or not dcd.processed or dcd.actual != 0 for dcd in old):
        return False
    names = {dcd.name for dcd in old}
    return all(terminal for selector, terminal in pods if selector in names)


# Replica targets (§12.4, §12.5).


def targets(generations: Generations) -> tuple[int, int]:
    """``(new target, old target)``: replicas of the new generation's DCD, and the total to keep in
    the old generations, this reconcile."""
    d = generations.desired
    new_spec = generations.new.replicas if generations.new else 0
    new_available = generations.new.available if generations.new else 0
    old_spec = sum(dcd.replicas for dcd in generations.old)
    old_available = sum(dcd.available for dcd in generations.old)
    if generations.strategy.recreate:
        return (d if generations.drained else 0), 0
    surge, unavailable = generations.strategy.max_surge, generations.strategy.max_unavailable
    min_available = d - unavailable
    new_unavailable = max(0, new_spec - new_available)
    max_scaled_down = max(0, old_spec + new_spec - min_available - new_unavailable)
    old_unhealthy = max(0, old_spec - old_available)
    available_surplus = max(0, old_available + new_available - min_available)
    old_target = max(0, old_spec - min(max_scaled_down, old_unhealthy + available_surplus))
    scale_up_budget = max(0, d + surge - old_spec - new_spec)
    new_target = min(d, new_spec + scale_up_budget)
    return new_target, old_target


def _oldest_first(dcds: Iterable[WorkerDCD]) -> list[WorkerDCD]:
    return sorted(dcds, key=lambda dcd: (dcd.created, dcd.name))


def distribute(old_target: int, old: Sequence[WorkerDCD]) -> dict[str, int]:
    """Replicas per old DCD summing to ``old_target`` (or as close as their specs allow): the
    available replicas are kept, removed oldest first, added back newest first (§12.5)."""
    keep = {dcd.name: min(dcd.replicas, dcd.available) for dcd in old}
    surplus = sum(keep.values()) - old_target
    for dcd in _oldest_first(old):
        if surplus <= 0:
            break
        cut = min(keep[dcd.name], surplus)
        keep[dcd.name] -= cut
        surplus -= cut
    for dcd in reversed(_oldest_first(old)):
        if surplus >= 0:
            break
        add = min(dcd.replicas - keep[dcd.name], -surplus)
        keep[dcd.name] += add
        surplus += add
    return keep


def is_updated(generations: Generations) -> bool:
    """The completion test of one component: the new generation ready, the old ones not."""
    new_ready = generations.new.ready if generations.new else 0
    return new_ready >= generations.desired and all(dcd.ready == 0 for dcd in generations.old)


# Status during a rollout (§12.6).


def merged_status(
    new: ComponentReplicaStatus | None, old: Sequence[WorkerDCD], old_targets: Mapping[str, int]
) -> ComponentReplicaStatus | None:
    """The component status while old generations run beside the new one."""
    olds = [dcd for dcd in reversed(_oldest_first(old)) if dcd.status is not None]
    if not olds:
        return new
    statuses = [dcd.status for dcd in olds if dcd.status is not None]
    targeted = [dcd for dcd in olds if old_targets.get(dcd.name, 0) > 0]
    source = (targeted or olds)[0].status
    runtime_namespace = source.runtime_namespace if source is not None else None
    names = [name for status in statuses for name in status.component_names or ()]
    replicas = sum(status.replicas for status in statuses)
    ready = sum(status.ready_replicas or 0 for status in statuses)
    available = sum(status.available_replicas or 0 for status in statuses)
    if new is None:
        return ComponentReplicaStatus(
            component_kind=statuses[0].component_kind,
            replicas=replicas,
            updated_replicas=0,
            component_names=sorted(names) or None,
            runtime_namespace=runtime_namespace,
            ready_replicas=ready,
            available_replicas=available,
        )
    return msgspec.structs.replace(
        new,
        replicas=new.replicas + replicas,
        ready_replicas=(new.ready_replicas or 0) + ready,
        available_replicas=(new.available_replicas or 0) + available,
        component_names=sorted([*names, *(new.component_names or ())]) or None,
        runtime_namespace=runtime_namespace,
    )
