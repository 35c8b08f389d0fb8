"""The daemon's cold start and memory: ``dgd-operator run`` against N existing DGDs through the HTTP facade.

Three processes: ``dgd-operator sim serve --no-world`` (the in-memory API server over HTTP, no
simulated controllers, so objects are only stored: no DGD ever gets pods or becomes ready), this
script (a client that creates the DGDs and watches the daemon), and ``dgd-operator run`` (the real
daemon, as deployed, on its kubeconfig). Steps:

1. **baseline**: a daemon starts with no DGD in the cluster; once it leads and ``/readyz`` answers
   200, and then ``--settle`` seconds pass with no reconcile and nothing added to a work queue
   (``controller_runtime_reconcile_total``, ``workqueue_adds_total``), its RSS is read
   (``VmRSS`` of ``/proc/<pid>/status``); it is stopped with SIGTERM.
2. ``--dgds`` copies of ``examples/agg.yaml`` (a frontend and a two-replica vLLM worker with a
   scaling adapter, the Grove pathway) are created through the facade with the kube adapter.
3. **cold start**: a new daemon is started, timed from just before its process is spawned:
   ``leading`` (its ``leader_election_master_status`` reads 1), ``ready`` (``/readyz`` answers 200:
   caches synced), ``actors_spawned`` (its ``dgd_actors{kind="DGDActor"}`` gauge reads N: every DGD
   has its actor), ``first_reconcile_done`` (every DGD has a status whose ``observedGeneration`` is
   its generation: each was reconciled once, to its end: children created, status written). The
   metrics are polled every ``--poll`` seconds, the DGD list every second; a ``reconciled@T`` line
   every ``--progress`` seconds says how many DGDs were done by then, ``first_dgd_done`` and
   ``half_done`` when the first one and half of them were. Past ``--cold-timeout`` the run
   gives up on the cold start and says how far it got. ``rss_after`` is read at that moment; then,
   from the daemon's ``/metrics``, the requests it sent (``rest_client_requests_total``, lease
   requests included, by method, and the 409 Conflicts among them) and the DGD reconciles per DGD
   that succeeded and that failed (``controller_runtime_reconcile_total``); ``ask_timeouts`` counts
   its log lines saying an actor's ask went unanswered in time (a reconcile step that timed out).
4. **steady state** (if the cold start finished): once ``--settle`` seconds pass with no reconcile and
   nothing queued, the RSS is read again (``rss_peak`` is ``VmHWM``); ``rss_per_dgd`` = (steady RSS
   with N DGDs - baseline RSS) / N. The daemon is stopped with SIGTERM (exit code, seconds to exit).
5. **restart** (if the cold start finished): a new daemon starts over the DGDs the first one
   reconciled, as after an upgrade or a failover: ``ready``, ``actors_spawned``, ``reconciled`` (its
   DGD reconciles reach N: each DGD was looked at once more), the requests that took and the RSS.

The client-side rate limit (``--qps``/``--burst``, passed to the daemon) bounds the cold start:
every DGD's first reconcile is a few dozen requests. The daemon's defaults are 20/30; its
``--max-concurrent-reconciles`` (``--workers`` here, default 10) lets DGDs finish in turn instead
of all together at the end.

Every result line is ``name value unit``. Run from the repository root:

    .venv/bin/python bench/daemon.py --dgds 1000 [--qps 20 --burst 30 --workers 10]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import yaml
from checkout import ROOT
from daemon_process import EXECUTABLE, Daemon, listening, settle, total, until
from operators import terminate

from dgd.actors.machinery.workers import DEFAULT_WORKERS
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import DGD

EXAMPLE = ROOT / "examples" / "agg.yaml"
NS = "default"
DGDS = DGD.as_raw()
#: Concurrent creates while filling the cluster.
CREATORS = 32


def emit(name: str, value: float, unit: str) -> None:
    shown = str(int(value)) if float(value).is_integer() else f"{value:.4g}"
    print(f"{name} {shown} {unit}".rstrip(), flush=True)


async def create(kube: KubeCluster, count: int) -> None:
    template: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    limiter = anyio.Semaphore(CREATORS)

    async def one(index: int) -> None:
        manifest = {**template, "metadata": {"name": f"bench-{index:05d}", "namespace": NS}}
        async with limiter:
            await kube.create(DGDS, manifest)

    async with anyio.create_task_group() as tg:
        for index in range(count):
            tg.start_soon(one, index)


async def reconciled(kube: KubeCluster) -> int:
    """DGDs whose status was written for their current generation."""
    items = (await kube.list(DGDS, namespace=NS)).items
    return sum(
        1
        for item in items
        if (item.get("status") or {}).get("observedGeneration") == item["metadata"]["generation"]
    )


async def bench(args: argparse.Namespace, workdir: Path) -> None:
    daemons: list[Daemon] = []
    try:
        await measure(args, workdir, daemons)
    finally:
        for daemon in daemons:
            if daemon.process.poll() is None:
                daemon.process.kill()
                daemon.process.wait()


@dataclass(frozen=True)
class Launcher:
    """How every step starts its daemon: on the facade's kubeconfig, with the run's flags, its log in
    the work folder, and listed in ``daemons`` (so that it is killed if the run fails)."""

    kubeconfig: Path
    workdir: Path
    flags: list[str]
    daemons: list[Daemon]

    async def start(self, instance: str, what: str, *, log: str | None = None) -> Daemon:
        """A daemon named ``instance`` once it listens (its log ``<log or instance>.log``)."""
        daemon = Daemon(self.kubeconfig, self.workdir / f"{log or instance}.log", instance, self.flags)
        return await listening(daemon, self.daemons, what)


async def measure(args: argparse.Namespace, workdir: Path, daemons: list[Daemon]) -> None:
    """The five steps of the module docstring, in order; each emits its own result lines."""
    kubeconfig = workdir / "kubeconfig"
    flags = [
        "--qps",
        str(args.qps),
        "--burst",
        str(args.burst),
        "--max-concurrent-reconciles",
        str(args.workers),
    ]
    launcher = Launcher(kubeconfig, workdir, flags, daemons)
    async with (
        await KubeCluster.from_config(kubeconfig, qps=None) as kube,
        aiohttp.ClientSession() as session,
    ):
        # 1. The baseline: a leading daemon with nothing to reconcile.
        rss_empty = await baseline(args, launcher, session)

        # 2. The cluster's DGDs, before the daemon starts.
        began = time.perf_counter()
        await create(kube, args.dgds)
        emit("create.dgds", args.dgds, "DGDs")
        emit("create.time", time.perf_counter() - began, "s")

        # 3. The cold start.
        daemon = await launcher.start("bench", "the daemon", log="daemon")
        done = await cold_start(args, daemon, kube, session)

        # 4. The steady state (once every DGD was reconciled).
        if done is not None:
            await steady(args, daemon, session, rss_empty)
        code, took = await daemon.stop()
        emit("shutdown.exit_code", code, "")
        emit("shutdown.time", took, "s")
        if done is not None:
            await restart(args, launcher, session)


async def baseline(args: argparse.Namespace, launcher: Launcher, session: aiohttp.ClientSession) -> int:
    """1. A daemon over an empty cluster, settled: its RSS in bytes (the base of ``rss_per_dgd``)."""
    daemon = await launcher.start("baseline", "the baseline daemon")
    await until(lambda: daemon.ready(session), 60, "the baseline daemon is ready")
    await settle(daemon, session, args.settle, args.timeout)
    rss_empty = daemon.memory()
    code, _ = await daemon.stop()
    emit("baseline.rss", rss_empty / 2**20, "MiB (0 DGDs, settled)")
    emit("baseline.exit_code", code, "")
    return rss_empty


async def cold_start(
    args: argparse.Namespace, daemon: Daemon, kube: KubeCluster, session: aiohttp.ClientSession
) -> float | None:
    """3. From spawn to every DGD reconciled once: the seconds that took, ``None`` past ``--cold-timeout``."""
    leading: float | None = None
    ready: float | None = None
    spawned: float | None = None
    done: float | None = None
    first: float | None = None
    half: float | None = None
    count, polled, reported = 0, -1.0, 0.0
    while done is None and daemon.elapsed() <= args.cold_timeout:
        samples = await daemon.metrics(session)
        if leading is None and samples.get("leader_election_master_status{name=dgd-operator}") == 1:
            leading = daemon.elapsed()
        if ready is None and await daemon.ready(session):
            ready = daemon.elapsed()
        if spawned is None and samples.get("dgd_actors{kind=DGDActor}", 0) >= args.dgds:
            spawned = daemon.elapsed()
        if daemon.elapsed() - polled >= 1.0:
            polled = daemon.elapsed()
            count = await reconciled(kube)
            if first is None and count >= 1:
                first = daemon.elapsed()
            if half is None and count >= args.dgds / 2:
                half = daemon.elapsed()
            if count == args.dgds:
                done = daemon.elapsed()
        if daemon.elapsed() - reported >= args.progress:
            reported += args.progress
            emit(f"cold_start.reconciled@{reported:g}s", count, "DGDs")
        await anyio.sleep(args.poll)
    rss_cold = daemon.memory()
    samples = await daemon.metrics(session)
    emit("cold_start.leading", leading if leading is not None else float("nan"), "s")
    emit("cold_start.ready", ready if ready is not None else float("nan"), "s (caches synced)")
    emit("cold_start.actors_spawned", spawned if spawned is not None else float("nan"), "s")
    emit(
        "cold_start.first_dgd_done",
        first if first is not None else float("nan"),
        "s (one DGD reconciled)",
    )
    emit("cold_start.half_done", half if half is not None else float("nan"), "s (half of them)")
    if done is None:
        emit(f"cold_start.reconciled@{daemon.elapsed():.0f}s", count, "DGDs: gave up (--cold-timeout)")
    else:
        emit("cold_start.first_reconcile_done", done, "s (every DGD reconciled)")
    emit("cold_start.rss_after", rss_cold / 2**20, "MiB")
    report(samples, "cold_start", args.dgds)
    timeouts = daemon.log.read_text(errors="replace").count("got no reply within")
    emit("cold_start.ask_timeouts", timeouts, "log lines 'ask ... got no reply within'")
    return done


async def steady(
    args: argparse.Namespace, daemon: Daemon, session: aiohttp.ClientSession, rss_empty: int
) -> None:
    """4. The settled daemon's RSS, its peak, and what each DGD adds to the baseline."""
    waited = await settle(daemon, session, args.settle, args.timeout)
    rss_steady = daemon.memory()
    emit("steady.settled_after", waited, "s more")
    emit("steady.rss", rss_steady / 2**20, "MiB")
    emit("steady.rss_peak", daemon.memory("VmHWM") / 2**20, "MiB")
    emit("steady.rss_per_dgd", (rss_steady - rss_empty) / args.dgds / 1024, "KiB")


