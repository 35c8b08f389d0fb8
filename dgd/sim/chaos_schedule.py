"""A chaos schedule: one run to make — a workload, the faults of one plan, and bounded liveness.

A ``Schedule`` is a workload (the graphs and the user's actions on them), the faults of one plan
(``Plan``; the faults are drawn by the plans of ``chaos_plans``), and the expectation that every graph
is ``successful`` within ``BOUND`` seconds of the last fault or action (bounded liveness). Its
``trace()`` is an ordinary trace.

A ``Fault`` is a trace record that injects one (a kill, an API error window, a poison object, a watch
ended or expired, stale reads), or a ``CrashAfterWrite``, which no trace record can say: the replay
makes it with a tap on the operator's client, and ``trace()`` writes it as a ``Kill`` at its time.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from dgd.messages.trace import (
    VERSION,
    ApiFault,
    Apply,
    Expect,
    Header,
    Kill,
    Patch,
    Poison,
    Record,
    StaleReads,
    Trace,
    WatchDrop,
    WatchExpire,
)
from dgd.sim.chaos_workload import Graph
from dgd.sim.chaos_writes import WritePoint

Plan = Literal["crash-after-write", "unobserved-state", "stale-state", "random", "poison", "crash-loop"]
PLANS: tuple[Plan, ...] = (
    "crash-after-write",
    "unobserved-state",
    "stale-state",
    "random",
    "poison",
    "crash-loop",
)

#: Bounded liveness: every graph is ``successful`` within this many cluster seconds of the last
#: fault or action.
BOUND = 600.0


class CrashAfterWrite(msgspec.Struct, frozen=True, tag="crash_after_write"):
    """Kill ``point.actor`` right after its ``nth`` write at ``point`` (``at``: when that write was
    made in the fault-free run). A trace says it as a ``Kill`` of that actor at that time."""

    point: WritePoint
    nth: int
    at: float

    def record(self) -> Kill:
        return Kill(at=self.at, path=self.point.actor)

    def __str__(self) -> str:
        return f"kill right after write #{self.nth} at {self.point}"


Fault = Kill | ApiFault | Poison | WatchDrop | WatchExpire | StaleReads | CrashAfterWrite


class Schedule(msgspec.Struct, frozen=True):
    """One run of a campaign: seed, plan and number name it; graphs, actions and faults make it."""

    seed: int
    plan: Plan | Literal["none"]
    number: int
    graphs: tuple[Graph, ...]
    actions: tuple[Apply | Patch, ...]
    faults: tuple[Fault, ...]
    #: Whether the trace expects every graph ``successful`` within ``BOUND`` of the last fault.
    liveness: bool = True

    @property
    def name(self) -> str:
        return f"seed {self.seed} {self.plan} #{self.number}"

    @property
    def crash(self) -> CrashAfterWrite | None:
        """The crash-after-write fault, which the replay cannot make from a record (at most one)."""
        return next((f for f in self.faults if isinstance(f, CrashAfterWrite)), None)

    def quiet_from(self) -> float:
        """When the last fault or action happens (the liveness bound counts from here)."""
        ends = [action.at for action in self.actions] + [_end(fault) for fault in self.faults]
        return max(ends, default=0.0)

    def expectations(self) -> list[Expect]:
        """Bounded liveness: each applied graph is ``successful`` within ``BOUND`` of quiet."""
        if not self.liveness:
            return []
        quiet = self.quiet_from()
        applied = {str(a.object["metadata"]["name"]) for a in self.actions if isinstance(a, Apply)}
        # A graph whose reconcile a fault breaks for ever is not expected to converge.
        applied -= {f.name for f in self.faults if isinstance(f, ApiFault) and f.error == "Bug" and f.name}
        return [
            Expect(
                at=quiet,
                by=round(quiet + BOUND, 1),
                target=graph.ref,
                state="successful",
                name=f"{graph.ref.name} is successful within {BOUND:g}s of the last fault",
            )
            for graph in self.graphs
            if graph.ref.name in applied
        ]

    def trace(self, *, crash_as_kill: bool = True) -> Trace:
        """The schedule as a trace: actions, faults and expectations in time order. The crash after
        a write becomes a ``Kill`` at its time, or (``crash_as_kill=False``) is left out, for a
        replay that makes the crash itself."""
        faults: list[Record] = []
        for fault in self.faults:
            if isinstance(fault, CrashAfterWrite):
                if crash_as_kill:
                    faults.append(fault.record())
            else:
                faults.append(fault)
        records: list[Record] = [*self.actions, *faults, *self.expectations()]
        records.sort(key=lambda record: record.at)
        description = f"dgd-operator chaos: {self.name}"
        if self.crash is not None:
            description += f"; {self.crash}"
        return Trace(Header(version=VERSION, seed=self.seed, description=description), tuple(records))


def _end(fault: Fault) -> float:
    """When a fault stops acting."""
    if isinstance(fault, ApiFault):
        return fault.until if fault.until is not None else fault.at
    if isinstance(fault, StaleReads):
        return fault.at + fault.duration
    return fault.at
