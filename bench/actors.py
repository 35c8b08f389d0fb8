"""The actor runtime's cost: tell and ask against bare asyncio.Queue baselines, memory per idle actor.

In one process and on the same event loop (plain asyncio, then uvloop), it measures:

* tell: one producer sends N messages to one consumer through a bounded buffer of 1000, and the
  consumer counts them. Baseline: ``await queue.put`` / ``await queue.get`` on an
  ``asyncio.Queue(maxsize=1000)`` and a consumer task. Ours: ``await ref.tell`` to an actor with a
  1000-message blocking mailbox. The time runs from the first send until the last message was
  counted.
* ask: K sequential round trips. Baseline: a two-queue ping-pong (``put`` on one queue, the server
  task ``get``s and ``put``s the answer on the other). Ours: ``await ref.ask(request)`` with the
  default 30-second timeout, the actor returning a typed reply.
* memory: tracemalloc's traced bytes (after ``gc.collect``) for N idle actors started under a
  dynamic supervisor, divided by N: everything one supervised actor holds (its task, its anyio task
  handle and cancel scope, cell, mailbox, spec, registry entry). Measured fresh and again after
  every actor answered one ask.
* scale: 100,000 actors started one by one under a dynamic supervisor (``ask(StartChild)``), then a
  graceful ``shutdown``; counts the tasks left afterwards.

Throughput rounds alternate baseline and actor, and each number is the best of ``--rounds``; the
ratio is actor rate / baseline rate. Every line is ``name value unit``; the targets are checked at
the end and a missed one is printed as MISSED with its value.

Run from the repository root: ``.venv/bin/python bench/actors.py`` (``make bench`` runs it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import anyio
import checkout  # noqa: F401  (the repository first on sys.path)
import msgspec
from machine import command, python

from dgd.runtime import (
    Actor,
    ActorSystem,
    ChildSpec,
    DynamicSupervisor,
    MailboxConfig,
    Ref,
    Request,
    StartChild,
    Started,
)

CAPACITY = 1000


class Ping(msgspec.Struct, frozen=True):
    pass


class Pong(msgspec.Struct, frozen=True):
    pass


class PingAsk(Request[Pong], frozen=True):
    pass


PING = Ping()
PONG = Pong()
PING_ASK = PingAsk()


@dataclass
class Tally:
    """The consumer's work, the same for the baseline and the actor: count, and say when done."""

    target: int = 0
    count: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def reset(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.done = asyncio.Event()

    def hit(self) -> None:
        self.count += 1
        if self.count == self.target:
            self.done.set()


class Sink(Actor[Ping | PingAsk]):
    mailbox = MailboxConfig(capacity=CAPACITY)

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    async def receive(self, message: Ping | PingAsk) -> Pong | None:
        self.tally.hit()
        return PONG if type(message) is PingAsk else None


class Idle(Actor[Ping | PingAsk]):
    async def receive(self, message: Ping | PingAsk) -> Pong | None:
        return PONG if type(message) is PingAsk else None


# -- throughput ------------------------------------------------------------------------------------


async def queue_tell(tally: Tally, n: int) -> float:
    queue: asyncio.Queue[Ping] = asyncio.Queue(maxsize=CAPACITY)

    async def consume() -> None:
        while True:
            await queue.get()
            tally.hit()

    tally.reset(n)
    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        start = time.perf_counter()
        for _ in range(n):
            await queue.put(PING)
        await tally.done.wait()
        seconds = time.perf_counter() - start
        tg.cancel_scope.cancel()
    return seconds


async def actor_tell(ref: Ref[Ping | PingAsk], tally: Tally, n: int) -> float:
    tally.reset(n)
    start = time.perf_counter()
    for _ in range(n):
        await ref.tell(PING)
    await tally.done.wait()
    return time.perf_counter() - start


async def queue_ping_pong(k: int) -> float:
    requests: asyncio.Queue[PingAsk] = asyncio.Queue()
    replies: asyncio.Queue[Pong] = asyncio.Queue()

    async def serve() -> None:
        while True:
            await requests.get()
            await replies.put(PONG)

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        start = time.perf_counter()
        for _ in range(k):
            await requests.put(PING_ASK)
            await replies.get()
        seconds = time.perf_counter() - start
        tg.cancel_scope.cancel()
    return seconds


async def actor_ask(ref: Ref[Ping | PingAsk], k: int) -> float:
    start = time.perf_counter()
    for _ in range(k):
        await ref.ask(PING_ASK)
    return time.perf_counter() - start


async def best_of(rounds: int, *measures: Callable[[], Awaitable[float]]) -> list[float]:
    """The best seconds of each measure over ``rounds`` rounds, the measures alternating."""
    best = [float("inf")] * len(measures)
    for _ in range(rounds):
        for index, measure in enumerate(measures):
            best[index] = min(best[index], await measure())
    return best


# -- footprint and scale ---------------------------------------------------------------------------------


async def idle_memory(n: int) -> tuple[float, float]:
    """Traced bytes per idle supervised actor: freshly started, and after each answered one ask."""
    async with ActorSystem([ChildSpec("idle", DynamicSupervisor)]) as system:
        supervisor = system.ref("/idle")
        for index in range(100):  # warm up: code objects, caches, first allocations
            await supervisor.ask(StartChild(ChildSpec(f"warm-{index}", Idle)))
        gc.collect()
        tracemalloc.start()
        before, _ = tracemalloc.get_traced_memory()
        refs: list[Ref[Any]] = []
        for index in range(n):
            started = await supervisor.ask(StartChild(ChildSpec(f"actor-{index}", Idle)))
            assert isinstance(started, Started)
            refs.append(started.ref)
        gc.collect()
        fresh, _ = tracemalloc.get_traced_memory()
        for ref in refs:
            await ref.ask(PING_ASK)
        gc.collect()
        used, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # The list of refs is the benchmark's, not the actors'.
        own = sys.getsizeof(refs) + sum(sys.getsizeof(ref) for ref in refs)
        return (fresh - before - own) / n, (used - before - own) / n


async def spawn_and_shut_down(n: int) -> tuple[float, float, int, int]:
    """Seconds to start n actors one by one, seconds to shut down, tasks alive at peak and after."""
    tasks_before = len(asyncio.all_tasks())
    async with ActorSystem([ChildSpec("dgds", DynamicSupervisor)], shutdown_timeout=120) as system:
        supervisor = system.ref("/dgds")
        start = time.perf_counter()
        for index in range(n):
            await supervisor.ask(StartChild(ChildSpec(f"ns/dgd-{index}", Idle)))
        spawned = time.perf_counter() - start
        peak = len(asyncio.all_tasks()) - tasks_before
        start = time.perf_counter()
        await system.shutdown()
        stopped = time.perf_counter() - start
    left = len(asyncio.all_tasks()) - tasks_before
    return spawned, stopped, peak, left


# -- the run ---------------------------------------------------------------------------------------


@dataclass
class Report:
    lines: list[tuple[str, float, str]] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str) -> None:
        self.lines.append((name, value, unit))
        print(f"{name} {_show(value)} {unit}", flush=True)

    def value(self, name: str) -> float:
        return next(value for line, value, _ in self.lines if line == name)


