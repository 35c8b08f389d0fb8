"""The simulation's speed: simulated time per wall second, for one scenario and for a fleet.

It measures, on the virtual-time loop (``dgd.sim.clock.VirtualEventLoop``):

* scenario: the ten-minute scenario of ``tests/scenarios/ten_minutes.py`` (two upstream graphs,
  one on Grove and one on DCDs, a checkpoint, a capacity shortage, a scale-out, a rolling update,
  two controller crashes, a scale to zero and back), best of ``--rounds``: wall seconds, simulated
  seconds per wall second, API writes (the final resourceVersion counts every write), and writes
  per wall second.
* fleet: ``--graphs`` copies of the disaggregated vLLM graph on Grove and of the aggregated one on
  DCDs, in one cluster with no capacity limit, for ten simulated minutes: created at once, every
  decode clique scaled to 2 at minute 2, half of the graphs deleted at minute 5; one run. Shows how
  the world models scale with the number of objects (each pass reads its root's objects from the
  API server; the pod controller reads every pod).
* clock: ``--jumps`` sequential ``anyio.sleep(1)`` calls: the cost of one jump of virtual time.

``time.perf_counter`` around each run only (imports and rendering excluded). Every line is
``name value unit``; the targets are checked at the end and a missed one is printed as MISSED.

Run from the repository root: ``.venv/bin/python bench/sim.py`` (``make bench`` runs it).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
from importlib.metadata import version
from typing import TypeVar

import anyio
import checkout  # noqa: F401  (the repository first on sys.path)
import msgspec
from machine import command, python

from dgd.cluster.resources import DCD, PCLQ, PCS, POD
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.grove import PodCliqueSet
from dgd.sim import SimulatedCluster, WorldSettings, run
from tests.scenarios.ten_minutes import check, ten_minutes
from tests.unit.sim.builders import NS, as_dcd, as_pcs, rendered, scale

MINUTE = 60.0

Named = TypeVar("Named", PodCliqueSet, DynamoComponentDeployment)


def emit(results: dict[str, float], name: str, value: float, unit: str) -> None:
    results[name] = value
    print(f"{name} {value:.4g} {unit}", flush=True)


def bench_scenario(rounds: int, results: dict[str, float]) -> None:
    walls = []
    for seed in range(rounds):
        started = time.perf_counter()
        outcome = run(ten_minutes, seed)
        walls.append(time.perf_counter() - started)
        run(check, outcome)
    wall = min(walls)
    emit(results, "scenario.simulated", outcome.elapsed, "s")
    emit(results, "scenario.wall", wall, "s")
    emit(results, "scenario.speedup", outcome.elapsed / wall, "x real time")
    emit(results, "scenario.api_writes", outcome.resource_version, "writes")
    emit(results, "scenario.write_rate", outcome.resource_version / wall, "writes/s")


async def fleet(graphs: int) -> tuple[float, int, int, int]:
    """The fleet run (see the module): wall seconds, writes, peak pods, final pods."""
    pcs = as_pcs(rendered("examples/backends/vllm/deploy/disagg.yaml", pathway="grove")[0])
    dcds = [as_dcd(obj) for obj in rendered("examples/backends/vllm/deploy/agg.yaml", pathway="component")]
    settings = WorldSettings(schedule_delay=2, ready_delay=45, termination_delay=10)
    started = time.perf_counter()
    async with SimulatedCluster(settings, seed=1) as sim:
        for index in range(graphs):
            await sim.cluster.create(PCS, _renamed(pcs, f"disagg-{index}"))
            for component in dcds:
                await sim.cluster.create(DCD, _renamed(component, f"{component.metadata.name}-{index}"))
        await sim.run_for(2 * MINUTE)
        for index in range(graphs):
            await scale(sim.cluster, PCLQ.key(NS, f"disagg-{index}-0-vllmdecodeworker"), 2)
        await sim.run_for(3 * MINUTE)
        peak = len((await sim.cluster.list(POD)).items)
        for index in range(0, graphs, 2):
            await sim.cluster.delete(PCS.key(NS, f"disagg-{index}"))
            for component in dcds:
                await sim.cluster.delete(DCD.key(NS, f"{component.metadata.name}-{index}"))
        await sim.run_for(5 * MINUTE)
        final = len((await sim.cluster.list(POD)).items)
        writes = int(sim.cluster.resource_version)
    return time.perf_counter() - started, writes, peak, final


def bench_fleet(graphs: int, results: dict[str, float]) -> None:
    wall, writes, peak, final = run(fleet, graphs)
    emit(results, "fleet.graphs", graphs * 2, "graphs")
    emit(results, "fleet.peak_pods", peak, "pods")
    emit(results, "fleet.final_pods", final, "pods")
    emit(results, "fleet.wall", wall, "s")
    emit(results, "fleet.speedup", 600 / wall, "x real time")
    emit(results, "fleet.api_writes", writes, "writes")
    emit(results, "fleet.write_rate", writes / wall, "writes/s")


def bench_clock(jumps: int, results: dict[str, float]) -> None:
    async def sleeper() -> float:
        started = time.perf_counter()
        for _ in range(jumps):
            await anyio.sleep(1)
        return time.perf_counter() - started

    wall = run(sleeper)
    emit(results, "clock.jump", wall / jumps * 1e6, "us/jump")


def _renamed(obj: Named, name: str) -> Named:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, name=name))


TARGETS = [("scenario.wall", "<=", 1.0), ("scenario.speedup", ">=", 600.0), ("fleet.speedup", ">=", 10.0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--graphs", type=int, default=25, help="copies of each of the two graphs in the fleet"
    )
    parser.add_argument("--jumps", type=int, default=100_000)
    options = parser.parse_args()
    # The scenario kills two world models on purpose; their crash reports are not results.
    logging.getLogger("dgd.actors").setLevel(logging.ERROR)
    print("Method")
    print(f"  command:  {command()}")
    print(f"  python:   {python()}")
    print(f"  anyio:    {version('anyio')}, msgspec {version('msgspec')}")
    print(f"  machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}")
    print(f"  rounds:   scenario best of {options.rounds}; fleet {options.graphs} x 2 graphs, one run")
    results: dict[str, float] = {}
    bench_scenario(options.rounds, results)
    bench_fleet(options.graphs, results)
    bench_clock(options.jumps, results)
    missed = 0
    for name, op, bound in TARGETS:
        value = results[name]
        met = value <= bound if op == "<=" else value >= bound
        missed += not met
        print(f"target {name} {op} {bound:g}: {value:.4g} {'met' if met else 'MISSED'}")
    print(f"targets missed: {missed}")


if __name__ == "__main__":
    main()
