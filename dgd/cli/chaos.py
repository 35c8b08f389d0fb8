"""The ``dgd-operator chaos`` command: a chaos campaign over example DGDs (``dgd.sim.chaos``).

For each of ``--seeds`` seeds, ``--dgds`` graphs drawn from the example manifests (on the Grove and
the Component pathway), applied, rolled out and scaled, are replayed on the simulated cluster once
without faults, then under the fault schedules of ``--plan``: ``crash-after-write`` (the writer killed
right after each distinct write point), ``unobserved-state`` (watches dropped or expired),
``stale-state`` (reads served from an older resourceVersion), ``random`` (actors killed, API errors),
``poison`` (undecodable objects), ``crash-loop`` (status writes failing on a bug for ever), or ``all``
of them. The invariants are checked after every step, and every graph must be
``successful`` within a bound after the last fault. The first schedule to break each invariant is
shrunk to a small trace that ``dgd-operator sim replay`` reproduces.

Prints a summary (schedules, faults, violations by invariant), then, in a section of its own, the
event-loop callbacks that ran over 100 ms of wall time; ``--report`` writes the summary as JSON, with
no wall-clock value in it (the wall time and the stalls are left out; the wall time goes to stderr, as
does a line per seed done). Exit 0 when nothing broke, 1 when an invariant did (naming it and the
shrunk trace) or an example DGD cannot be converted, 2 for usage errors and example files that cannot
be read, 130 when interrupted.

Like ``cli.py``, this module is the command line: it is allowed to import ``dgd.sim``.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TextIO

from dgd.cli.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Invalid, Usage, log_to_stderr, wire
from dgd.cli.inputs import STDIN, BadFile, read_text, shown, writable, write_output
from dgd.daemon.logs import LEVELS
from dgd.domain.admission.documents import admit_document
from dgd.domain.manifests import ManifestError
from dgd.messages.dgd import KIND
from dgd.sim.chaos import Campaign, CampaignReport, encode_campaign, run_campaign, summary
from dgd.sim.chaos_schedule import PLANS, Plan
from dgd.sim.chaos_stalls import Stall, stalls_summary
from dgd.sim.chaos_workload import Example, examples_in

#: The examples shipped with the package (``examples/`` in the repository is a link to them).
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: The repository an editable install runs from, beside which upstream's examples are looked for.
ROOT = Path(__file__).resolve().parents[2]
#: The upstream vLLM examples, beside the repository unless ``DGD_UPSTREAM_DIR`` says where.
VLLM = Path("ai-dynamo-dynamo/examples/backends/vllm/deploy")


#: ``chaos --help``: what a campaign does, and each plan (every one of ``PLANS``) in a few words.
CHAOS = (
    "For each of --seeds seeds, --dgds graphs drawn from the example manifests (on the Grove and the "
    "Component pathway), applied, rolled out and scaled, are replayed on the simulated cluster once "
    "without faults, then under the fault schedules of --plan: crash-after-write (the writer killed "
    "right after each distinct write point), unobserved-state (watches dropped or expired), "
    "stale-state (reads served from an older resourceVersion), random (actors killed, API errors), "
    "poison (an object the operator cannot decode, of each kind it reads), crash-loop (some graphs' "
    "status writes fail for ever on a bug, not an API error), or all of them. The invariants are "
    "checked after every step, and every graph must be successful within a bound after the last fault. "
    "The first schedule to break each invariant is shrunk to a small trace that dgd-operator sim replay "
    "reproduces. Prints a summary (schedules, faults, violations by invariant), then, in a section of "
    "its own, the event-loop callbacks that ran over 100 ms of wall time; --report writes the summary "
    "as JSON, with no wall-clock value in it (the wall time goes to stderr, as does a line per seed "
    "done)."
)


def add_command(commands: Any) -> None:
    """Add ``chaos`` to the ``dgd-operator`` parser."""
    chaos = commands.add_parser(
        "chaos",
        help="run a chaos campaign: fault schedules over example DGDs, invariants checked, failures shrunk",
        description=CHAOS,
    )
    chaos.add_argument("--seeds", type=int, default=20, metavar="K", help="seeds to run (default 20)")
    chaos.add_argument("--first-seed", type=int, default=0, metavar="S", help="the first seed (default 0)")
    chaos.add_argument("--dgds", type=int, default=3, metavar="N", help="graphs per schedule (default 3)")
    chaos.add_argument(
        "--plan",
        default="all",
        metavar="PLAN",
        help=f"all (default), or a comma-separated list of: {', '.join(PLANS)}",
    )
    chaos.add_argument("--report", type=Path, metavar="OUT", help="write the campaign report there (JSON)")
    chaos.add_argument(
        "--shrink-to",
        type=Path,
        metavar="FILE",
        help="write the shrunk trace of the first broken invariant there (others beside it, suffixed "
        "with their invariant; default: dgd-chaos-<invariant>.jsonl in the temporary directory)",
    )
    chaos.add_argument("--jobs", type=int, default=1, metavar="J", help="worker processes (default 1)")
    chaos.add_argument(
        "--log-level",
        choices=LEVELS,
        default="critical",
        help="lowest level of the operator's own log lines on stderr (default critical: the faults a "
        "campaign injects make the operator log errors by design; the report says what broke)",
    )
    chaos.add_argument(
        "--examples",
        nargs="+",
        metavar="FILE",
        help="manifest files whose DGDs the graphs are drawn from, - for standard input (default: the "
        "packaged examples/agg.yaml, and upstream's vLLM agg.yaml and disagg.yaml where $DGD_UPSTREAM_DIR "
        "or ../shared/upstream beside the checkout holds them)",
    )
    wire(chaos, _chaos, ok="no invariant broken", failed="an invariant broken")


def _chaos(args: argparse.Namespace) -> int:
    log_to_stderr(getattr(logging, args.log_level.upper()))
    campaign = Campaign(
        examples=_examples(args.examples),
        seeds=_positive(args.seeds, "--seeds"),
        first_seed=args.first_seed,
        dgds=_positive(args.dgds, "--dgds"),
        plans=_plans(args.plan),
    )
    jobs = _positive(args.jobs, "--jobs")
    writable(args.report, "--report")
    started = time.perf_counter()
    progress = _progress(sys.stderr, started)
    shrink_to = _shrink_paths(args.shrink_to)
    stalls: list[Stall] = []
    if jobs > 1:
        report = _deaf_to_ctrl_c(campaign, shrink_to, jobs, progress, stalls.append)
    else:
        report = run_campaign(campaign, shrink_to=shrink_to, progress=progress, stalled=stalls.append)
    wall = time.perf_counter() - started
    sys.stdout.write(summary(report))
    sys.stdout.write("\n" + stalls_summary(stalls))
    print(f"wall time: {wall:.1f}s", file=sys.stderr)
    if args.report is not None:
        write_output(args.report, encode_campaign(report), flag="--report")
    return _verdict(report)


def _deaf_to_ctrl_c(
    campaign: Campaign,
    shrink_to: Callable[[str], Path],
    jobs: int,
    progress: Callable[[int, int], None],
    stalled: Callable[[Stall], None],
) -> CampaignReport:
    """``run_campaign`` on ``jobs`` workers, in a child process that ignores SIGINT, as its pool's workers
    then do; this process hears the progress, and Ctrl-C.

    A terminal sends Ctrl-C to its whole foreground process group: each pool worker would print its own
    traceback. A process started with SIGINT ignored keeps it ignored (Python installs no handler), so
    only this process hears it; it stops the child with SIGTERM, which ends the child's campaign as an
    exception would, and the pool terminates its workers. The child is forked: no thread runs here yet,
    and only its messages cross the pipe."""
    context = multiprocessing.get_context("fork")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(
        target=_campaign, args=(sending, campaign, shrink_to, jobs), name="chaos campaign"
    )
    child.start()
    sending.close()
    try:
        while True:
            try:
                kind, value = receiving.recv()
            except EOFError:
                child.join()
                why = f"the campaign process ended without a report (exit code {child.exitcode}; see above)"
                raise Invalid(why) from None
            if kind == "report":
                break
            if kind == "stall":
                stalled(value)
            else:
                progress(*value)
    except BaseException:
        child.terminate()
        child.join()
        raise
    child.join()
    report: CampaignReport = value
    return report


def _campaign(sending: Connection, campaign: Campaign, shrink_to: Callable[[str], Path], jobs: int) -> None:
    """The child of :func:`_deaf_to_ctrl_c`: the campaign, its progress and report sent on ``sending``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stopped)

    def progress(done: int, total: int) -> None:
        sending.send(("progress", (done, total)))

    def stalled(stall: Stall) -> None:
        sending.send(("stall", stall))

    report = run_campaign(campaign, shrink_to=shrink_to, jobs=jobs, progress=progress, stalled=stalled)
    sending.send(("report", report))


