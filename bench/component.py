"""The Component pathway at scale: N DGDs created, then rolled to a new worker image, simulated.

In one process, on the virtual clock (``dgd.sim``), it applies N copies of the aggregated vLLM
example (a frontend and a two-replica worker), each annotated ``nvidia.com/enable-grove: "false"``
so the operator renders one DynamoComponentDeployment per component (the simulated DCD controller
makes the pods), with the operator running beside the world models, in two phases:

1. **create**: every DGD applied at once; done when every DGD is ``successful``;
2. **rollout**: the worker's container image of every DGD changed at once (a new worker hash: a
   managed rolling update from the old worker DCD to a new one); done when every DGD has
   ``status.rollingUpdate.phase == "Completed"``, is ``successful`` and has ``observedGeneration ==
   generation``. Then it checks that every DGD has exactly one worker DCD left, whose
   ``nvidia.com/dynamo-worker-hash`` label is the DGD's ``nvidia.com/current-worker-hash-v2``
   annotation, and that this hash changed in the rollout.

For each phase it reports:

* wall time: ``time.perf_counter`` from the first write of the phase until a poll (every 5 s of
  cluster time) sees every DGD done; the process's CPU time over the same span
  (``time.process_time``, which other load on a shared machine does not inflate); and the cluster
  (virtual) time that took;
* reconciles per DGD: ``Nudge`` messages handled by DGD actors (the runtime's ``CountingMetrics``)
  divided by N;
* API writes per DGD: the operator's create/update/patch/delete calls (events included; the world
  models and the benchmark's own writes use other clients and are not counted), counted by a no-op
  fault rule on the operator's client, divided by N; with ``--breakdown``, also by verb and resource.

Every line is ``name value unit``. Run from the repository root:
``.venv/bin/python bench/component.py [--dgds 1000] [--seed 1] [--breakdown]``.
"""

from __future__ import annotations

import argparse
import copy
import platform
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import checkout  # noqa: F401  (the repository first on sys.path)
import yaml
from fleet import EXAMPLE, WRITE_VERBS, Cost, count_writes, simulated_fleet

from dgd.actors.tree import DGDS
from dgd.cluster.memory.faults import Decision, Request
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DCD, DGD
from dgd.domain.admission.defaulting import ENABLE_GROVE
from dgd.domain.metadata_keys import WORKER_HASH
from dgd.domain.worker_generation import CURRENT_WORKER_HASH_V2
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import CountingMetrics
from dgd.sim import run

NS = "default"
WORKER = "Worker"
NEW_TAG = "1.5.1"
POLL = 5.0
TIMEOUT = 3600.0


@dataclass
class Phase(Cost):
    """What one phase cost: besides the fleet's costs, CPU seconds and the writes by verb and resource."""

    cpu: float = 0.0
    breakdown: Counter[str] = field(default_factory=Counter)


class Counts:
    """The running totals a phase is the difference of."""

    def __init__(self, metrics: CountingMetrics, writes: Any, breakdown: Counter[str]) -> None:
        self._metrics, self._writes, self._breakdown = metrics, writes, breakdown

    def reconciles(self) -> int:
        prefix = DGDS + "/"
        processed = self._metrics.processed
        return sum(n for path, n in processed.items() if path.startswith(prefix) and path.count("/") == 4)

    def snapshot(self) -> tuple[float, float, int, int, Counter[str]]:
        counted = self.reconciles(), self._writes.fired, Counter(self._breakdown)
        return time.perf_counter(), time.process_time(), *counted

    def since(self, before: tuple[float, float, int, int, Counter[str]], cluster_seconds: float) -> Phase:
        wall, cpu, reconciles, writes, breakdown = before
        phase = Phase()
        phase.wall = time.perf_counter() - wall
        phase.cpu = time.process_time() - cpu
        phase.cluster_seconds = cluster_seconds
        phase.reconciles = self.reconciles() - reconciles
        phase.writes = self._writes.fired - writes
        phase.breakdown = Counter(self._breakdown)
        phase.breakdown.subtract(breakdown)
        return phase


def _count_writes(faults: Any, into: Counter[str]) -> None:
    """Count the operator's writes by verb and resource (``verb resource[/subresource]``)."""
    decide: Callable[[Request], Decision] = faults.decide

    def counting(request: Request) -> Decision:
        if request.verb in WRITE_VERBS:
            what = request.resource + (f"/{request.subresource}" if request.subresource else "")
            into[f"{request.verb} {what}"] += 1
        return decide(request)

    faults.decide = counting


def _done_created(dgd: DynamoGraphDeployment) -> bool:
    return dgd.status is not None and dgd.status.state == "successful"


def _done_rolled(dgd: DynamoGraphDeployment) -> bool:
    status = dgd.status
    if status is None or status.state != "successful":
        return False
    if status.observed_generation != dgd.metadata.generation:
        return False
    return status.rolling_update is not None and status.rolling_update.phase == "Completed"


