"""The managed worker rollout of the Component pathway (dgd-domain §12.1–§12.8), as pure functions.

A worker *generation* is the set of worker DCDs that carry one worker hash (in their name and in the
label ``nvidia.com/dynamo-worker-hash``). When the desired worker hash differs from the one the DGD
records, the rollout moves each worker component from its old generations to the new one within
``maxSurge``/``maxUnavailable`` (or, under ``Recreate``, drains the old first), then deletes the old
DCDs and records the new hash. Nothing here reads or writes the cluster: the ``rollout`` child actor
observes the DCDs and pods, calls these functions, and performs what they decide.

* ``advance`` is the ``status.rollingUpdate`` state machine (§12.3) plus the progress deadline;
* ``targets`` and ``distribute`` are the replica arithmetic (§12.4, §12.5);
* ``merged_status`` is the component status during a rollout (§12.6).

Over 400 lines: the state machine and its arithmetic are one contract (§12), kept side by side.

Departures from upstream (``docs/decisions.md``, "Managed worker rollout"):

* A rollout completes only once the old worker DCDs are **gone**, not when their deletion was
  requested: ``successful`` never precedes the old generation's disappearance.
* A rollout whose target is the recorded hash (a revert mid-rollout) is not completed at once: the
  generation being abandoned is scaled down like any old generation, only as the reverted one is
  available again, and deleted at the end.
* A rollout that makes no progress for the progress deadline becomes ``Failed`` (upstream never
  sets it). It keeps being driven: progress resumes it (``InProgress``), completion completes it, and
  a worker spec whose generation does not exist yet starts a fresh rollout.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2, LEGACY
from dgd.messages.config import format_duration
from dgd.messages.dgd import ComponentReplicaStatus, RollingUpdatePhase, RollingUpdateStatus

STRATEGY = "nvidia.com/deployment-strategy"
MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
DEFAULT_BOUND = "25%"

PENDING: Final = "Pending"
IN_PROGRESS: Final = "InProgress"
COMPLETED: Final = "Completed"
FAILED: Final = "Failed"
#: Phases in which the rollout is still being driven.
ACTIVE_PHASES = frozenset({PENDING, IN_PROGRESS, FAILED})

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


def _drained_dcd(dcd: WorkerDCD) -> bool:
    return dcd.replicas == 0 and dcd.processed and dcd.ready == 0 and dcd.actual == 0


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


# Worker hashes (§12.1).


class Hashes(msgspec.Struct, frozen=True):
    """The worker hashes a DGD records: the legacy v1 name suffix and the v2 hash."""

    v1: str | None = None
    v2: str | None = None

    @classmethod
    def of(cls, annotations: Mapping[str, str] | None) -> Hashes:
        found = annotations or {}
        return cls(found.get(CURRENT_WORKER_HASH) or None, found.get(CURRENT_WORKER_HASH_V2) or None)

    def matches(self, desired: str) -> bool:
        """The trigger's negation: the recorded generation is the desired one."""
        if self.v2:
            return self.v2 == desired
        return self.v1 is not None and self.v1 != LEGACY

    def name_suffix(self) -> str | None:
        """The hash the recorded generation's DCD names carry."""
        return self.v1 or self.v2


def new_generation_hash(current: Hashes, desired: str, *, rolling: bool) -> str:
    """The DCD suffix the new generation carries this reconcile: the recorded v1 while it still names
    the desired generation, otherwise the desired v2 hash."""
    v1_names_it = current.v1 is not None and current.v1 != LEGACY and current.v2 in (None, desired)
    if v1_names_it and not (rolling and current.v2 is None):
        return current.v1 or desired
    return desired


def completed_annotations(new_hash: str, desired: str) -> dict[str, str | None]:
    """The DGD annotations of a completed generation: on v2 the legacy v1 name is dropped."""
    if new_hash == desired:
        return {CURRENT_WORKER_HASH_V2: desired, CURRENT_WORKER_HASH: None}
    return {CURRENT_WORKER_HASH_V2: desired}


# The state machine (§12.3) and the progress deadline.


class Progress(msgspec.Struct, frozen=True):
    """The last change the rollout made visible (``mark``) and when it was first seen, in seconds."""

    mark: tuple[tuple[str, int, int, int, int, int], ...]
    since: float


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """What one reconcile of the rollout decided.

    ``status``: the new ``status.rollingUpdate``; ``annotations``: DGD annotations to write (a
    merge patch); ``delete``: old worker DCDs to delete now; ``events``: queued with the status;
    ``failure``: the Ready message while ``Failed``; ``wake``: seconds until the deadline is due
    (the reconcile must run then even if nothing else happens).
    """

    status: RollingUpdateStatus | None
    annotations: dict[str, str | None] = msgspec.field(default_factory=dict)
    delete: tuple[str, ...] = ()
    events: tuple[EventRecord, ...] = ()
    progress: Progress | None = None
    failure: str | None = None
    wake: float | None = None


def _mark(components: Sequence[Generations]) -> tuple[tuple[str, int, int, int, int, int], ...]:
    """What counts as progress: any change in a generation's replicas, readiness or membership."""
    return tuple(
        (
            g.component,
            g.new.replicas if g.new else -1,
            g.new.ready if g.new else -1,
            sum(dcd.replicas for dcd in g.old),
            sum(dcd.ready for dcd in g.old),
            len(g.old) * 2 + (0 if g.drained else 1),
        )
        for g in components
    )