def _stopped(signum: int, frame: object) -> None:
    # Raised where the campaign is: the pool's ``with`` block on the way out terminates its workers.
    raise SystemExit(EXIT_INTERRUPTED)


def _verdict(report: CampaignReport) -> int:
    if report.ok:
        return EXIT_OK
    for shrunk in report.shrunk:
        how = (
            f"reproduce with: dgd-operator sim replay {shrunk.path}"
            if shrunk.reproduces
            else f"shrunk trace (needs the crash right after a write): {shrunk.path}"
        )
        print(f"dgd-operator chaos: invariant {shrunk.invariant} broken; {how}", file=sys.stderr)
    return EXIT_FAILED


def _positive(value: int, option: str) -> int:
    if value < 1:
        raise Usage(f"{option} must be at least 1, not {value}")
    return value


def _plans(text: str) -> tuple[Plan, ...]:
    if text == "all":
        return PLANS
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PLANS]
    if unknown or not names:
        raise Usage(f"unknown plan {', '.join(unknown) or repr(text)}; use all or {', '.join(PLANS)}")
    return tuple(plan for plan in PLANS if plan in names)


def _examples(files: Sequence[str] | None) -> tuple[Example, ...]:
    """The example DGDs of ``files`` (default: the built-in examples that can be found), v1beta1."""
    if files is None:
        upstream = Path(os.environ.get("DGD_UPSTREAM_DIR", ROOT.parent / "shared" / "upstream"))
        # Upstream's examples join the packaged one where they can be found (a checkout beside them).
        defaults = [EXAMPLES / "agg.yaml"]
        if upstream.is_dir():
            defaults += [upstream / VLLM / "agg.yaml", upstream / VLLM / "disagg.yaml"]
        present = [path for path in defaults if path.is_file()]
        for missing in sorted(set(defaults) - set(present)):
            print(f"dgd-operator chaos: note: example {missing} not found, left out", file=sys.stderr)
        if not present:
            raise Usage("no example DGD found: name manifest files with --examples")
        names: Sequence[str | Path] = present
    else:
        names = files
    examples: list[Example] = []
    for name in names:
        try:
            found = examples_in(read_text(name, flag="--examples"), _source(name))
        except ValueError as exc:
            # Not YAML is a file that cannot be read; a DGD that cannot be converted is invalid input.
            if isinstance(exc.__cause__, ManifestError):
                raise BadFile(f"--examples {shown(name)}", str(exc.__cause__)) from None
            raise Invalid(f"--examples {exc}") from None
        # A DGD the API server would refuse breaks no invariant of ours: say so rather than run it.
        for example in found:
            errors = admit_document(example.document).errors
            if errors:
                more = f" (and {len(errors) - 1} more: see dgd-operator validate)" if len(errors) > 1 else ""
                raise Invalid(f"--examples {shown(name)}: {KIND} {example.name}: {errors[0]}{more}")
        examples += found
    if not examples:
        raise Invalid(f"no {KIND} in {', '.join(shown(name) for name in names)}")
    return tuple(examples)


