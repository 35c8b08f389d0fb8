"""Chaos campaigns: many fault schedules over the example DGDs, replayed, judged, and shrunk when broken.

For each seed of a campaign:

1. a workload (``chaos_workload``): a few example graphs on both pathways, applied, then rolled out
   and scaled while the faults run;
2. its fault-free run, which records every write point of the operator (``chaos_writes``) — and
   must itself break nothing (it is reported as plan ``none``);
3. the schedules (``chaos_schedule``) of each plan (``chaos_plans``): one per distinct write point for
   ``crash-after-write``, one each for ``unobserved-state``, ``stale-state`` and ``random``.

Each schedule is a trace replayed by the replay engine on the virtual clock, which checks the
invariants after every step; bounded liveness is each schedule's expectation that every graph is
``successful`` within ``BOUND`` cluster seconds of its last fault (a failed one counts as
``bounded-liveness``). A crash after a write is made by a tap on the operator's client, since no
trace record can say "right after that write" yet.

Seeds are independent of one another: ``jobs`` worker processes may run them (fresh interpreters,
each replaced after ``RECYCLE`` seeds; a ``bug`` must then be a module-level function, and a
monkeypatch of the caller's process does not reach them), and the report is the same, byte for
byte, whatever ``jobs`` is. Then, for each invariant broken, the first schedule that broke it (in
seed order) is shrunk (``chaos_shrink``) and written as a trace file, which is replayed once more,
as ``dgd-operator sim replay`` would, to say whether it reproduces the violation alone.

The report holds no wall-clock value: counts, cluster time, names and paths only. The event-loop
callbacks that ran over 100 ms of wall time (``chaos_stalls``) are told apart, to ``stalled``.
"""

from __future__ import annotations

import logging
import multiprocessing
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path

import msgspec

from dgd.messages.trace import write_trace
from dgd.sim.chaos_plans import GENERATORS, crash_points
from dgd.sim.chaos_schedule import PLANS, Fault, Plan, Schedule
from dgd.sim.chaos_shrink import shrink
from dgd.sim.chaos_stalls import Stall, watching_stalls
from dgd.sim.chaos_workload import Example, Workload, workload
from dgd.sim.chaos_writes import CrashAfter, Write, WriteLog, tapped
from dgd.sim.invariants import NAMES
from dgd.sim.replay import run_replay
from dgd.sim.report import Report
from dgd.sim.trace_io import read_trace

#: What a failed liveness expectation counts as.
LIVENESS = "bounded-liveness"
#: Failure lines kept per failing schedule in the report.
KEPT_FAILURES = 3
#: Seeds a worker process runs before it is replaced by a fresh one.
RECYCLE = 10

Bug = Callable[[], None]


class Campaign(msgspec.Struct, frozen=True):
    """What to run: ``seeds`` seeds from ``first_seed``, ``dgds`` graphs each, the ``plans``."""

    examples: tuple[Example, ...]
    seeds: int = 20
    first_seed: int = 0
    dgds: int = 3
    plans: tuple[Plan, ...] = PLANS


class Outcome(msgspec.Struct, frozen=True):
    """What one schedule's replay found: the invariants it broke (``NAMES`` order) and why."""

    schedule: str
    plan: str
    faults: int
    virtual_time: float
    broken: tuple[str, ...]
    failures: tuple[str, ...]


class SeedResult(msgspec.Struct, frozen=True):
    """One seed's schedules: their outcomes in order, the write points its fault-free run reached,
    the fault records by kind, the schedules that broke something (to shrink), and the event-loop
    stalls its replays had (wall time: never in the report)."""

    seed: int
    outcomes: tuple[Outcome, ...]
    points: tuple[str, ...]
    faults: dict[str, int]
    failing: tuple[Schedule, ...]
    stalls: tuple[Stall, ...] = ()


class Failure(msgspec.Struct, frozen=True, rename="camel"):
    """A schedule that broke something."""

    schedule: str
    invariants: list[str]
    failures: list[str]


class Shrunk(msgspec.Struct, frozen=True, rename="camel"):
    """The shrunk trace of the first schedule that broke ``invariant``: where it was written, its size,
    and whether replaying the file alone (``sim replay``) breaks the invariant again."""

    invariant: str
    schedule: str
    path: str
    records: int
    faults: int
    graphs: int
    replays: int
    reproduces: bool
    failure: str


class CampaignReport(msgspec.Struct, frozen=True, rename="camel"):
    """A whole campaign (see the module): what ran, what broke, what it shrank to."""

    examples: list[str]
    first_seed: int
    seeds: int
    dgds: int
    plans: list[str]
    schedules: int
    by_plan: dict[str, int]
    faults: dict[str, int]
    write_points: int
    virtual_time: float
    violations: dict[str, int]
    failures: list[Failure]
    shrunk: list[Shrunk]

    @property
    def ok(self) -> bool:
        return not self.failures