async def run(loop: str, options: argparse.Namespace, report: Report) -> None:
    tally = Tally()
    async with ActorSystem([ChildSpec("sink", lambda: Sink(tally))]) as system:
        sink = system.ref("/sink")
        await best_of(1, lambda: queue_tell(tally, 10_000), lambda: actor_tell(sink, tally, 10_000))
        n, k = options.messages, options.asks
        queue_s, actor_s = await best_of(
            options.rounds, lambda: queue_tell(tally, n), lambda: actor_tell(sink, tally, n)
        )
        report.add(f"tell.queue[{loop}]", n / queue_s, "msg/s")
        report.add(f"tell.actor[{loop}]", n / actor_s, "msg/s")
        report.add(f"tell.ratio[{loop}]", queue_s / actor_s, "x")
        pong_s, ask_s = await best_of(options.rounds, lambda: queue_ping_pong(k), lambda: actor_ask(sink, k))
        report.add(f"ask.ping_pong[{loop}]", k / pong_s, "round-trips/s")
        report.add(f"ask.actor[{loop}]", k / ask_s, "round-trips/s")
        report.add(f"ask.ratio[{loop}]", pong_s / ask_s, "x")
        report.add(f"ask.latency[{loop}]", ask_s / k * 1e6, "us")
    fresh, used = await idle_memory(options.idle)
    report.add(f"memory.idle_actor[{loop}]", fresh, "B/actor")
    report.add(f"memory.idle_actor_after_ask[{loop}]", used, "B/actor")
    spawned, stopped, peak, left = await spawn_and_shut_down(options.spawn)
    report.add(f"scale.spawned[{loop}]", options.spawn, "actors")
    report.add(f"scale.spawn_time[{loop}]", spawned, "s")
    report.add(f"scale.spawn_rate[{loop}]", options.spawn / spawned, "actors/s")
    report.add(f"scale.peak_tasks[{loop}]", peak, "tasks")
    report.add(f"scale.shutdown_time[{loop}]", stopped, "s")
    report.add(f"scale.tasks_left[{loop}]", left, "tasks")