def _source(name: str | Path) -> str:
    """An example file as the report shows it: a packaged one as ``examples/…``, others relative to the
    repository or its parent when inside."""
    if str(name) == STDIN:
        return shown(name)
    resolved = Path(name).resolve()
    for base in (EXAMPLES.parent, ROOT, ROOT.parent):
        if resolved.is_relative_to(base):
            return str(resolved.relative_to(base))
    return str(name)


def _shrink_paths(first: Path | None) -> Callable[[str], Path]:
    """Where the shrunk trace of each invariant goes: ``first`` for the first, beside it for others."""
    given: list[str] = []

    def path(invariant: str) -> Path:
        given.append(invariant)
        if first is None:
            return Path(tempfile.gettempdir()) / f"dgd-chaos-{invariant}.jsonl"
        if len(given) == 1:
            return first
        return first.with_name(f"{first.stem}-{invariant}{first.suffix or '.jsonl'}")

    return path


def _progress(out: TextIO, started: float) -> Callable[[int, int], None]:
    """Seeds done, with the wall time so far: one line redrawn in place when ``out`` is a terminal, else
    a line per seed (stdout carries the summary)."""
    tty = out.isatty()

    def show(done: int, total: int) -> None:
        line = f"chaos: seed {done}/{total} done ({time.perf_counter() - started:.0f}s)"
        out.write(f"\r{line}" + ("\n" if done == total else "") if tty else f"{line}\n")
        out.flush()

    return show
