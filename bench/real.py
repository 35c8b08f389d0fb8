"""The operator on a real API server: N upstream DGDs to ``successful``, timed, with CPU, requests and memory.

Per N, a fresh control plane of the real-server test tier (``tests/real/controlplane.py``: etcd,
kube-apiserver and kube-controller-manager, the build of ``hack/kube/build.sh``), with an audit log
of request metadata (see below) and a /16 service range (the tier's /24 holds 254 ClusterIPs, and each
DGD here makes two Services); ``real_plane.py``. Steps:

1. The CRDs of ``deploy/crds`` (ours), Grove's own from ``../shared/upstream``, and the chart's
   cluster-wide RBAC (``deploy/rbac/cluster-wide.yaml``, which holds the planner ClusterRole the operator
   binds) are applied; namespaces ``dynamo-system`` (the operator's Lease) and a fresh one for the DGDs.
2. The stand-in Grove (``standin_grove.py``: PodCliques ready ``--grove-delay`` seconds after they
   are written, no pods) runs in this process, and the operator as a subprocess on the plane's admin
   kubeconfig (``operators.py``). ``--operator dgd`` (the default): ``dgd-operator run --qps Q
   --burst B``, the rest default except webhooks off (``--webhook-addr 0``: nothing registers them
   outside a pod anyway), metrics and probes on free loopback ports; ready when ``/readyz`` answers.
   ``--operator kopf``: the minimal kopf operator of ``kopf_agg.py`` (issue 18's comparison: per DGD
   kopf's finalizer, the provider annotation, one PodCliqueSet, status ``pending`` then
   ``successful`` once its PodCliques are ready; no Services, RBAC or Events), run as ``kopf run
   --standalone --all-namespaces --liveness=... bench/kopf_agg.py`` from ``bench/.kopf-venv`` (built
   on first use from ``bench/kopf-constraints.txt``; kopf is no dependency of the project); ready
   when its liveness endpoint answers (``--qps``, ``--burst`` and ``--operator-flag`` do not apply).
   Then ``--idle`` seconds pass, and the baseline is read.
3. N copies of upstream's ``examples/backends/vllm/deploy/agg.yaml`` (named ``vllm-agg-0000``...)
   are created by ``--concurrency`` (16) creators; a watch on the DGDs notes when each first has
   ``status.state == successful`` for its generation. Create-to-successful counts from just before
   the DGD's create request was sent.

Measured: all-successful wall time (from the first create); p50/p95 create-to-successful; operator
CPU seconds (``utime + stime`` of ``/proc/<pid>/stat``, the operator process alone) from the
baseline to all-successful, per DGD; RSS (``/proc/<pid>/status``): baseline (no DGD), peak
(``VmHWM``) and settled (``VmRSS`` once the operator used no CPU for ``--quiet`` seconds after
all-successful); requests by verb/resource/subresource/code, from the baseline to settled: all clients
from the API server's ``apiserver_request_total`` (it has no client label), and the operator's alone
from the audit log (its user agent: ``OpenAPI-Generator/...`` for dgd-operator, ``kopf...`` for kopf;
this script's client sends its own, and kube-controller-manager and kubectl theirs), with the
operator's writes of DGDs (and their status), PodCliqueSets and Events summed as issue 18's table
counts them (``DGD+PCS+Ev writes``). Watches are counted when they end (both sources), so the
operator's open watches do not show.

Run from the repository root (the machine's other work shares its cores: say so with the numbers)::

    DGD_UPSTREAM_DIR=../shared/upstream .venv/bin/python bench/real.py --n 50 200 [--json out.json]
    DGD_UPSTREAM_DIR=../shared/upstream .venv/bin/python bench/real.py --n 50 200 --operator kopf
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from anyio.abc import TaskStatus
from checkout import ROOT
from machine import command, cpu_model, python
from operators import (
    KOPF_SCRIPT,
    OPERATORS,
    Launch,
    cpu_seconds,
    dgd_launch,
    kopf_launch,
    libraries_mib,
    memory_mib,
    running,
    until_quiet,
    until_ready,
)
from real_plane import NAMESPACE_NAME, AuditedControlPlane, admin, apiserver_metrics, prepared
from request_counts import TABLE_WRITES, clients, difference, from_audit, percentile, writes
from standin_grove import StandInGrove

from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import DGD
from tests.real.controlplane import ControlPlane
from tests.upstream import DYNAMO

EXAMPLE = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "agg.yaml"
DGDS = DGD.as_raw()


@dataclass
class Result:
    """One run's numbers (seconds, MiB, per-DGD counts)."""

    operator: str
    n: int
    all_successful_s: float
    p50_s: float
    p95_s: float
    first_s: float
    #: From the first create to the last one sent (how fast the load went in).
    created_s: float
    cpu_ms_per_dgd: float
    cpu_ms_per_dgd_settled: float
    baseline_rss_mib: float
    #: A fresh interpreter that imported the daemon's libraries alone (``operators.libraries_mib``).
    libraries_rss_mib: float
    peak_rss_mib: float
    settled_rss_mib: float
    operator_requests_per_dgd: float
    #: The operator's writes of DGDs (and their status), PodCliqueSets and Events, per DGD.
    table_writes_per_dgd: float
    all_requests_per_dgd: float
    load_before: float
    grove_writes: int
    #: CPU seconds from the baseline to all successful of each process on the machine's cores: the
    #: operator, the control plane's (kube-apiserver, etcd, kube-controller-manager) and this
    #: benchmark's (the load, its watch and the stand-in Grove).
    cpu_s: dict[str, float] = field(default_factory=dict)
    clients: dict[str, int] = field(default_factory=dict)
    operator_requests: dict[str, int] = field(default_factory=dict)
    all_requests: dict[str, int] = field(default_factory=dict)