def _new_image(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The components with the worker's main container on the ``NEW_TAG`` image."""
    changed = copy.deepcopy(components)
    for component in changed:
        if component.get("name") != WORKER:
            continue
        for container in component["podTemplate"]["spec"]["containers"]:
            if container.get("name") == "main":
                repository = container["image"].rsplit(":", 1)[0]
                container["image"] = f"{repository}:{NEW_TAG}"
    return changed


async def _hashes(user: Cluster) -> dict[str, str]:
    """The ``nvidia.com/current-worker-hash-v2`` annotation of every DGD, by name."""
    listed = (await user.list(DGD, namespace=NS)).items
    return {
        d.metadata.name or "": (d.metadata.annotations or {}).get(CURRENT_WORKER_HASH_V2, "") for d in listed
    }


async def _check_generations(user: Cluster, before: dict[str, str]) -> list[str]:
    """Problems with the worker DCDs after the rollout (empty if every DGD has one, of the new hash)."""
    dgds = (await user.list(DGD, namespace=NS)).items
    by_uid = {d.metadata.uid: d for d in dgds}
    workers: dict[str, list[str]] = {d.metadata.name or "": [] for d in dgds}
    for dcd in (await user.list(DCD, namespace=NS)).items:
        worker_hash = (dcd.metadata.labels or {}).get(WORKER_HASH)
        if not worker_hash:
            continue
        owner = next((o for o in dcd.metadata.owner_references or [] if o.controller), None)
        dgd = by_uid.get(owner.uid) if owner is not None else None
        if dgd is None:
            return [f"worker DCD {dcd.metadata.name} has no DGD controlling it"]
        workers[dgd.metadata.name or ""].append(worker_hash)
    problems = []
    for dgd in dgds:
        name = dgd.metadata.name or ""
        current = (dgd.metadata.annotations or {}).get(CURRENT_WORKER_HASH_V2, "")
        if workers[name] != [current]:
            problems.append(f"{name}: worker DCD hashes {workers[name]}, annotation {current!r}")
        elif current == before.get(name):
            problems.append(f"{name}: the worker hash did not change ({current!r})")
    return problems


async def bench(count: int, seed: int, report: Callable[[str, Phase], None]) -> list[str]:
    """Create ``count`` DGDs, then roll every worker (see the module); ``report`` is given each phase as
    it ends. Returns the problems the final check found."""
    metrics = CountingMetrics()
    sim = simulated_fleet(seed, metrics)
    document = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    components = _new_image(document["spec"]["components"])
    width = max(4, len(str(count)))
    names = [f"agg-{index:0{width}d}" for index in range(1, count + 1)]
    breakdown: Counter[str] = Counter()
    async with sim:
        writes = count_writes(sim)
        _count_writes(sim.cluster.faults, breakdown)
        counts = Counts(metrics, writes, breakdown)
        user = sim.cluster.client()

        def every(done: Callable[[DynamoGraphDeployment], bool]) -> Callable[[], Awaitable[bool]]:
            async def holds() -> bool:
                listed = (await user.list(DGD, namespace=NS)).items
                return len(listed) == count and all(done(d) for d in listed)

            return holds

        # Phase 1: create.
        before = counts.snapshot()
        start = sim.elapsed()
        for name in names:
            document["metadata"] = {"name": name, "namespace": NS, "annotations": {ENABLE_GROVE: "false"}}
            await user.create(DGD.as_raw(), document)
        await sim.until(every(_done_created), timeout=TIMEOUT, every=POLL)
        report("create", counts.since(before, sim.elapsed() - start))
        hashes = await _hashes(user)

        # Phase 2: a new worker image for every DGD.
        before = counts.snapshot()
        start = sim.elapsed()
        for name in names:
            await user.patch(DGD.key(NS, name), {"spec": {"components": components}})
        await sim.until(every(_done_rolled), timeout=TIMEOUT, every=POLL)
        report("rollout", counts.since(before, sim.elapsed() - start))
        problems = await _check_generations(user, hashes)
    return problems


def _report(name: str, phase: Phase, count: int, breakdown: bool) -> None:
    print(f"{name}.wall_time {phase.wall:.2f} s")
    print(f"{name}.cpu_time {phase.cpu:.2f} s")
    print(f"{name}.cluster_time {phase.cluster_seconds:.0f} s")
    print(f"{name}.reconciles_per_dgd {phase.reconciles / count:.2f} reconciles")
    print(f"{name}.api_writes_per_dgd {phase.writes / count:.2f} writes")
    if breakdown:
        for what, n in sorted(phase.breakdown.items(), key=lambda item: (-item[1], item[0])):
            if n:
                print(f"{name}.writes[{what}] {n / count:.2f} writes/DGD")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--dgds", type=int, default=1000, help="how many DGDs (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="the simulation's seed (default 1)")
    parser.add_argument("--breakdown", action="store_true", help="also print writes by verb and resource")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {args.dgds} DGDs "
        f"({EXAMPLE.name}, Component pathway), seed {args.seed}"
    )
    started = time.perf_counter()

    def report(name: str, phase: Phase) -> None:
        _report(name, phase, args.dgds, args.breakdown)

    problems = run(bench, args.dgds, args.seed, report)
    print(f"total.wall_time {time.perf_counter() - started:.2f} s")
    for problem in problems[:20]:
        print(f"PROBLEM {problem}")
    print(f"check old_worker_dcds_gone {'ok' if not problems else 'FAILED'} ({len(problems)} DGDs wrong)")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
