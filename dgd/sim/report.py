"""What a replay found: a ``Report`` value, its JSON encoding, and a summary for people.

The report holds no wall-clock value: every time in it is cluster time, in seconds since the trace
started (the virtual clock), and everything in it is listed in an order that depends on nothing
but the run (resourceVersion, time, then names). So the same trace and seed give the same bytes from
``encode_report``. Wall time belongs on stderr or in a timings file, never here.
"""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.sim.invariants_judge import Violation


class DGDOutcome(msgspec.Struct, frozen=True):
    """A DGD as it ended: its generation and its status (raw JSON, as stored)."""

    namespace: str
    name: str
    generation: int
    status: dict[str, Any]


class EventEntry(msgspec.Struct, frozen=True):
    """One recorded Event: when, about what, and what it said."""

    at: float
    namespace: str
    regarding: str  #: ``Kind name`` of the object it is about
    type: str
    reason: str
    note: str


class ExpectationResult(msgspec.Struct, frozen=True):
    """One ``expect`` record: what it checked, and whether (and when) it held."""

    line: int
    name: str
    target: str  #: ``Kind namespace/name``
    check: str
    at: float
    by: float | None
    ok: bool
    met_at: float | None  #: when it held (``None``: it did not)
    observed: str  #: what was seen when it was decided


class InvariantResult(msgspec.Struct, frozen=True):
    """One invariant and every violation of it (none: it held)."""

    name: str
    ok: bool
    violations: list[Violation]


class Step(msgspec.Struct, frozen=True):
    """One trace record applied (expectations aside), and what it did to the cluster."""

    at: float
    line: int
    kind: str
    effect: str
    fault: bool = False


class StateChange(msgspec.Struct, frozen=True):
    """A DGD's state (and Ready reason) from ``at`` on, for the timeline."""

    at: float
    namespace: str
    name: str
    state: str
    reason: str


class Counts(msgspec.Struct, frozen=True):
    """How much happened: reconciles by controller, the operator's API calls by verb, actor restarts
    by path, the trace's records and the API server's writes (its final resourceVersion)."""

    reconciles: dict[str, int]
    api_calls: dict[str, int]
    actor_restarts: dict[str, int]
    records: int
    writes: int


class Report(msgspec.Struct, frozen=True):
    """Everything a replay found (see the module). ``ok``: every expectation held, no invariant broke."""

    description: str
    seed: int
    virtual_time: float
    dgds: list[DGDOutcome]
    events: list[EventEntry]
    expectations: list[ExpectationResult]
    invariants: list[InvariantResult]
    steps: list[Step]
    timeline: list[StateChange]
    counts: Counts

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def failures(self) -> list[str]:
        """One line per failed expectation and per invariant violation, in report order."""
        out = [
            f"expectation failed (line {e.line}{_label(e.name)}): {e.target}: expected {e.check} "
            f"{_when(e)}; {e.observed}"
            for e in self.expectations
            if not e.ok
        ]
        for result in self.invariants:
            out += [f"invariant {v.invariant} broken at t={v.at:g}s: {v.detail}" for v in result.violations]
        return out


_ENCODER = msgspec.json.Encoder(order="deterministic")


def encode_report(report: Report) -> bytes:
    """The report as indented JSON: the same report, the same bytes."""
    return msgspec.json.format(_ENCODER.encode(report), indent=2) + b"\n"


def decode_report(data: bytes) -> Report:
    """A report read back from ``encode_report``'s bytes."""
    return msgspec.json.decode(data, type=Report)


def summary(report: Report) -> str:
    """The report for people: a table of DGDs, expectations, invariants and counts, then failures."""
    lines: list[str] = []
    title = report.description or "trace"
    lines.append(f"{title}: {report.virtual_time:g}s of cluster time, seed {report.seed}")
    lines.append("")
    rows = [["DGD", "STATE", "READY", "GENERATION"]]
    for dgd in report.dgds:
        ready: dict[str, Any] = next(
            (c for c in dgd.status.get("conditions") or () if c.get("type") == "Ready"), {}
        )
        observed = dgd.status.get("observedGeneration")
        rows.append(
            [
                f"{dgd.namespace}/{dgd.name}",
                str(dgd.status.get("state") or "initializing"),
                f"{ready.get('status', '-')} {ready.get('reason', '')}".strip(),
                f"{observed}/{dgd.generation}",
            ]
        )
    lines += _table(rows)
    if report.expectations:
        lines.append("")
        rows = [["EXPECTATION", "LINE", "RESULT", "WHEN"]]
        for e in report.expectations:
            label = e.name or f"{e.target}: {e.check}"
            when = f"t={e.met_at:g}s" if e.met_at is not None else _when(e)
            rows.append([label, str(e.line), "pass" if e.ok else "FAIL", when])
        lines += _table(rows)
    lines.append("")
    rows = [["INVARIANT", "RESULT"]]
    for result in report.invariants:
        rows.append([result.name, "holds" if result.ok else f"BROKEN ({len(result.violations)})"])
    lines += _table(rows)
    counts = report.counts
    lines.append("")
    reconciles = sum(counts.reconciles.values())
    calls = ", ".join(f"{verb} {n}" for verb, n in sorted(counts.api_calls.items()))
    faults = sum(1 for step in report.steps if step.fault)
    lines.append(
        f"{len(report.events)} events, {reconciles} reconciles, {sum(counts.api_calls.values())} API calls "
        f"({calls}), {sum(counts.actor_restarts.values())} actor restarts, {faults} faults, "
        f"{counts.writes} writes"
    )
    failures = report.failures
    lines.append("")
    lines.append("OK: every expectation held and no invariant broke" if not failures else "FAILED:")
    lines += [f"  {failure}" for failure in failures]
    return "\n".join(lines) + "\n"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _label(name: str) -> str:
    return f", {name!r}" if name else ""


def _when(e: ExpectationResult) -> str:
    return f"by t={e.by:g}s" if e.by is not None else f"at t={e.at:g}s"