def check_targets(report: Report, loops: list[str], spawn: int) -> int:
    """Print every target with its measured value; the number of targets missed."""
    missed = 0
    for loop in loops:
        checks = [
            (f"tell.ratio[{loop}]", ">=", 0.5),
            (f"ask.ratio[{loop}]", ">=", 0.3),
            (f"memory.idle_actor[{loop}]", "<=", 6 * 1024),
            (f"memory.idle_actor_after_ask[{loop}]", "<=", 6 * 1024),
            (f"scale.peak_tasks[{loop}]", ">=", spawn),
            (f"scale.tasks_left[{loop}]", "<=", 0),
        ]
        for name, op, bound in checks:
            value = report.value(name)
            met = value >= bound if op == ">=" else value <= bound
            missed += not met
            print(f"target {name} {op} {bound:g}: {_show(value)} {'met' if met else 'MISSED'}")
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=["asyncio", "uvloop", "both"], default="both")
    parser.add_argument(
        "--rounds", type=int, default=7, help="rounds per throughput measure; the best counts"
    )
    parser.add_argument("--messages", type=int, default=200_000, help="messages per tell round")
    parser.add_argument("--asks", type=int, default=50_000, help="round trips per ask round")
    parser.add_argument("--idle", type=int, default=10_000, help="idle actors for the memory measure")
    parser.add_argument("--spawn", type=int, default=100_000, help="actors spawned and shut down")
    options = parser.parse_args()
    loops = ["asyncio", "uvloop"] if options.loop == "both" else [options.loop]

    print("Method")
    print(f"  command:  {command()}")
    print(f"  python:   {python()}")
    print(f"  anyio:    {version('anyio')}")
    print(f"  uvloop:   {version('uvloop')}")
    print(f"  machine:  {platform.machine()}, cpu_count() = {os.cpu_count()}")
    print(
        f"  rounds:   best of {options.rounds}; tell {options.messages} msgs, ask {options.asks} round trips"
    )
    report = Report()
    for loop in loops:
        anyio.run(
            run, loop, options, report, backend="asyncio", backend_options={"use_uvloop": loop == "uvloop"}
        )
    missed = check_targets(report, loops, options.spawn)
    print(f"targets missed: {missed}")


def _show(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.3g}"


if __name__ == "__main__":
    main()
