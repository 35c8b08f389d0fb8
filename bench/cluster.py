"""Throughput of the memory cluster adapter: create, get, merge patch, status update, watch fan-out.

Every operation goes through the port (``dgd.cluster.memory.adapter.MemoryCluster``) exactly as an actor
would call it: Struct in, JSON stored, Struct out, one event-loop turn per request, no faults. The
object is an upstream DynamoGraphDeployment (``examples/backends/vllm/deploy/disagg.yaml``, 3
components with pod templates) when the upstream tree is present, else a small synthetic one.

Run from the repository root: ``.venv/bin/python bench/cluster.py``.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version

import anyio
import checkout  # noqa: F401  (the repository first on sys.path)
import msgspec
from machine import command, cpu_model, python

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD
from dgd.messages.dgd import API_VERSION, DGDSpec, DGDStatus, DynamoGraphDeployment
from dgd.messages.meta import ObjectMeta
from tests.upstream import DYNAMO, load_documents

NAMESPACE = "bench"
EXAMPLE = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "disagg.yaml"

Run = Callable[[int], Awaitable[float]]


def template() -> tuple[DynamoGraphDeployment, str]:
    """The DGD every operation uses, and where it came from."""
    if EXAMPLE.exists():
        document = next(doc for doc in load_documents(EXAMPLE) if doc.get("kind") == "DynamoGraphDeployment")
        if document.get("apiVersion") == API_VERSION:
            graph = msgspec.convert(document, DynamoGraphDeployment)
            return (
                graph,
                f"{EXAMPLE.relative_to(DYNAMO.parent)} ({len(msgspec.json.encode(document))} JSON bytes)",
            )
    graph = DynamoGraphDeployment(api_version=API_VERSION, metadata=ObjectMeta(), spec=DGDSpec())
    return graph, "synthetic DGD without components"


def named(graph: DynamoGraphDeployment, index: int) -> DynamoGraphDeployment:
    return msgspec.structs.replace(graph, metadata=ObjectMeta(name=f"graph-{index:05d}", namespace=NAMESPACE))


async def filled(graph: DynamoGraphDeployment, count: int) -> MemoryCluster:
    cluster = MemoryCluster(namespaces=(NAMESPACE,))
    for index in range(count):
        await cluster.create(DGD, named(graph, index))
    return cluster


def operations(graph: DynamoGraphDeployment, population: int) -> dict[str, Run]:
    """One timed function per operation: runs ``n`` operations, returns the seconds they took."""

    async def create(n: int) -> float:
        cluster, bodies = MemoryCluster(namespaces=(NAMESPACE,)), [named(graph, index) for index in range(n)]
        start = time.perf_counter()
        for body in bodies:
            await cluster.create(DGD, body)
        return time.perf_counter() - start

    async def get(n: int) -> float:
        cluster = await filled(graph, population)
        keys = [DGD.key(NAMESPACE, f"graph-{index % population:05d}") for index in range(n)]
        start = time.perf_counter()
        for key in keys:
            await cluster.get(key)
        return time.perf_counter() - start

    async def merge_patch(n: int) -> float:
        cluster = await filled(graph, population)
        keys = [DGD.key(NAMESPACE, f"graph-{index % population:05d}") for index in range(n)]
        patches = [{"spec": {"annotations": {"bench/round": str(index)}}} for index in range(n)]
        start = time.perf_counter()
        for key, patch in zip(keys, patches, strict=True):
            await cluster.patch(key, patch)
        return time.perf_counter() - start

    async def status_update(n: int) -> float:
        cluster = await filled(graph, population)
        current = [await cluster.get(DGD.key(NAMESPACE, f"graph-{index:05d}")) for index in range(population)]
        statuses = [DGDStatus(state="pending", observed_generation=index) for index in range(n)]
        start = time.perf_counter()
        for index, status in enumerate(statuses):
            slot = index % population
            current[slot] = await cluster.replace_status(
                DGD, msgspec.structs.replace(current[slot], status=status)
            )
        return time.perf_counter() - start

    return {
        "create": create,
        "get": get,
        "merge patch": merge_patch,
        "status update": status_update,
    }


async def fan_out(graph: DynamoGraphDeployment, watchers: int, writes: int) -> float:
    """Seconds from the first of ``writes`` patches until each of ``watchers`` watches got them all."""
    cluster = await filled(graph, 1)
    key = DGD.key(NAMESPACE, "graph-00000")
    start_version = cluster.resource_version
    ready = anyio.Event()
    opened = 0

    async def watch() -> None:
        nonlocal opened
        async with cluster.watch(DGD, namespace=NAMESPACE, resource_version=start_version) as events:
            opened += 1
            if opened == watchers:
                ready.set()
            seen = 0
            async for _ in events:
                seen += 1
                if seen == writes:
                    return

    async with anyio.create_task_group() as group:
        for _ in range(watchers):
            group.start_soon(watch)
        await ready.wait()
        start = time.perf_counter()
        for index in range(writes):
            await cluster.patch(key, {"spec": {"annotations": {"bench/round": str(index)}}})
    return time.perf_counter() - start


def best(run: Callable[[], Awaitable[float]], rounds: int, use_uvloop: bool) -> float:
    return min(anyio.run(run, backend_options={"use_uvloop": use_uvloop}) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="operations per round")
    parser.add_argument("--population", type=int, default=500, help="objects stored for get/patch/status")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per measurement; the best counts")
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=100, help="writes each watcher must receive")
    args = parser.parse_args()
    graph, source = template()
    loops = {"asyncio": False, "uvloop": True}

    print("Method")
    print(f"  command:     {command()}")
    print(f"  python:      {python()}")
    versions = f"anyio {version('anyio')}, msgspec {msgspec.__version__}, uvloop {version('uvloop')}"
    print(f"  libraries:   {versions}")
    print(f"  machine:     {platform.machine()}, cpu_count() = {os.cpu_count()}, cpu model: {cpu_model()}")
    print(f"  system:      {platform.system()} {platform.release()}")
    print(f"  object:      {source}")
    print(f"  operations:  {args.ops} sequential awaited calls per round, best of {args.rounds} rounds;")
    print(f"               get/patch/status cycle over {args.population} stored DGDs; each patch and")
    print("               status update is a real write (new resourceVersion and watch event)")
    print(f"  fan-out:     {args.watchers} watch tasks from one resourceVersion, {args.writes} merge")
    print("               patches, timed from the first write until every watcher has every event")
    print("  timing:      time.perf_counter around the calls only (setup excluded)")
    print()
    header = f"{'operation':<34} {'loop':<8} {'ops/s':>10} {'us/op':>8}"
    print(header)
    print("-" * len(header))
    for name, operation in operations(graph, args.population).items():
        for loop, use_uvloop in loops.items():
            seconds = best(functools.partial(operation, args.ops), args.rounds, use_uvloop)
            print(row(name, loop, args.ops, seconds))
    for loop, use_uvloop in loops.items():
        run = functools.partial(fan_out, graph, args.watchers, args.writes)
        seconds = best(run, max(1, args.rounds // 2), use_uvloop)
        print(row(f"watch fan-out, {args.watchers} watchers", loop, args.writes, seconds, "writes"))
        print(row("", loop, args.watchers * args.writes, seconds, "events delivered"))


def row(label: str, loop: str, count: int, seconds: float, unit: str = "") -> str:
    line = f"{label:<34} {loop:<8} {count / seconds:>10,.0f} {seconds / count * 1e6:>8.1f}"
    return f"{line}  {unit}" if unit else line


if __name__ == "__main__":
    main()
