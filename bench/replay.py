"""Trace replay speed: records replayed per wall second, and cluster time per wall second.

It generates one trace of ``--records`` records (10,000 by default; seeded, so always the same),
writes it to ``--out`` if asked, and replays it with ``dgd.sim.replay.run_replay`` on the virtual
clock, ``--rounds`` times, timing each replay with ``time.perf_counter`` (reading and generating the
trace excluded). The trace: ``--graphs`` copies of the aggregated example (``examples/agg.yaml``),
half on Grove and half on the Component pathway, applied at the start; then, one every
``--every`` seconds of cluster time, a planner's scale of a random graph's worker through its
scaling adapter (1 to 4 replicas), with every 100th record a fault instead (an actor kill, a
dropped watch, a burst of API errors), and at the end one expectation per graph that it is
``successful`` with its last replicas. Every record is judged by the invariants as it is replayed.

``--split`` replays once more, sampled every 2 ms of CPU time (``bench/split.py``: a ``SIGPROF``
timer, no profiler installed), and prints each part's share of the samples and of that replay's wall
time: the memory API server (any frame in ``dgd/cluster/memory``), the simulated world
(``dgd/sim/world``), the replay's judging (invariants, journal, expectations), the actor runtime, the
operator (the rest of ``dgd``) and what is outside ``dgd`` (the event loop itself). The timing lines
come from the unsampled rounds before it.

Printed: the method, then ``name value unit`` lines — records/s (``replay.records_per_second``),
cluster seconds per wall second (``replay.speedup``), and what the replay did (reconciles, API
calls, writes) — and whether every expectation and invariant held.

Run from the repository root: ``.venv/bin/python bench/replay.py``.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml
from checkout import ROOT
from machine import command, cpu_model, python
from split import Sampler

from dgd.messages.trace import (
    VERSION,
    ApiFault,
    Apply,
    Expect,
    Header,
    Kill,
    ObjectRef,
    Patch,
    Record,
    Trace,
    WatchDrop,
    write_trace,
)
from dgd.sim.replay import run_replay

DGD = ("nvidia.com/v1beta1", "DynamoGraphDeployment")
ADAPTER = ("nvidia.com/v1beta1", "DynamoGraphDeploymentScalingAdapter")


def generate(records: int, graphs: int, every: float, seed: int = 1) -> Trace:
    """The benchmark trace (see the module)."""
    rng = random.Random(seed)
    example: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "agg.yaml").read_text())
    out: list[Record] = []
    for index in range(graphs):
        graph = yaml.safe_load(yaml.safe_dump(example))
        graph["metadata"].update(name=f"graph-{index:03d}", namespace="default")
        if index % 2:
            graph["metadata"]["annotations"] = {"nvidia.com/enable-grove": "false"}
        out.append(Apply(at=0.0, object=graph))
    last: dict[int, int] = {}
    at = 60.0
    faults = (
        lambda at: Kill(at=at, path="/operator/dgds/default/*"),
        lambda at: WatchDrop(at=at),
        lambda at: ApiFault(at=at, verb="update", error="ServerError", count=5),
        lambda at: Kill(at=at, path="/operator/informers/*"),
    )
    expectations = graphs
    while len(out) < records - expectations:
        at += every
        if len(out) % 100 == 99:
            out.append(faults[(len(out) // 100) % len(faults)](at))
            continue
        index, replicas = rng.randrange(graphs), rng.randint(1, 4)
        last[index] = replicas
        target = ObjectRef(*ADAPTER, f"graph-{index:03d}-worker", "default")
        out.append(Patch(at=at, target=target, patch={"spec": {"replicas": replicas}}, subresource="scale"))
    end = at + 600.0
    for index in range(graphs):
        target = ObjectRef(*DGD, f"graph-{index:03d}", "default")
        replicas = last.get(index, 2)
        out.append(
            Expect(
                at=end,
                target=target,
                state="successful",
                path="$.spec.components[name=Worker].replicas",
                equals=replicas,
                name=f"graph-{index:03d} successful at {replicas} workers",
            )
        )
    header = Header(version=VERSION, seed=seed, description=f"bench: {records} records over {graphs} graphs")
    return Trace(header, tuple(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="records in the trace (default 10000)")
    parser.add_argument("--graphs", type=int, default=10, help="DGDs in the trace (default 10)")
    parser.add_argument(
        "--every", type=float, default=1.0, help="cluster seconds between records (default 1)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="replays; the best is reported (default 1)")
    parser.add_argument("--out", type=Path, help="also write the trace here")
    parser.add_argument(
        "--split", action="store_true", help="one more, sampled replay: each part's share of the wall time"
    )
    options = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)

    trace = generate(options.records, options.graphs, options.every)
    if options.out is not None:
        options.out.write_bytes(write_trace(trace))
    print("Method")
    print(f"  command:  {command()}")
    print(f"  python:   {python()}")
    print(f"  anyio:    {version('anyio')}, msgspec {version('msgspec')}")
    print(f"  machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}, {cpu_model()}")
    print(f"  trace:    {len(trace.records)} records, {options.graphs} graphs, one every {options.every:g}s")
    print(f"  timing:   time.perf_counter around run_replay, best of {options.rounds}")
    walls: list[float] = []
    for _ in range(options.rounds):
        started = time.perf_counter()
        report = run_replay(trace)
        walls.append(time.perf_counter() - started)
    wall = min(walls)
    records = len(trace.records)
    results = [
        ("replay.records", records, "records"),
        ("replay.virtual", report.virtual_time, "s of cluster time"),
        ("replay.wall", wall, "s"),
        ("replay.records_per_second", records / wall, "records/s"),
        ("replay.speedup", report.virtual_time / wall, "x real time"),
        ("replay.reconciles", sum(report.counts.reconciles.values()), "reconciles"),
        ("replay.api_calls", sum(report.counts.api_calls.values()), "operator API calls"),
        ("replay.writes", report.counts.writes, "writes"),
        ("replay.actor_restarts", sum(report.counts.actor_restarts.values()), "actor restarts"),
    ]
    for name, value, unit in results:
        print(f"{name} {value:.4g} {unit}")
    print(f"every expectation and invariant held: {report.ok}")
    for failure in report.failures[:10]:
        print(f"  {failure}")
    if options.split:
        split(trace)


def split(trace: Trace) -> None:
    """Replays ``trace`` once more under a :class:`Sampler` and prints each part's share."""
    started = time.perf_counter()
    with Sampler() as sampler:
        run_replay(trace)
    wall = time.perf_counter() - started
    samples = sum(sampler.parts.values())
    print(f"split: a sampled replay, {wall:.2f} s wall, {samples} samples")
    for part, count in sampler.parts.most_common():
        print(f"  {count / samples:6.1%}  {count / samples * wall:6.2f} s  {part}")


if __name__ == "__main__":
    main()
