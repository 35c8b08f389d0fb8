"""Event-loop lag while the daemon makes MPI SSH keys: its worker-thread key source against the same
generator called on the loop.

A sampler task sleeps ``--interval`` seconds at a time and records how late it wakes: that lateness
is the loop's lag, what every actor, watch and lease renewal waits on top of its own work
(``dgd_event_loop_lag_seconds`` measures the same in the daemon, every 0.1 s). Runs:

* **idle**: the sampler alone for a second: the machine's noise floor.
* **source**: ``--keys`` keys made one after another by the daemon's key source
  (``dgd.daemon.ssh_keys.SecureKeys``: ``cryptography`` in a worker thread), then by the same
  generator called on the loop (``generate_key_pair``: what the operator did before, with a faster
  generator than the hand-written one it had).
* **tree**: the operator's actor tree (``operator_children``: informers, router, DGD actors and their
  children, ``--workers`` reconcile workers as the daemon's default) on the in-memory API server, in
  real time, with no MPI Secret in the cluster; ``--dgds`` multinode graphs (``examples/agg.yaml``
  with a two-node worker), one per namespace, are created at once, and the run ends when every
  graph's namespace has its replica of the MPI Secret. Keys come from the daemon's source, from the
  generator on the loop, from the generator in a process of its own (``own process``: not what the
  daemon does; an alternative measured for comparison), or none are needed (``secret installed``: the
  Secret exists from the start, so the lag is the reconciles' own). With the daemon's source (and the
  process), the reconciles that find no Secret at once share the one key being made; on the loop, each
  makes its own until one Secret exists.

Printed: keys made, wall seconds, lag samples, the lag's median, 99th percentile and maximum, the
longest single callback on the loop if one took over 20 ms (``long cb``, timed by
``dgd.sim.chaos_stalls``: a long callback blocks the loop; many short ones only keep it busy), and
the longest pause of the garbage collector during the run (it holds the loop too), in milliseconds.
Each run starts with the earlier runs' garbage collected. The target: a maximum under 100 ms with the
daemon's source. Run from the repository root:

    .venv/bin/python bench/keys.py [--keys 20] [--dgds 50] [--workers 10] [--interval 0.005]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any, NamedTuple

import anyio
import anyio.lowlevel
import cryptography
import yaml
from checkout import ROOT

from dgd.actors.machinery.workers import DEFAULT_WORKERS, Workers
from dgd.actors.tree import operator_children
from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CLUSTER_ROLE, DGD, NAMESPACE, SECRET
from dgd.daemon import ssh_keys
from dgd.domain.gates import Gates, effective_config
from dgd.domain.render.ssh_keys import KeyPair
from dgd.messages.config import OperatorConfig
from dgd.runtime import ActorSystem, LoopClock
from dgd.sim.chaos_stalls import watching_stalls

EXAMPLE = ROOT / "examples" / "agg.yaml"
CONFIG = effective_config(OperatorConfig(), Gates(grove=True))


class Lag:
    """The sampler: sleeps ``interval`` at a time and keeps how late each wake-up came (seconds)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.samples: list[float] = []

    async def sample(self) -> None:
        while True:
            due = anyio.current_time() + self.interval
            await anyio.sleep(self.interval)
            self.samples.append(max(0.0, anyio.current_time() - due))


class Source:
    """A run's key source: the daemon's (``thread``), the generator on the loop (``loop``) or in a
    process of its own (``process``: an alternative, measured for comparison), or none needed
    (``none``: the Secret is installed from the start)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self._daemons = ssh_keys.SecureKeys()
        self._making: asyncio.Future[KeyPair] | None = None

    async def __call__(self) -> KeyPair:
        if self.how == "loop":
            return ssh_keys.generate_key_pair()
        if self.how == "process":
            return await self._in_process()
        return await self._daemons()

    async def _in_process(self) -> KeyPair:
        # As the daemon's: those who ask while a key is being made share it.
        if self._making is None:
            MADE[0] += 1
            self._making = asyncio.wrap_future(PROCESSES.submit(made_elsewhere))
            self._making.add_done_callback(lambda _: setattr(self, "_making", None))
        return await asyncio.shield(self._making)


#: Keys generated so far (the daemon's generator, counted: ``counted``).
MADE = [0]
GENERATE = ssh_keys.generate_key_pair
#: The ``process`` source's worker: one fresh interpreter, started before anything is measured.
PROCESSES: ProcessPoolExecutor


def counted() -> KeyPair:
    MADE[0] += 1
    return GENERATE()


def made_elsewhere() -> KeyPair:
    """The generator, in the ``process`` source's worker (which counts nothing)."""
    return GENERATE()