def run_campaign(
    campaign: Campaign,
    *,
    shrink_to: Callable[[str], Path],
    jobs: int = 1,
    bug: Bug | None = None,
    progress: Callable[[int, int], None] | None = None,
    stalled: Callable[[Stall], None] | None = None,
) -> CampaignReport:
    """Run ``campaign`` (see the module); the shrunk trace of a broken invariant goes to
    ``shrink_to(invariant)``. ``bug`` breaks the operator before each replay (tests; it must be a
    module-level function when ``jobs`` > 1); ``progress(done, total)`` hears of each seed done;
    ``stalled`` of each event-loop callback of a seed's replays that ran over ``chaos_stalls.SLOW``
    seconds of wall time, in seed order."""
    seeds = list(range(campaign.first_seed, campaign.first_seed + campaign.seeds))
    results: list[SeedResult] = []
    for result in _seeds(campaign, seeds, jobs, bug):
        results.append(result)
        if stalled is not None:
            for stall in result.stalls:
                stalled(stall)
        if progress is not None:
            progress(len(results), len(seeds))
    outcomes = [outcome for result in results for outcome in result.outcomes]
    failing = [schedule for result in results for schedule in result.failing]
    # The first schedule to break each invariant is shrunk, in the order they were broken.
    firsts: dict[str, Schedule] = {}
    for outcome, schedule in zip([o for o in outcomes if o.broken], failing, strict=True):
        for invariant in outcome.broken:
            firsts.setdefault(invariant, schedule)
    shrunk = [
        _shrink(schedule, invariant, shrink_to(invariant), bug) for invariant, schedule in firsts.items()
    ]
    faults: Counter[str] = Counter()
    for result in results:
        faults.update(result.faults)
    return CampaignReport(
        examples=[example.source for example in campaign.examples],
        first_seed=campaign.first_seed,
        seeds=campaign.seeds,
        dgds=campaign.dgds,
        plans=list(campaign.plans),
        schedules=len(outcomes),
        by_plan=dict(Counter(outcome.plan for outcome in outcomes)),
        faults=dict(sorted(faults.items())),
        write_points=len({point for result in results for point in result.points}),
        virtual_time=round(sum(outcome.virtual_time for outcome in outcomes), 3),
        violations={name: sum(1 for o in outcomes if name in o.broken) for name in NAMES},
        failures=[Failure(o.schedule, list(o.broken), list(o.failures)) for o in outcomes if o.broken],
        shrunk=shrunk,
    )


def encode_campaign(report: CampaignReport) -> bytes:
    """The report as indented JSON, the same bytes for the same campaign."""
    return msgspec.json.format(msgspec.json.encode(report, order="deterministic"), indent=2) + b"\n"


def summary(report: CampaignReport) -> str:
    """The report for people: what ran, what broke, where the shrunk traces are."""
    plans = ", ".join(f"{plan} {n}" for plan, n in report.by_plan.items())
    faults = ", ".join(f"{kind} {n}" for kind, n in report.faults.items()) or "none"
    lines = [
        f"chaos: {_count(report.seeds, 'seed')} from {report.first_seed}, {_count(report.dgds, 'DGD')} "
        f"each, over {_count(len(report.examples), 'example')}",
        f"schedules: {report.schedules} ({plans})",
        f"faults: {sum(report.faults.values())} ({faults}); {report.write_points} distinct write points",
        f"cluster time: {report.virtual_time:,.0f}s",
    ]
    broken = {name: n for name, n in report.violations.items() if n}
    if not broken:
        lines.append("violations: none")
        return "\n".join(lines) + "\n"
    lines.append(f"violations: {_count(len(report.failures), 'schedule')} broke an invariant")
    for name, n in broken.items():
        lines.append(f"  {name}: {_count(n, 'schedule')}")
    for shrunk in report.shrunk:
        lines.append(
            f"shrunk {shrunk.invariant}: {shrunk.schedule} -> {shrunk.records} records "
            f"({_count(shrunk.faults, 'fault')}, {_count(shrunk.graphs, 'DGD')}) in {shrunk.path}"
        )
        lines.append(f"  {shrunk.failure}")
        if shrunk.reproduces:
            lines.append(f"  reproduce: dgd-operator sim replay {shrunk.path}")
        else:
            lines.append("  the trace alone does not reproduce it: it needs the crash right after the write")
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# One seed.


