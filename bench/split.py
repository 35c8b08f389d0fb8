"""Where a Python program's time goes, by part of the project: a ``SIGPROF`` sampler of the main thread.

``bench/replay.py --split`` runs a replay under :class:`Sampler` and prints each part's share. The
sampler needs no profiler installed: every ``interval`` seconds of the process's CPU time the kernel
sends ``SIGPROF``, and Python runs the handler on the main thread between two bytecodes, with the frame
the thread was in, so a sample lands wherever the thread is (unlike a sampling thread, which only gets
the interpreter's lock when the main thread lets it go, mostly in ``select``). It imports nothing from
the project.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent

#: The parts ``--split`` tells apart, by the file of a frame on the replay thread's stack.
JUDGE = ("dgd/sim/invariants", "dgd/sim/replay", "dgd/sim/expectations", "dgd/sim/journal", "dgd/sim/steps")


def part_of(files: list[str]) -> str:
    """The part of the replay a stack of files (outermost first, paths relative to the repository)
    belongs to: the memory API server wherever it appears; else the innermost project frame's part, with
    the actor runtime's frames given to the simulated world when they serve one of its actors."""
    ours = [file for file in files if file.startswith("dgd/")]
    if any(file.startswith("dgd/cluster/memory/") for file in ours):
        return "memory API server"
    if not ours:
        return "outside dgd (the event loop)"
    inner = ours[-1]
    if inner.startswith("dgd/sim/world/") or (
        inner.startswith("dgd/runtime/") and any(f.startswith("dgd/sim/world/") for f in ours)
    ):
        return "simulated world"
    if inner.startswith(JUDGE):
        return "replay: invariants, journal, expectations"
    if inner.startswith("dgd/runtime/"):
        return "actor runtime"
    if inner.startswith("dgd/sim/"):
        return "simulation, other (clock, cluster)"
    return "operator"


class Sampler:
    """Samples the main thread's stack every ``interval`` seconds of the process's CPU time (a
    ``SIGPROF`` timer: the handler runs between two bytecodes, wherever the thread is) into ``parts``."""

    def __init__(self, interval: float = 0.002) -> None:
        self.parts: Counter[str] = Counter()
        self._interval = interval

    def __enter__(self) -> Sampler:
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self._interval, self._interval)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def _sample(self, signum: int, frame: FrameType | None) -> None:
        files: list[str] = []
        while frame is not None:
            path = frame.f_code.co_filename
            files.append(os.path.relpath(path, ROOT) if path.startswith(str(ROOT)) else path)
            frame = frame.f_back
        files.reverse()
        self.parts[part_of(files)] += 1
