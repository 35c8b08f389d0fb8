"""Replaying a trace: the operator on a simulated cluster, driven by the trace, judged as it goes.

``replay(trace)`` starts a simulated cluster with the trace's world settings, the operator with the
trace's configuration, and one seed for everything (``seed``, else the header's). It then walks
the trace in cluster time: at each record's ``at`` (ties in file order) it applies the record
(``dgd.sim.steps``) or, for an ``expect``, decides it or opens it until its ``by``; a lasting fault
ends at its ``until`` (or ``at + duration``). After every step the invariants judge what changed.
The replay ends at the last record's time (or deadline). If the trace injected faults, bounded
liveness is judged then: every DGD must be stable by the end, having settled after the last fault
ended. Everything is written down in a ``Report``.

On the virtual clock (``run_replay``, or any loop from ``dgd.sim.clock``) an hour of cluster time
takes seconds, and the same trace and seed give the same report, byte for byte. ``realtime=True``
says the caller runs it on a real-time loop on purpose (a demo).

``bug``, if given, is called once before the simulated cluster starts, on the replay's loop: a test
hook to break the operator on purpose (monkeypatch something) and see the replay catch it; the
replay does not undo it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import heapq
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import ParamSpec

import anyio
import msgspec

from dgd.cluster.resources import DGD
from dgd.messages.base import JSONObject
from dgd.messages.trace import ApiFault, Expect, Kill, Poison, Record, StaleReads, Trace, write_trace
from dgd.runtime import CountingMetrics
from dgd.sim.clock import backend_options, is_virtual
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.expectations import Expectations
from dgd.sim.invariants import NAMES, Invariants
from dgd.sim.journal import Journal, ReconcileCounter
from dgd.sim.kinds import kind_of
from dgd.sim.operator import simulated_operator
from dgd.sim.report import Counts, DGDOutcome, InvariantResult, Report, Step
from dgd.sim.steps import FAULTS, WORLD_EVENTS, apply_step
from dgd.sim.trace_io import line_of, operator_config, world_settings
from dgd.sim.trace_recorder import TraceRecorder

#: What happens at one moment: (time, order among simultaneous things, line, what).
_Moment = tuple[float, int, int, Callable[[], None] | Record]
#: Simultaneous things happen in this order: records (in file order), fault ends, deadlines.
_RECORD, _END, _DEADLINE = 0, 1, 2

#: Told the cluster time and the trace's end after every step.
Progress = Callable[[float, float], None]

#: The arguments of ``replay``, which ``run_replay`` takes as they are.
_Options = ParamSpec("_Options")


async def replay(
    trace: Trace,
    *,
    seed: int | None = None,
    realtime: bool = False,
    record: Path | None = None,
    progress: Progress | None = None,
    bug: Callable[[], None] | None = None,
) -> Report:
    """Replay ``trace`` (see the module); ``record``: also write what happened there, as a trace;
    ``progress(now, end)``: told the cluster time after every step."""
    if not realtime and not is_virtual():
        raise RuntimeError(
            "a replay runs on the virtual clock (run_replay): pass realtime=True to run it in real time"
        )
    run_seed = trace.header.seed if seed is None else seed
    settings = world_settings(trace.header)
    namespaces = sorted({*settings.namespaces, *_namespaces(trace)})
    settings = msgspec.structs.replace(settings, namespaces=tuple(namespaces))
    config = operator_config(trace.header)
    if bug is not None:
        bug()
    metrics, reconciles = CountingMetrics(), ReconcileCounter()
    sim = simulated_operator(settings, seed=run_seed, config=config, metrics=metrics, reconciles=reconciles)
    journal = Journal(sim)
    async with sim, anyio.create_task_group() as group:
        invariants = Invariants(sim)
        expectations = Expectations(
            sim, [(line_of(i), r) for i, r in enumerate(trace.records) if isinstance(r, Expect)]
        )
        recorder = None
        if record is not None:
            description = f"recorded from {trace.header.description or 'a replay'}"
            recorder = TraceRecorder(
                sim, seed=run_seed, settings=settings, config=config, description=description
            )
            await recorder.start(group)
        await journal.start(group)
        await invariants.start(group)
        await expectations.start(group)
        steps = await _walk(trace, sim, invariants, expectations, recorder, progress)
        invariants.check()
        faulted = [r for r in trace.records if isinstance(r, FAULTS)]
        if faulted:
            since = max(_fault_end(r) for r in faulted)
            invariants.liveness(since, max(sim.elapsed() - since, 0.0), broken_on_purpose(trace))
        invariants.contained(metrics.restarts, killed=any(isinstance(r, Kill) for r in trace.records))
        dgds = await _final_dgds(sim)
        if recorder is not None and record is not None:
            record.write_bytes(write_trace(recorder.trace(dgds)))
        report = Report(
            description=trace.header.description,
            seed=run_seed,
            virtual_time=round(sim.elapsed(), 6),
            dgds=[_outcome(dgd) for dgd in dgds],
            events=list(journal.events),
            expectations=expectations.results,
            invariants=_invariant_results(invariants),
            steps=steps,
            timeline=list(journal.timeline),
            counts=Counts(
                reconciles=dict(sorted(reconciles.counts.items())),
                api_calls=journal.api_calls,
                actor_restarts=dict(sorted(metrics.restarts.items())),
                records=len(trace.records),
                writes=int(sim.cluster.resource_version),
            ),
        )
        group.cancel_scope.cancel()
    return report


def _on_a_fresh_loop(replay: Callable[_Options, Awaitable[Report]]) -> Callable[_Options, Report]:
    """``replay``, run to its end on a fresh event loop: the virtual clock, or real time when it is
    called with ``realtime=True``."""

    def run(*args: _Options.args, **kwargs: _Options.kwargs) -> Report:
        options = backend_options(virtual=not kwargs.get("realtime", False))
        with _fewer_collections():
            return anyio.run(
                functools.partial(replay, *args, **kwargs), backend="asyncio", backend_options=options
            )

    return run


#: While a replay runs, the garbage collector's youngest generation is collected after this many
#: more container allocations than deallocations (Python's default: 700).
YOUNG_COLLECTION_THRESHOLD = 10_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect cyclic garbage less often while a replay runs. Reading an object of the simulated
    cluster decodes hundreds of dicts and lists at once, nearly all freed again by reference counting
    moments later; at Python's default threshold each such burst set off a collection of the youngest
    generation (1,500 in a replay of ``bench/replay.py --records 2000``, and a dozen full ones), which
    found almost nothing to free. Cycles are still collected; the previous thresholds come back after."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_COLLECTION_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


#: ``replay`` on a fresh event loop (same arguments): the virtual clock, or real time with ``realtime``.
run_replay = _on_a_fresh_loop(replay)


def end_of(trace: Trace) -> float:
    """When the replay of ``trace`` ends: its last record's time or deadline (cluster seconds)."""
    ends = [0.0]
    for record in trace.records:
        ends.append(record.at)
        if isinstance(record, Expect) and record.by is not None:
            ends.append(record.by)
        ends.append(_fault_end(record) if isinstance(record, FAULTS) else record.at)
    return max(ends)


