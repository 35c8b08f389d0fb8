"""The Grove pathway at scale: N DGDs to ``successful`` on the simulated cluster.

In one process, on the virtual clock (``dgd.sim``), it applies N copies of the aggregated vLLM
example (a frontend and a two-replica worker: two PodCliques, three pods) at once, with the
operator running beside the world models (simulated Grove, scheduler, kubelets), and waits until
every DGD is ``successful``. It reports:

* wall time: ``time.perf_counter`` from the first apply until every DGD is successful, and the
  cluster (virtual) time that took;
* reconciles per DGD: reconciles (``Nudge`` messages handled by DGD actors, counted by
  ``fleet.DGDReconciles``, a runtime metrics hook) divided by N;
* API writes per DGD: the operator's create/update/patch/delete calls (events included; the world
  models' writes are not counted) divided by N;
* memory per DGD actor subtree: tracemalloc's traced bytes (after ``gc.collect``) with every DGD
  actor running, minus the same once every DGD actor subtree (actor, its three children, their
  tasks, mailboxes and program) was stopped, divided by N. Cached objects, the API server's objects
  and the world models stay in both measurements, so they are excluded.

* peak RSS of the process through that run (``ru_maxrss``): everything, the world and the API server's
  objects included (issue 18 asks 10,000 DGDs to stay under 1 GiB).

tracemalloc slows everything down, so the memory per subtree is measured in a second, smaller run
(``--memory-dgds``, default 200; 0 skips it). Every line is ``name value unit``; the goal (48 KiB per
subtree) is checked at the end.

Run from the repository root: ``.venv/bin/python bench/grove.py [--dgds 1000]``.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any

import checkout  # noqa: F401  (the repository first on sys.path)
import yaml
from fleet import EXAMPLE, Cost, DGDReconciles, count_writes, simulated_fleet

from dgd.actors.tree import DGDS
from dgd.cluster.resources import DGD
from dgd.runtime import Ref, StopChild, WhichChildren
from dgd.sim import SimulatedCluster, run

GOAL_BYTES = 48 * 1024


@dataclass
class Result(Cost):
    """What converging the fleet cost, and the memory of one DGD actor subtree (when measured)."""

    subtree_bytes: float = 0.0


async def converge(count: int, memory: bool) -> Result:
    """Apply ``count`` DGDs and wait until all are successful (see the module)."""
    metrics = DGDReconciles()
    sim = simulated_fleet(1, metrics)
    document = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    result = Result()
    async with sim:
        writes = count_writes(sim)
        user = sim.cluster.client()
        started = time.perf_counter()
        for index in range(count):
            document["metadata"] = {"name": f"graph-{index:05d}", "namespace": "default"}
            await user.create(DGD.as_raw(), document)

        async def all_successful() -> bool:
            listed = (await user.list(DGD, namespace="default")).items
            return all(d.status is not None and d.status.state == "successful" for d in listed)

        result.cluster_seconds = await sim.until(all_successful, timeout=3600, every=5.0)
        result.wall = time.perf_counter() - started
        result.writes = writes.fired
        result.reconciles = metrics.count
        if memory:
            result.subtree_bytes = await _subtree_bytes(sim, count)
    return result


async def _subtree_bytes(sim: SimulatedCluster, count: int) -> float:
    dgds: Ref[Any] = sim.system.ref(DGDS)
    await sim.run_for(30)
    gc.collect()
    running = tracemalloc.get_traced_memory()[0]
    ids = (await dgds.ask(WhichChildren())).ids
    for child in ids:
        await dgds.ask(StopChild(child))
    gc.collect()
    stopped = tracemalloc.get_traced_memory()[0]
    return (running - stopped) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--dgds", type=int, default=1000)
    parser.add_argument("--memory-dgds", type=int, default=200)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {args.dgds} DGDs ({EXAMPLE.name})")
    speed = run(converge, args.dgds, False)
    print(f"wall_time {speed.wall:.2f} s")
    print(f"cluster_time {speed.cluster_seconds:.0f} s")
    print(f"reconciles_per_dgd {speed.reconciles / args.dgds:.2f} reconciles")
    print(f"api_writes_per_dgd {speed.writes / args.dgds:.2f} writes")
    print(f"peak_rss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")
    if args.memory_dgds <= 0:
        return
    tracemalloc.start()
    sized = run(converge, args.memory_dgds, True)
    tracemalloc.stop()
    print(f"memory_per_dgd_subtree {sized.subtree_bytes / 1024:.1f} KiB ({args.memory_dgds} DGDs)")
    verdict = "met" if sized.subtree_bytes <= GOAL_BYTES else "MISSED"
    print(f"goal memory_per_dgd_subtree <= 48 KiB: {verdict} ({sized.subtree_bytes / 1024:.1f} KiB)")


if __name__ == "__main__":
    main()