async def restart(args: argparse.Namespace, launcher: Launcher, session: aiohttp.ClientSession) -> None:
    """5. An operator restart (an upgrade, a new leader): a new daemon over DGDs already reconciled."""
    daemon = await launcher.start("restart", "the restarted daemon")
    ready: float | None = None
    spawned: float | None = None
    done: float | None = None
    controller = "controller_runtime_reconcile_total{controller=dynamographdeployment,"
    while done is None and daemon.elapsed() <= args.cold_timeout:
        samples = await daemon.metrics(session)
        if ready is None and await daemon.ready(session):
            ready = daemon.elapsed()
        if spawned is None and samples.get("dgd_actors{kind=DGDActor}", 0) >= args.dgds:
            spawned = daemon.elapsed()
        if total(samples, controller) >= args.dgds:
            done = daemon.elapsed()
        await anyio.sleep(args.poll)
    samples = await daemon.metrics(session)
    emit("restart.ready", ready if ready is not None else float("nan"), "s (caches synced)")
    emit("restart.actors_spawned", spawned if spawned is not None else float("nan"), "s")
    emit("restart.reconciled", done if done is not None else float("nan"), "s (as many reconciles as DGDs)")
    emit("restart.rss_after", daemon.memory() / 2**20, "MiB")
    report(samples, "restart", args.dgds)
    code, _ = await daemon.stop()
    emit("restart.exit_code", code, "")