# The walk.


async def _walk(
    trace: Trace,
    sim: SimulatedCluster,
    invariants: Invariants,
    expectations: Expectations,
    recorder: TraceRecorder | None,
    progress: Progress | None,
) -> list[Step]:
    """Apply every record at its time; returns the steps taken (expectations aside)."""
    end = end_of(trace)
    moments: list[_Moment] = []
    for index, record in enumerate(trace.records):
        moments.append((record.at, _RECORD, line_of(index), record))
        if isinstance(record, Expect) and record.by is not None:
            moments.append((record.by, _DEADLINE, line_of(index), _deadline(expectations, line_of(index))))
    heapq.heapify(moments)
    steps: list[Step] = []
    user = sim.cluster.client()  # the trace's kubectl: no fault rules
    while moments:
        at, _, line, what = heapq.heappop(moments)
        wait = at - sim.elapsed()
        if wait > 0:
            await anyio.sleep(wait)
        if callable(what):
            what()
        elif isinstance(what, Expect):
            expectations.begin(line, what)
        else:
            if recorder is not None and isinstance(what, (*WORLD_EVENTS, *FAULTS)):
                # Not a stored change of the user's: recorded as it is, its writes not.
                recorder.note(what)
                with recorder.muted():
                    applied = await apply_step(what, sim, user)
            else:
                applied = await apply_step(what, sim, user)
            kind = str(what.__struct_config__.tag)
            steps.append(Step(round(at, 6), line, kind, applied.effect, isinstance(what, FAULTS)))
            if applied.end is not None and applied.ends_at is not None:
                heapq.heappush(moments, (applied.ends_at, _END, line, applied.end))
        invariants.check()
        if progress is not None:
            progress(sim.elapsed(), end)
    return steps


def _deadline(expectations: Expectations, line: int) -> Callable[[], None]:
    return lambda: expectations.deadline(line)


def broken_on_purpose(trace: Trace) -> frozenset[str]:
    """The names of the DGDs the trace's faults break for ever: stored so that the operator cannot
    read them (``poison``), or with a reconcile that always raises (an endless ``Bug`` fault on one
    DGD's requests)."""
    poisoned = {r.name for r in trace.records if isinstance(r, Poison) and r.resource == str(DGD)}
    crashing = {
        r.name
        for r in trace.records
        if isinstance(r, ApiFault) and r.error == "Bug" and r.until is None and r.name
        and r.resource in (str(DGD), "*")
    }  # fmt: skip
    names = poisoned | crashing
    return frozenset(names)


def _fault_end(record: Record) -> float:
    """When a fault stops acting (its own time for an instant one)."""
    if isinstance(record, ApiFault) and record.until is not None:
        return record.until
    if isinstance(record, StaleReads):
        return record.at + record.duration
    return record.at


# The report.


async def _final_dgds(sim: SimulatedCluster) -> list[JSONObject]:
    listed = (await sim.cluster.client().list(DGD.as_raw())).items
    return sorted(listed, key=lambda d: (str(d["metadata"].get("namespace")), str(d["metadata"].get("name"))))


def _outcome(dgd: JSONObject) -> DGDOutcome:
    metadata = dgd["metadata"]
    return DGDOutcome(
        namespace=str(metadata.get("namespace")),
        name=str(metadata.get("name")),
        generation=int(metadata.get("generation") or 0),
        status=dgd.get("status") or {},
    )


def _invariant_results(invariants: Invariants) -> list[InvariantResult]:
    results: list[InvariantResult] = []
    for name in NAMES:
        broken = [violation for violation in invariants.violations if violation.invariant == name]
        results.append(InvariantResult(name, not broken, broken))
    return results


def _namespaces(trace: Trace) -> set[str]:
    """Every namespace the trace's records name (they must exist before anything is applied)."""
    found: set[str] = set()
    for record in trace.records:
        obj = getattr(record, "object", None)
        if isinstance(obj, dict):
            resource = kind_of(obj)
            if resource is not None and resource.namespaced:
                found.add(str((obj.get("metadata") or {}).get("namespace") or "default"))
        target = getattr(record, "target", None)
        if target is not None and target.namespace:
            found.add(target.namespace)
    return found
