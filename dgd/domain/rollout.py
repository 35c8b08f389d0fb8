"""The managed worker rollout of the Component pathway (dgd-domain §12.1–§12.8), as pure functions.

A worker *generation* is the set of worker DCDs that carry one worker hash (in their name and in the
label ``nvidia.com/dynamo-worker-hash``). When the desired worker hash differs from the one the DGD
records, the rollout moves each worker component from its old generations to the new one within
``maxSurge``/``maxUnavailable`` (or, under ``Recreate``, drains the old first), then deletes the old
DCDs and records the new hash. Nothing here reads or writes the cluster: the ``rollout`` child actor
observes the DCDs and pods, calls these functions, and performs what they decide.

* ``Hashes``, ``new_generation_hash`` and ``completed_annotations`` are the worker hashes the DGD
  records: what triggers a rollout, what the new generation is named, what completion writes (§12.1);
  ``serving_hashes`` checks the record against the worker DCDs that run, which win;
* ``advance`` is the ``status.rollingUpdate`` state machine (§12.3) plus the progress deadline;
* ``rollout_active`` is the one rule of when a rollout runs, for everything that waits for one.

How many replicas each generation gets meanwhile (the strategy, ``targets``, ``distribute``) and the
component status during a rollout are the replica arithmetic of ``dgd.domain.rollout_replicas``.

Departures from upstream (``docs/decisions.md``, "Managed worker rollout"):

* A rollout completes only once the old worker DCDs are **gone**, not when their deletion was
  requested: ``successful`` never precedes the old generation's disappearance.
* A rollout whose target is the recorded hash (a revert mid-rollout) is not completed at once: the
  generation being abandoned is scaled down like any old generation, only as the reverted one is
  available again, and deleted at the end.
* The recorded worker hash is checked against the worker DCDs the DGD controls: when they disagree
  (an update dropped the annotation, #13495), the rollout starts from the generation that serves.
* A rollout that makes no progress for the progress deadline becomes ``Failed`` (upstream never
  sets it). It keeps being driven: progress resumes it (``InProgress``), completion completes it, and
  a worker spec whose generation does not exist yet starts a fresh rollout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.rollout_replicas import Generations, WorkerDCD, is_updated
from dgd.domain.worker_generation import CURRENT_WORKER_HASH, CURRENT_WORKER_HASH_V2, LEGACY
from dgd.messages.config import format_duration
from dgd.messages.dgd import RollingUpdatePhase, RollingUpdateStatus

PENDING: Final = "Pending"
IN_PROGRESS: Final = "InProgress"
COMPLETED: Final = "Completed"
FAILED: Final = "Failed"
#: The phases from a rollout's start to its completion.
_ACTIVE_PHASES: Final = frozenset({PENDING, IN_PROGRESS, FAILED})


def rollout_active(rolling_update: RollingUpdateStatus | None) -> bool:
    """Whether a rollout runs: from ``Pending`` until ``Completed``, ``Failed`` included.

    The one rule for everything that waits for a rollout: the state machine keeps driving it, the
    v1->v2 hash migration waits, admission refuses a new ``spec.restart.id`` and the restart logic
    supersedes one (§11, §12.3), and the DGD is not ``successful``. ``Failed`` is a rollout
    ``InProgress`` past its progress deadline, and goes back to ``InProgress`` by itself on the next
    visible change: the deadline changes what the rollout reports, never what it does or holds back.
    """
    return rolling_update is not None and rolling_update.phase in _ACTIVE_PHASES


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


def serving_hashes(recorded: Hashes, workers: Sequence[WorkerDCD], desired: str, *, rolling: bool) -> Hashes:
    """The generation a rollout runs from: the ``recorded`` one while it agrees with the worker DCDs
    this DGD controls (``workers``), otherwise the one those DCDs show serving (issue 32, #13495).

    The annotations are bookkeeping, which an update (``kubectl replace``) may drop or a stale write
    leave behind; the worker DCDs are what runs. The record stands when no generation but the
    ``desired`` one runs (a new graph, the end of a rollout, a stale record: the state machine
    initializes, completes or repairs it), or when it names a generation that runs and, with no
    rollout active, the only one. Otherwise the serving generation is the one with the most available
    replicas (then ready, then the newest DCD), among those other than ``desired`` when no rollout is
    active (a leftover generation beside the desired one must be rolled out, not kept)."""
    live = [w for w in workers if not w.deleting]
    present = {w.hash for w in live}
    suffix = recorded.name_suffix()
    if not present - {desired} or (suffix in present and (rolling or present == {suffix})):
        return recorded
    candidates = [w for w in live if rolling or w.hash != desired] or live

    def serves(worker_hash: str) -> tuple[int, int, str, str]:
        mine = [w for w in candidates if w.hash == worker_hash]
        return (
            sum(w.available for w in mine),
            sum(w.ready for w in mine),
            max(w.created for w in mine),
            worker_hash,
        )

    serving = max({w.hash for w in candidates}, key=serves)
    return Hashes(v1=LEGACY) if serving == LEGACY else Hashes(v2=serving)


def recorded_annotations(hashes: Hashes) -> dict[str, str | None]:
    """The DGD annotations that record ``hashes`` exactly (a merge patch: ``None`` removes)."""
    return {CURRENT_WORKER_HASH_V2: hashes.v2, CURRENT_WORKER_HASH: hashes.v1}


def recovered_event(serving: Hashes, recorded: Hashes) -> EventRecord:
    """The Normal event of a worker hash recorded from the worker DCDs that serve (``serving_hashes``)."""
    was = recorded.name_suffix() or "none"
    note = f"Recorded worker hash {serving.name_suffix()} from the worker DCDs that serve (recorded: {was})"
    return EventRecord("Normal", "WorkerHashRecovered", "Update", note)


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


def _drained_dcd(dcd: WorkerDCD) -> bool:
    return dcd.replicas == 0 and dcd.processed and dcd.ready == 0 and dcd.actual == 0


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
        # In progress from now: the deadline counts from here, whether or not anything wakes us later.
        moved = msgspec.structs.replace(rolling, phase=IN_PROGRESS)
        return Step(status=moved, progress=Progress(_mark(components), clock), wake=deadline)
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
        # Measured again from now (a DGD actor restarted): it has been stuck for at least the deadline.
        stalled = max(stalled, deadline or 0.0)
        message = stuck_message(components, new_hash, stalled)
        return Step(status=rolling, delete=doomed, progress=progress, failure=message)
    wake = None if deadline is None else max(0.0, progress.since + deadline - clock)
    return Step(status=rolling, delete=doomed, progress=progress, wake=wake)