def _waits_for(generations: Generations) -> str | None:
    """What a component that is not done waits for, in words (``None``: it is done)."""
    d = generations.desired
    new_ready = generations.new.ready if generations.new else 0
    old_ready = sum(dcd.ready for dcd in generations.old)
    if new_ready < d:
        what = f"{new_ready}/{d} new replicas ready"
        if old_ready:
            what += f", {old_ready} old still serving"
        return what
    if old_ready:
        return f"{old_ready} old replicas still ready"
    if not generations.drained:
        return "old pods still terminating (Recreate)"
    if any(dcd.deleting for dcd in generations.old):
        return "old DynamoComponentDeployments still being deleted"
    if generations.old:
        return "updated; its old DynamoComponentDeployments go once every component is updated"
    return None


def stuck_message(components: Sequence[Generations], new_hash: str, stalled: float) -> str:
    """The Ready message of a failed rollout: every component not done, and what it waits for."""
    waits = [f"{g.component}: {why}" for g in components if (why := _waits_for(g)) is not None]
    detail = "; ".join(waits) or "no worker component is progressing"
    return (
        f"Rolling update to worker hash {new_hash} made no progress for {format_duration(stalled)}: {detail}"
    )


def advance(
    status: RollingUpdateStatus | None,
    *,
    current: Hashes,
    desired: str,
    new_hash: str,
    components: Sequence[Generations],
    now: str,
    clock: float,
    progress: Progress | None,
    deadline: float | None,
) -> Step:
    """One reconcile of the rollout state machine; call it when a rollout is active or triggered."""
    phase: RollingUpdatePhase = (status.phase if status is not None else None) or ""
    trigger = not current.matches(desired)
    has_old = any(g.old for g in components)
    everyone_updated = bool(components) and all(is_updated(g) for g in components)
    all_drained = all(g.drained for g in components)
    rolling = status or RollingUpdateStatus()

    # A completed rollout and a new hash: a stale annotation, the last rollout resumed, or a new one.
    if phase == COMPLETED and trigger:
        if everyone_updated and all_drained and not has_old:
            return Step(status=status, annotations=completed_annotations(new_hash, desired))
        phase = IN_PROGRESS if everyone_updated else ""
    # A failed rollout whose target generation does not exist at all: a new worker spec, start afresh.
    if phase == FAILED and not any(g.new is not None for g in components):
        phase = ""

    if phase == "":
        started = RollingUpdateStatus(phase=PENDING, start_time=now)
        note = f"Starting rolling update to worker hash {new_hash}"
        return Step(status=started, events=(EventRecord("Normal", "RollingUpdateStarted", "Update", note),))
    if phase == PENDING:
        return Step(status=msgspec.structs.replace(rolling, phase=IN_PROGRESS), progress=None)
    if phase == COMPLETED:
        return Step(status=status)

    # InProgress or Failed: continue, and complete once every component is updated and the old
    # generations drained (Recreate) and gone; the old DCDs are deleted once the rest is done.
    updated = sorted(g.component for g in components if is_updated(g))
    rolling = msgspec.structs.replace(rolling, phase=phase, end_time=None, updated_components=updated or None)
    completing = everyone_updated and all_drained
    if completing and not has_old:
        done = RollingUpdateStatus(
            phase=COMPLETED,
            start_time=rolling.start_time,
            end_time=now,
            updated_components=sorted(g.component for g in components),
        )
        note = f"Rolling update completed, worker hash {new_hash}"
        return Step(
            status=done,
            annotations=completed_annotations(new_hash, desired),
            events=(EventRecord("Normal", "RollingUpdateCompleted", "Update", note),),
        )
    # An old DCD goes once it is scaled to 0, its controller saw that, and it reports no replica
    # (the scale-down happens in this reconcile's ScaleOld; the deletion in a later one).
    doomed = (
        tuple(dcd.name for g in components for dcd in g.old if _drained_dcd(dcd) and not dcd.deleting)
        if completing
        else ()
    )

    return _against_deadline(rolling, phase, doomed, components, new_hash, clock, progress, deadline)


def _against_deadline(
    rolling: RollingUpdateStatus,
    phase: RollingUpdatePhase,
    doomed: tuple[str, ...],
    components: Sequence[Generations],
    new_hash: str,
    clock: float,
    progress: Progress | None,
    deadline: float | None,
) -> Step:
    """A rollout still going: any visible change resets the progress deadline (and resumes a failed
    rollout); none for the deadline fails it; the step deletes ``doomed`` old DCDs either way."""
    mark = _mark(components)
    if progress is None or progress.mark != mark:
        resumed = progress is not None and phase == FAILED
        progress = Progress(mark, clock)
        if resumed:
            rolling = msgspec.structs.replace(rolling, phase=IN_PROGRESS)
            phase = IN_PROGRESS
    stalled = clock - progress.since
    if phase == IN_PROGRESS and deadline is not None and stalled >= deadline:
        message = stuck_message(components, new_hash, stalled)
        failed = msgspec.structs.replace(rolling, phase=FAILED)
        event = EventRecord("Warning", "RollingUpdateFailed", "Update", message)
        return Step(status=failed, delete=doomed, events=(event,), progress=progress, failure=message)
    if phase == FAILED:
        # After an actor restart the clock restarted: the rollout has been stuck for at least the deadline.
        stalled = max(stalled, deadline or 0.0)
        message = stuck_message(components, new_hash, stalled)
        return Step(status=rolling, delete=doomed, progress=progress, failure=message)
    wake = None if deadline is None else max(0.0, progress.since + deadline - clock)
    return Step(status=rolling, delete=doomed, progress=progress, wake=wake)