def run_seed(campaign: Campaign, seed: int, bug: Bug | None = None) -> SeedResult:
    """Every schedule of ``seed`` (see the module), in order: the fault-free run first."""
    work = workload(campaign.examples, seed=seed, dgds=campaign.dgds)
    base = Schedule(seed, "none", 0, work.graphs, work.actions, ())
    log = WriteLog()
    with watching_stalls() as watch:
        with tapped(log), watch.during(base.name):
            outcome = _outcome(base, run_replay(base.trace(), bug=bug))
        schedules = list(_schedules(campaign.plans, base, work, log.writes))
        outcomes = [outcome]
        for schedule in schedules:
            with watch.during(schedule.name):
                outcomes.append(_outcome(schedule, replay_schedule(schedule, bug=bug)))
    faults: Counter[str] = Counter()
    for schedule in schedules:
        faults.update(_kind(fault) for fault in schedule.faults)
    failing = [s for s, o in zip([base, *schedules], outcomes, strict=True) if o.broken]
    return SeedResult(
        seed,
        tuple(outcomes),
        tuple(sorted({write.point.described for write in log.writes})),
        dict(faults),
        tuple(failing),
        tuple(watch.stalls),
    )


def replay_schedule(schedule: Schedule, *, bug: Bug | None = None) -> Report:
    """Replay ``schedule``, making its crash after a write (if any) with a tap."""
    crash = schedule.crash
    tap = tapped(CrashAfter(crash.point, crash.nth)) if crash is not None else nullcontext()
    with tap:
        return run_replay(schedule.trace(crash_as_kill=False), bug=bug)


def broken(report: Report) -> tuple[str, ...]:
    """The invariants ``report`` shows broken, in ``NAMES`` order (a failed expectation: liveness)."""
    names = {result.name for result in report.invariants if not result.ok}
    if any(not expectation.ok for expectation in report.expectations):
        names.add(LIVENESS)
    return tuple(name for name in NAMES if name in names)


def _schedules(
    plans: Sequence[Plan], base: Schedule, work: Workload, writes: list[Write]
) -> Iterator[Schedule]:
    for plan in plans:
        if plan == "crash-after-write":
            for number, crash in enumerate(crash_points(base.seed, writes)):
                yield msgspec.structs.replace(base, plan=plan, number=number, faults=(crash,))
        else:
            faults = GENERATORS[plan](base.seed, work, writes)
            yield msgspec.structs.replace(base, plan=plan, number=0, faults=tuple(faults))


def _outcome(schedule: Schedule, report: Report) -> Outcome:
    return Outcome(
        schedule.name,
        schedule.plan,
        len(schedule.faults),
        report.virtual_time,
        broken(report),
        tuple(report.failures[:KEPT_FAILURES]),
    )


def _kind(fault: Fault) -> str:
    return str(type(fault).__struct_config__.tag)


def _seeds(campaign: Campaign, seeds: list[int], jobs: int, bug: Bug | None) -> Iterator[SeedResult]:
    if jobs <= 1 or len(seeds) <= 1:
        for seed in seeds:
            yield run_seed(campaign, seed, bug)
        return
    # Fresh workers, each replaced after ``RECYCLE`` seeds: whatever a simulation leaves behind in a
    # process (a leak of the code under test) cannot pile up over thousands of them. They log as this
    # process does.
    context = multiprocessing.get_context("spawn")
    level = logging.getLogger().getEffectiveLevel()
    with context.Pool(jobs, initializer=_log_at, initargs=(level,), maxtasksperchild=RECYCLE) as pool:
        yield from pool.imap(_run_seed, [(campaign, seed, bug) for seed in seeds])


def _run_seed(job: tuple[Campaign, int, Bug | None]) -> SeedResult:
    return run_seed(*job)


def _log_at(level: int) -> None:
    """A worker's logging: to stderr, from ``level`` on, as the command line's."""
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


# Shrinking.


def _shrink(schedule: Schedule, invariant: str, path: Path, bug: Bug | None) -> Shrunk:
    """Shrink ``schedule`` to what still breaks ``invariant``, write it to ``path``, replay the file."""
    replays = 0

    def fails(candidate: Schedule) -> bool:
        nonlocal replays
        replays += 1
        return invariant in broken(replay_schedule(candidate, bug=bug))

    small = shrink(schedule, fails)
    trace = small.trace()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(write_trace(trace))
    # As ``sim replay`` would: the file alone, read back.
    again = run_replay(read_trace(path.read_bytes()), bug=bug)
    reproduces = invariant in broken(again)
    if not reproduces:
        again = replay_schedule(small, bug=bug)
    failure = next((line for line in again.failures if _names(line, invariant)), "")
    return Shrunk(
        invariant=invariant,
        schedule=schedule.name,
        path=str(path),
        records=len(trace.records),
        faults=len(small.faults),
        graphs=len(small.graphs),
        replays=replays,
        reproduces=reproduces,
        failure=failure,
    )


def _names(line: str, invariant: str) -> bool:
    if invariant == LIVENESS and line.startswith("expectation failed"):
        return True
    return f"invariant {invariant} " in line