def report(samples: dict[str, float], phase: str, dgds: int) -> None:
    """The requests the daemon sent (by method; conflicts apart) and the DGD reconciles it ran."""
    requests = total(samples, "rest_client_requests_total")
    emit(f"{phase}.requests", requests, "requests")
    emit(f"{phase}.requests_per_dgd", requests / dgds, "requests")
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        sent = total(samples, "rest_client_requests_total{code=", method=method)
        emit(f"{phase}.requests.{method}", sent, "requests")
    emit(f"{phase}.requests.conflict_409", total(samples, "rest_client_requests_total{code=409,"), "requests")
    controller = "controller_runtime_reconcile_total{controller=dynamographdeployment,"
    succeeded = total(samples, f"{controller}result=success")
    emit(f"{phase}.dgd_reconciles.success_per_dgd", succeeded / dgds, "reconciles")
    emit(
        f"{phase}.dgd_reconciles.failed_per_dgd",
        (total(samples, controller) - succeeded) / dgds,
        "reconciles",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dgds", type=int, default=1000, help="DGDs in the cluster at start (default 1000)")
    parser.add_argument("--qps", type=float, default=20.0, help="the daemon's --qps (default 20, its own)")
    parser.add_argument("--burst", type=int, default=30, help="the daemon's --burst (default 30, its own)")
    parser.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help=f"the daemon's --max-concurrent-reconciles (default {DEFAULT_WORKERS}, its own)",
    )
    parser.add_argument("--settle", type=float, default=10.0, help="quiet seconds that mean settled")
    parser.add_argument("--poll", type=float, default=0.25, help="seconds between metrics polls")
    parser.add_argument(
        "--cold-timeout",
        type=float,
        default=3600.0,
        help="seconds the cold start may take before the run gives up on it (default 3600)",
    )
    parser.add_argument("--progress", type=float, default=60.0, help="seconds between progress lines")
    parser.add_argument("--timeout", type=float, default=3600.0, help="give up on any other wait after this")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    print("Method")
    print(f"  command:  .venv/bin/python bench/daemon.py {' '.join(sys.argv[1:])}")
    print(f"  python:   {platform.python_implementation()} {platform.python_version()}")
    print(f"  machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}, {platform.system()}")
    print(
        f"  daemon:   dgd-operator run --qps {args.qps:g} --burst {args.burst} "
        f"--max-concurrent-reconciles {args.workers} against sim serve --no-world"
    )
    print(f"  DGDs:     {args.dgds} x examples/agg.yaml; settled: {args.settle:g}s with no reconcile")
    with tempfile.TemporaryDirectory(prefix="dgd-bench-") as directory:
        workdir = Path(directory)
        kubeconfig = workdir / "kubeconfig"
        server = subprocess.Popen(
            [
                str(EXECUTABLE),
                "sim",
                "serve",
                "--no-world",
                "--port",
                "0",
                "--write-kubeconfig",
                str(kubeconfig),
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not kubeconfig.exists():
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("sim serve did not start")
                time.sleep(0.05)
            anyio.run(bench, args, workdir, backend="asyncio", backend_options={"use_uvloop": True})
        finally:
            terminate(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