class Collections:
    """The garbage collector's pauses during a run (``gc.callbacks``): a full collection holds the loop
    as long as it takes, whatever the run does."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)


class Run(NamedTuple):
    """What a measured run saw: wall seconds, lag samples, collector pauses, and the callbacks that held
    the loop over ``LONG`` seconds each (``dgd.sim.chaos_stalls``)."""

    wall: float
    lags: list[float]
    pauses: list[float]
    long: list[float]


#: A single callback that held the loop this long (seconds) is reported (``long cb``).
LONG = 0.02


async def measured(work: Callable[[], Awaitable[None]], interval: float) -> Run:
    """Run ``work`` with the lag sampler beside it: its wall seconds, the lag samples (the loop's lag
    after ``work`` returns is sampled too: a wake-up it delayed is counted), the collector's pauses and
    the long callbacks. The garbage of earlier runs is collected first, so a run does not pay for it."""
    gc.collect()
    lag, collections = Lag(interval), Collections()
    gc.callbacks.append(collections)
    try:
        with watching_stalls(LONG) as stalls:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lag.sample)
                await anyio.sleep(interval * 4)  # a few samples of the idle loop first
                started = time.perf_counter()
                await work()
                wall = time.perf_counter() - started
                await anyio.sleep(interval * 4)
                tg.cancel_scope.cancel()
    finally:
        gc.callbacks.remove(collections)
    return Run(wall, lag.samples, collections.pauses, [stall.seconds for stall in stalls.stalls])


async def source_run(source: Source, keys: int) -> None:
    for _ in range(keys):
        await source()
        await anyio.lowlevel.checkpoint()  # as a reconcile's next step would


def multinode(example: dict[str, Any], namespace: str) -> dict[str, Any]:
    document = copy.deepcopy(example)
    document["metadata"]["namespace"] = namespace
    worker = next(c for c in document["spec"]["components"] if c["type"] == "worker")
    worker["multinode"] = {"nodeCount": 2}
    return document


async def installed(source: Source, dgds: int) -> tuple[MemoryCluster, list[dict[str, Any]]]:
    """An in-memory API server with the namespaces, the planner ClusterRole and, for ``none``, the MPI
    Secret; and the multinode graphs to create in it (made before anything is measured)."""
    server = MemoryCluster(clock=time.time, rng=random.Random(1))
    documents = [multinode(yaml.safe_load(EXAMPLE.read_text()), f"team-{i:03d}") for i in range(dgds)]
    for ns in ["dynamo-system", *(d["metadata"]["namespace"] for d in documents)]:
        await server.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}
    await server.create(CLUSTER_ROLE, {**role, "metadata": {"name": CONFIG.rbac.planner_cluster_role_name}})
    if source.how == "none":
        mpi = CONFIG.mpi
        metadata = {"name": mpi.ssh_secret_name, "namespace": mpi.ssh_secret_namespace}
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {"private.key": "a2V5"}}
        await server.create(SECRET, secret)
    return server, documents


async def tree_run(
    source: Source, server: MemoryCluster, documents: list[dict[str, Any]], workers: int
) -> None:
    """The operator's tree, from its start until every graph's namespace has the MPI Secret."""
    children = operator_children(
        server.client(), config=CONFIG, wall=time.time, keys=source, workers=Workers(workers)
    )
    async with ActorSystem(children, clock=LoopClock(), random=random.Random(2)):
        async with anyio.create_task_group() as tg:
            for document in documents:
                tg.start_soon(server.create, DGD.as_raw(), document)
        for document in documents:
            key = SECRET.key(document["metadata"]["namespace"], CONFIG.mpi.ssh_secret_name)
            while True:
                try:
                    await server.get(key)
                    break
                except NotFound:
                    await anyio.sleep(0.01)


WHERE = {
    "thread": "worker thread",
    "loop": "on the loop",
    "process": "own process",
    "none": "secret installed",
}


def report(what: str, how: str, made: int, run: Run) -> None:
    ms = sorted(lag * 1000 for lag in run.lags)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    longest = f"{max(run.long) * 1000:.1f}" if run.long else f"<{LONG * 1000:g}"
    print(
        f"{what:<6} {WHERE.get(how, how):<16} {made:>4} {run.wall:>7.2f} {len(ms):>7} "
        f"{statistics.median(ms):>7.1f} {p99:>7.1f} {ms[-1]:>7.1f} {longest:>7} "
        f"{max(run.pauses, default=0) * 1000:>7.1f}"
    )


async def main(args: argparse.Namespace) -> None:
    print("command:  .venv/bin/python bench/keys.py " + " ".join(sys.argv[1:]))
    print(f"python:   {platform.python_implementation()} {platform.python_version()}")
    print(f"crypto:   cryptography {cryptography.__version__}, RSA {ssh_keys.BITS} bits")
    print(f"machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")
    print(f"sampler:  sleeps {args.interval * 1000:g} ms at a time; lag = how late it woke")
    print(f"source:   {args.keys} keys made one after another")
    print(f"tree:     {args.dgds} multinode DGDs, {args.workers} reconcile workers, no MPI Secret at first")
    print()
    print(f"{'run':<6} {'keys':<16} {'made':>4} {'wall s':>7} {'samples':>7} "
          f"{'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'long cb':>7} {'gc ms':>7}")  # fmt: skip
    report("idle", "idle", 0, await measured(partial(anyio.sleep, 1.0), args.interval))
    PROCESSES.submit(made_elsewhere).result()  # started and warm
    for how in ("thread", "loop"):
        source, before = Source(how), MADE[0]
        run = await measured(partial(source_run, source, args.keys), args.interval)
        report("source", how, MADE[0] - before, run)
    for how in WHERE:
        source, before = Source(how), MADE[0]
        server, documents = await installed(source, args.dgds)
        run = await measured(partial(tree_run, source, server, documents, args.workers), args.interval)
        report("tree", how, MADE[0] - before, run)


if __name__ == "__main__":
    ssh_keys.generate_key_pair = counted  # every run counts the keys it makes
    PROCESSES = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=20, help="keys made one after another (source run)")
    parser.add_argument("--dgds", type=int, default=50, help="multinode DGDs (tree run)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="reconcile workers (tree run)")
    parser.add_argument("--interval", type=float, default=0.005, help="sampler interval, seconds")
    anyio.run(main, parser.parse_args())
