"""``dgd-operator sim replay TRACE``: replay an event trace on the simulated cluster and judge it.

The trace (``docs/traces.md``; ``-`` reads standard input) is replayed on the virtual clock — an
hour of cluster time in seconds — or in real time with ``--realtime``. Progress goes to stderr (a
bar on a terminal, a line every tenth of the trace otherwise); then the summary table is printed:
each DGD's final state, each expectation, each invariant, and what the run counted. ``--report``
writes the whole report as JSON (the same trace and seed give the same bytes), ``--timeline`` an
SVG picture of each DGD's state over time with the faults marked, ``--record`` what happened as a
new trace, ``--timings`` the wall-clock figures (which the report never holds).

Exit 0 when every expectation holds and no invariant breaks, 1 otherwise (each failure is named on
stderr) or when the simulated cluster refuses the trace, 2 for usage errors and traces that cannot be
read (missing, not UTF-8, not a trace this release reads: the line is named), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import msgspec

from dgd.cli.exits import EXIT_FAILED, EXIT_OK, Invalid, cluster_problem, log_to_stderr, wire
from dgd.cli.inputs import BadFile, os_problem, read_text, shown, writable, write_output
from dgd.cluster.errors import ClusterError
from dgd.domain.gates import GateError
from dgd.messages.trace import Trace
from dgd.sim.replay import end_of, run_replay
from dgd.sim.report import encode_report, summary
from dgd.sim.timeline import render_timeline
from dgd.sim.trace_io import TraceError, read_trace

#: The files ``sim replay`` may write, by flag.
OUTPUTS = ("--report", "--timeline", "--timings", "--record")


#: ``sim replay --help``.
REPLAY = (
    "Replay the trace (its format: docs/traces.md; '-' reads standard input) on the virtual clock, an "
    "hour of cluster time in seconds, or in real time with --realtime. Progress goes to stderr (a bar "
    "on a terminal, a line every tenth of the trace otherwise); then the summary table is printed: each "
    "DGD's final state, each expectation, each invariant, and what the run counted. --report writes the "
    "whole report as JSON (the same trace and seed give the same bytes), --timeline an SVG picture of "
    "each DGD's state over time with the faults marked, --record what happened as a new trace, "
    "--timings the wall-clock figures (which the report never holds)."
)


def add_command(sim_commands: Any) -> None:
    """Add ``replay`` to the ``sim`` subcommands."""
    replay = sim_commands.add_parser(
        "replay",
        help="replay an event trace on the simulated cluster and check its expectations and invariants",
        description=REPLAY,
    )
    replay.add_argument("trace", metavar="TRACE", help="trace file (JSON Lines), or - for standard input")
    replay.add_argument("--seed", type=int, metavar="N", help="seed of the run (default: the trace's)")
    replay.add_argument("--report", type=Path, metavar="OUT.json", help="write the report as JSON")
    replay.add_argument("--timeline", type=Path, metavar="OUT.svg", help="draw the DGDs' states over time")
    replay.add_argument("--timings", type=Path, metavar="FILE", help="write wall-clock timings as JSON")
    replay.add_argument("--record", type=Path, metavar="FILE", help="record what happened as a new trace")
    replay.add_argument("--realtime", action="store_true", help="run in real time instead of virtual time")
    wire(
        replay,
        _replay,
        ok="every expectation held and no invariant broke",
        failed="an expectation failed or an invariant broke",
    )


class Timings(msgspec.Struct, frozen=True):
    """What ``--timings`` writes: the wall-clock side of a replay."""

    wall_seconds: float
    virtual_seconds: float
    speedup: float
    records: int
    records_per_second: float


def _replay(args: argparse.Namespace) -> int:
    log_to_stderr(logging.ERROR)
    trace = _read(args.trace)
    for flag in OUTPUTS:
        writable(getattr(args, flag[2:]), flag)
    progress = _Progress(sys.stderr, end_of(trace))
    started = time.perf_counter()
    try:
        report = run_replay(
            trace, seed=args.seed, realtime=args.realtime, record=args.record, progress=progress
        )
    except GateError as exc:
        raise Invalid(f"{shown(args.trace)}: the operator cannot start: {exc}") from None
    except ClusterError as exc:
        raise Invalid(f"the simulated cluster refused the trace: {cluster_problem(exc)}") from None
    except OSError as exc:
        raise BadFile(f"--record {args.record}", f"cannot be written: {os_problem(exc)}") from None
    wall = time.perf_counter() - started
    progress.done()
    sys.stdout.write(summary(report))
    sys.stdout.flush()
    print(
        f"replayed {report.virtual_time:g}s of cluster time in {wall:.2f}s of wall time "
        f"({report.virtual_time / wall if wall > 0 else 0:.0f}x)",
        file=sys.stderr,
    )
    _write_outputs(args, trace, report_bytes=encode_report(report), svg=render_timeline(report), wall=wall)
    for failure in report.failures:
        print(failure, file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def _read(name: str) -> Trace:
    """The trace in file ``name`` (``-``: standard input)."""
    try:
        return read_trace(read_text(name))
    except TraceError as exc:
        raise BadFile(shown(name), str(exc)) from None


def _write_outputs(
    args: argparse.Namespace, trace: Trace, *, report_bytes: bytes, svg: str, wall: float
) -> None:
    if args.report is not None:
        write_output(args.report, report_bytes, flag="--report")
    if args.timeline is not None:
        write_output(args.timeline, svg.encode("utf-8"), flag="--timeline")
    if args.timings is not None:
        virtual = end_of(trace)
        timings = Timings(
            wall_seconds=round(wall, 6),
            virtual_seconds=virtual,
            speedup=round(virtual / wall, 3) if wall > 0 else 0.0,
            records=len(trace.records),
            records_per_second=round(len(trace.records) / wall, 3) if wall > 0 else 0.0,
        )
        encoded = msgspec.json.format(msgspec.json.encode(timings), indent=2) + b"\n"
        write_output(args.timings, encoded, flag="--timings")


class _Progress:
    """Replay progress on ``out``: a bar redrawn in place on a terminal, else a line every 10%."""

    def __init__(self, out: TextIO, end: float) -> None:
        self._out = out
        self._end = end
        self._tty = out.isatty()
        self._shown = -1

    def __call__(self, now: float, end: float) -> None:
        fraction = 1.0 if end <= 0 else min(now / end, 1.0)
        if self._tty:
            percent = int(fraction * 100)
            if percent != self._shown:
                filled = int(fraction * 30)
                bar = "#" * filled + "-" * (30 - filled)
                self._out.write(f"\r[{bar}] {percent:3d}%  t={now:.0f}s of {end:.0f}s")
                self._out.flush()
                self._shown = percent
        else:
            tenth = int(fraction * 10)
            if tenth > self._shown:
                self._out.write(f"replayed {now:.0f}s of {end:.0f}s ({tenth * 10}%)\n")
                self._out.flush()
                self._shown = tenth

    def done(self) -> None:
        if self._tty and self._shown >= 0:
            self._out.write("\n")
            self._out.flush()