# The load


class Load:
    """Creates the DGDs and watches them to ``successful``; times in ``time.monotonic`` seconds."""

    def __init__(self, kube: KubeCluster, n: int, concurrency: int) -> None:
        self.kube, self.n, self.concurrency = kube, n, concurrency
        self.sent: dict[str, float] = {}
        self.done: dict[str, float] = {}
        self.all_done = anyio.Event()

    async def create(self) -> None:
        template = next(d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and d["kind"] == DGD.kind)
        names = iter([f"vllm-agg-{i:04d}" for i in range(self.n)])

        async def creator() -> None:
            for name in names:
                body = {**template, "metadata": {"name": name, "namespace": NAMESPACE_NAME}}
                self.sent[name] = time.monotonic()
                await self.kube.create(DGDS, body)

        async with anyio.create_task_group() as tg:
            for _ in range(self.concurrency):
                tg.start_soon(creator)

    async def watch(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        while len(self.done) < self.n:
            listed = await self.kube.list(DGDS, namespace=NAMESPACE_NAME)
            for dgd in listed.items:
                self._see(dgd)
            async with self.kube.watch(
                DGDS, namespace=NAMESPACE_NAME, resource_version=listed.resource_version
            ) as watch:
                if not started:
                    started = True
                    task_status.started()
                async for event in watch:
                    if event.object is not None:
                        self._see(event.object)
                    if len(self.done) >= self.n:
                        break
        self.all_done.set()

    def _see(self, dgd: dict[str, Any]) -> None:
        name, status = dgd["metadata"]["name"], dgd.get("status") or {}
        if (
            name not in self.done
            and status.get("state") == "successful"
            and status.get("observedGeneration") == dgd["metadata"].get("generation")
        ):
            self.done[name] = time.monotonic()


# One run


async def measure(n: int, args: argparse.Namespace, folder: Path) -> Result:
    """Bring up a plane in ``folder``, take N DGDs to successful with the operator, stop everything."""
    plane = AuditedControlPlane(folder)
    plane.start()
    try:
        async with admin(plane) as kube:
            await prepared(plane, kube)
            return await _measure_on(plane, kube, n, args, folder)
    finally:
        plane.stop()


def launched(plane: ControlPlane, args: argparse.Namespace) -> Launch:
    """How to start the operator ``--operator`` names."""
    if args.operator == "kopf":
        return kopf_launch(plane.kubeconfig)
    flags = ["--qps", str(args.qps), "--burst", str(args.burst), *args.operator_flag]
    return dgd_launch(plane.kubeconfig, flags)


async def _measure_on(
    plane: AuditedControlPlane, kube: KubeCluster, n: int, args: argparse.Namespace, folder: Path
) -> Result:
    grove, load = StandInGrove(kube, NAMESPACE_NAME, args.grove_delay), Load(kube, n, args.concurrency)
    log, launch = folder / "operator.log", launched(plane, args)
    async with anyio.create_task_group() as tg:
        await tg.start(grove.run)
        await tg.start(load.watch)
        with running(launch, log) as process:
            await until_ready(process, launch, log)
            await anyio.sleep(args.idle)
            # The baseline: no DGD yet.
            load_before = os.getloadavg()[0]
            cpu0, rss0 = cpu_seconds(process.pid), memory_mib(process.pid, "VmRSS")
            pids = {"operator": process.pid, **plane.pids}
            everyone0 = {name: cpu_seconds(pid) for name, pid in pids.items()} | {"benchmark": _own_cpu()}
            metrics0, audit0 = apiserver_metrics(plane), plane.audit_log.stat().st_size
            start = time.monotonic()
            # The load, then wait for every DGD to be successful.
            tg.start_soon(load.create)
            with anyio.fail_after(args.timeout):
                await load.all_done.wait()
            end, cpu1 = time.monotonic(), cpu_seconds(process.pid)
            everyone1 = {name: cpu_seconds(pid) for name, pid in pids.items()} | {"benchmark": _own_cpu()}
            # Settled: the operator idle again.
            await until_quiet(process.pid, args.quiet, timeout=60)
            cpu2, rss2, peak = (cpu_seconds(process.pid), memory_mib(process.pid, "VmRSS"),
                                memory_mib(process.pid, "VmHWM"))  # fmt: skip
            everyone = difference(metrics0, apiserver_metrics(plane))
            audit1 = plane.audit_log.stat().st_size
        tg.cancel_scope.cancel()
    # The audit lines of the same window (the operator's watches end after it, as it stops).
    with plane.audit_log.open("rb") as audit:
        audit.seek(audit0)
        lines = audit.read(audit1 - audit0).decode().splitlines()
    ours = from_audit(lines, launch.agent)
    latencies = [load.done[name] - load.sent[name] for name in load.done]
    return Result(
        operator=args.operator,
        n=n,
        all_successful_s=end - start,
        p50_s=percentile(latencies, 50),
        p95_s=percentile(latencies, 95),
        first_s=min(load.done.values()) - start,
        created_s=max(load.sent.values()) - min(load.sent.values()),
        cpu_ms_per_dgd=(cpu1 - cpu0) * 1000 / n,
        cpu_ms_per_dgd_settled=(cpu2 - cpu0) * 1000 / n,
        baseline_rss_mib=rss0,
        libraries_rss_mib=libraries_mib(),
        peak_rss_mib=peak,
        settled_rss_mib=rss2,
        operator_requests_per_dgd=sum(ours.values()) / n,
        table_writes_per_dgd=writes(ours, TABLE_WRITES) / n,
        all_requests_per_dgd=sum(everyone.values()) / n,
        load_before=load_before,
        grove_writes=grove.written,
        cpu_s={name: round(everyone1[name] - everyone0[name], 2) for name in everyone0},
        clients=dict(clients(lines).most_common()),
        operator_requests={key.describe(): count for key, count in sorted(ours.items())},
        all_requests={key.describe(): count for key, count in sorted(everyone.items())},
    )


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# Report


def report(results: list[Result], args: argparse.Namespace) -> None:
    print("Method")
    print(f"  command:  {command()}")
    print(f"  python:   {python()}")
    print(f"  machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}, {cpu_model()}")
    print(f"  load:     {os.getloadavg()[0]:.2f} now (other work shares these cores)")
    print(f"  operator: {operator_line(args)}")
    print(f"  DGDs:     N x {EXAMPLE.relative_to(DYNAMO.parent)}, {args.concurrency} creates at a time; "
          f"stand-in Grove delay {args.grove_delay:g}s")  # fmt: skip
    print()
    print(f"{'N':>5} {'all s':>7} {'created s':>9} {'first s':>7} {'p50 s':>7} {'p95 s':>7} "
          f"{'CPU ms/DGD':>10} "
          f"{'(settled)':>9} {'op req/DGD':>10} {'DGD+PCS+Ev writes':>17} {'all req/DGD':>11} "
          f"{'libs MiB':>8} {'base MiB':>8} {'peak MiB':>8} "
          f"{'settled MiB':>11} {'load':>5}")  # fmt: skip
    for r in results:
        print(f"{r.n:>5} {r.all_successful_s:>7.1f} {r.created_s:>9.1f} {r.first_s:>7.1f} {r.p50_s:>7.1f} "
              f"{r.p95_s:>7.1f} "
              f"{r.cpu_ms_per_dgd:>10.1f} {r.cpu_ms_per_dgd_settled:>9.1f} "
              f"{r.operator_requests_per_dgd:>10.2f} {r.table_writes_per_dgd:>17.2f} "
              f"{r.all_requests_per_dgd:>11.2f} "
              f"{r.libraries_rss_mib:>8.1f} {r.baseline_rss_mib:>8.1f} {r.peak_rss_mib:>8.1f} "
              f"{r.settled_rss_mib:>11.1f} "
              f"{r.load_before:>5.2f}")  # fmt: skip
    for r in results:
        cores = (os.cpu_count() or 1) * r.all_successful_s
        print(f"\nCPU s from the baseline to all successful at N={r.n} (the cores offered {cores:.1f}): "
              + ", ".join(f"{name} {seconds:.1f}" for name, seconds in r.cpu_s.items())
              + f"; together {sum(r.cpu_s.values()):.1f}")  # fmt: skip
    for r in results:
        print(f"\nrequests per DGD at N={r.n}: the operator's (audit log) and all clients' "
              "(apiserver_request_total)")  # fmt: skip
        print("  by client (audit log, user agent): " + ", ".join(f"{a} {c}" for a, c in r.clients.items()))
        keys = sorted(set(r.operator_requests) | set(r.all_requests))
        for key in keys:
            print(f"  {key:<48} {r.operator_requests.get(key, 0) / r.n:>8.2f} "
                  f"{r.all_requests.get(key, 0) / r.n:>8.2f}")  # fmt: skip


def operator_line(args: argparse.Namespace) -> str:
    if args.operator == "kopf":
        return (f"kopf run --standalone --all-namespaces {KOPF_SCRIPT.relative_to(ROOT)} "
                "(bench/.kopf-venv, bench/kopf-constraints.txt; Events off)")  # fmt: skip
    return (f"dgd-operator run --qps {args.qps} --burst {args.burst} --webhook-addr 0 "
            f"{' '.join(args.operator_flag)}").rstrip()  # fmt: skip


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--n", type=int, nargs="+", default=[50], help="DGD counts, one run each (default 50)"
    )
    parser.add_argument("--operator", choices=OPERATORS, default="dgd",
                        help="dgd: `dgd-operator run` (the default); kopf: the minimal kopf operator of "
                        "bench/kopf_agg.py, from bench/.kopf-venv (built on first use)")  # fmt: skip
    parser.add_argument("--grove-delay", type=float, default=0.5, help="seconds to PodClique ready (0.5)")
    parser.add_argument("--concurrency", type=int, default=16, help="creates at a time (16)")
    parser.add_argument("--qps", type=float, default=1000, help="dgd-operator's --qps (1000)")
    parser.add_argument("--burst", type=int, default=1000, help="dgd-operator's --burst (1000)")
    parser.add_argument("--operator-flag", action="append", default=[], metavar="FLAG",
                        help="one more argument for `dgd-operator run`, written "
                        "--operator-flag=--max-concurrent-reconciles=20 (repeat)")  # fmt: skip
    parser.add_argument("--idle", type=float, default=3, help="seconds from ready to the baseline (3)")
    parser.add_argument(
        "--quiet", type=float, default=3, help="seconds without operator CPU that count as settled (3)"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for all successful (900)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep each run's state (logs, audit log, operator log) under DIR/n-<N>; "
                        "the processes are stopped either way")  # fmt: skip
    args = parser.parse_args()
    if args.operator == "kopf" and args.operator_flag:
        parser.error(f"--operator-flag {args.operator_flag} is for `dgd-operator run`; "
                     "--operator kopf runs bench/kopf_agg.py as it is")  # fmt: skip
    return args


def main() -> None:
    args = arguments()
    results = []
    with tempfile.TemporaryDirectory(prefix="dgd-bench-real-") as scratch:
        base = args.keep if args.keep is not None else Path(scratch)
        for n in args.n:
            results.append(anyio.run(measure, n, args, base / f"n-{n}"))
            print(f"N={n} ({args.operator}): all successful in {results[-1].all_successful_s:.1f}s",
                  file=sys.stderr)  # fmt: skip
    report(results, args)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
