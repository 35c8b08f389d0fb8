"""Fault plans: what a chaos schedule breaks, and when (Sieve's three patterns, and three more).

Each plan draws the faults of one ``Schedule`` (``chaos_schedule``) from the workload and the
write points of its fault-free run, from its own seeded generator:

* ``crash-after-write`` — one schedule per distinct write point of the fault-free run (verb,
  resource, subresource, actor role; ``chaos_writes``): the writer is killed right after one of the
  writes at that point (a seeded choice among them), then restarted by its supervisor with the
  cluster in the state the interrupted reconcile left.
* ``unobserved-state`` — watches of chosen kinds end or expire (410 Gone: a re-list that skips the
  states in between) at instants when the fault-free run changed things.
* ``stale-state`` — reads of a kind are served from an older resourceVersion for a window, and within
  it the operator is made to read afresh: the kind's watch expires, its informer or a DGD actor is
  killed (a restart that rebuilds from stale reads).
* ``random`` — actors killed at random times, and API requests failing at random rates or counts.
* ``poison`` — objects the operator's model refuses (a field of the wrong type, as a CRD newer or
  looser than our Structs would admit) are stored, of every kind the operator decodes, at instants
  the fault-free run changed things: every graph still converges.
* ``crash-loop`` — the reconcile of a share of the graphs raises for ever (an exception that is no API
  error, at their status write, from the start): every other graph converges, and none of it restarts
  the operator.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Literal

from dgd.cluster.resources import (
    DCD,
    DGD,
    DGDSA,
    EVENT,
    PCLQ,
    PCS,
    PCSG,
    POD,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    Resource,
)
from dgd.domain.adapters import adapter_name
from dgd.messages.trace import (
    ApiFault,
    Apply,
    ErrorName,
    Kill,
    Poison,
    StaleReads,
    Verb,
    WatchDrop,
    WatchExpire,
)
from dgd.sim.chaos_schedule import CrashAfterWrite, Fault, Plan
from dgd.sim.chaos_workload import Graph, Workload
from dgd.sim.chaos_writes import Write
from dgd.sim.poison import POISONABLE

#: The share of a workload's graphs the crash-loop plan breaks (at least one, never all but one of two).
CRASHING_SHARE = 0.5

#: Cluster seconds within which faults start.
FAULTS_UNTIL = 180.0

#: The operator's actor tree (``dgd.actors.tree``), as kill targets.
DGDS, ADAPTERS, INFORMERS, ROUTER = (
    "/operator/dgds",
    "/operator/adapters",
    "/operator/informers",
    "/operator/router",
)
#: The children a DGD actor runs on each pathway.
CHILDREN = {
    "grove": (
        "shared-resources",
        "checkpoint-storage",
        "restart",
        "scaling-adapters",
        "grove-scaler",
        "topology-status",
    ),
    "component": ("shared-resources", "checkpoint-storage", "restart", "scaling-adapters", "rollout"),
}
#: Kinds whose watches the faults end, expire or serve stale.
WATCHED: tuple[Resource[Any], ...] = (DGD, DGDSA, DCD, PCS, PCLQ, PCSG, POD, SERVICE)
#: The kinds the poison plan stores undecodable objects of, in a fixed order.
POISONED: tuple[Resource[Any], ...] = tuple(
    k for k in (DGD, DGDSA, DCD, PCS, PCLQ, PCSG) if k.kind in POISONABLE
)
#: Kinds whose requests the random plan fails.
WRITTEN: tuple[Resource[Any], ...] = (
    DGD,
    DGDSA,
    DCD,
    PCS,
    SERVICE,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    EVENT,
)
ERRORS: tuple[ErrorName, ...] = ("ServerError", "Conflict", "Timeout", "TooManyRequests")
VERBS: tuple[Verb | Literal["*"], ...] = ("create", "update", "patch", "delete", "get", "list", "*")


# The plans.


def crash_points(seed: int, writes: list[Write]) -> list[CrashAfterWrite]:
    """One crash per distinct write point of a fault-free run (in the order each point was first
    reached), after one of its writes chosen by ``seed``."""
    rng = random.Random(f"crash-after-write:{seed}")
    by_kind: dict[tuple[str, str, str, str], list[Write]] = {}
    for write in writes:
        by_kind.setdefault(write.point.kind, []).append(write)
    crashes = []
    for occurrences in by_kind.values():
        chosen = occurrences[rng.randrange(len(occurrences))]
        crashes.append(CrashAfterWrite(chosen.point, chosen.nth, round(chosen.at, 3)))
    return crashes


def unobserved_state(seed: int, workload: Workload, writes: list[Write]) -> list[Fault]:
    """One to four watch drops or expiries, at instants the fault-free run changed things."""

    def watch_end(rng: random.Random, instants: list[float]) -> list[Fault]:
        at = rng.choice(instants)
        resource = rng.choice([*(str(r) for r in WATCHED), "*"])
        return [
            WatchExpire(at=at, resource=resource)
            if rng.random() < 0.7
            else WatchDrop(at=at, resource=resource)
        ]

    return _drawn("unobserved-state", seed, workload, writes, (1, 4), watch_end)


def stale_state(seed: int, workload: Workload, writes: list[Write]) -> list[Fault]:
    """One or two windows of stale reads, each with a fresh read forced inside it."""

    def stale_window(rng: random.Random, instants: list[float]) -> list[Fault]:
        resource = rng.choice(WATCHED)
        at = rng.choice(instants)
        duration = _time(rng.uniform(5.0, 60.0))
        window = StaleReads(at=at, resource=str(resource), behind=rng.randint(1, 8), duration=duration)
        # The fresh read: the watch expires, its informer restarts, or a DGD actor restarts.
        inside = _time(at + rng.uniform(0.0, duration))
        choice = rng.random()
        if choice < 0.4:
            return [window, WatchExpire(at=inside, resource=str(resource))]
        if choice < 0.7:
            return [window, Kill(at=inside, path=f"{INFORMERS}/{resource.plural}")]
        return [window, Kill(at=inside, path=_dgd_path(rng, workload))]

    return _drawn("stale-state", seed, workload, writes, (1, 2), stale_window)


def random_faults(seed: int, workload: Workload, writes: list[Write]) -> list[Fault]:
    """Two to eight kills of operator actors and up to two API error windows: half of them at the
    instants the fault-free run wrote at, or aimed at one of its writes; the others anywhere."""
    rng = random.Random(f"random:{seed}")
    instants = _busy(writes, workload)
    targets = kill_targets(workload)
    faults: list[Fault] = []
    for _ in range(rng.randint(2, 8)):
        at = rng.choice(instants) if rng.random() < 0.5 else _time(rng.uniform(0.0, FAULTS_UNTIL))
        faults.append(Kill(at=at, path=rng.choice(targets)))
    for _ in range(rng.randint(0, 2)):
        faults.append(_api_fault(rng, writes))
    faults.sort(key=lambda fault: fault.at)
    return faults


def _api_fault(rng: random.Random, writes: list[Write]) -> ApiFault:
    """Requests failing: like one of the fault-free run's writes, from just before it, or any of a
    verb on a resource from a random time."""
    error = rng.choice(ERRORS)
    if writes and rng.random() < 0.6:
        write = rng.choice(writes)
        point = write.point
        at = round(max(write.at - 0.05, 0.0), 3)
        verb: Verb | Literal["*"] = point.verb
        resource, subresource = point.resource, point.subresource or None
    else:
        at = _time(rng.uniform(0.0, FAULTS_UNTIL))
        verb = rng.choice(VERBS)
        resource = str(rng.choice(WRITTEN)) if rng.random() < 0.8 else "*"
        subresource = None
    if rng.random() < 0.5:
        return ApiFault(
            at=at, verb=verb, resource=resource, subresource=subresource, error=error, count=rng.randint(1, 3)
        )
    until = _time(at + rng.uniform(5.0, 60.0))
    rate = round(rng.uniform(0.05, 0.3), 2)
    return ApiFault(
        at=at, verb=verb, resource=resource, subresource=subresource, error=error, rate=rate, until=until
    )


def poison(seed: int, workload: Workload, writes: list[Write]) -> list[Fault]:
    """One undecodable object of each kind the operator decodes, each stored at an instant the
    fault-free run changed things (in the workload's first namespace)."""
    rng = random.Random(f"poison:{seed}")
    instants = _busy(writes, workload)
    namespace = (workload.graphs[0].ref.namespace if workload.graphs else None) or "default"
    faults: list[Fault] = [
        Poison(at=rng.choice(instants), resource=str(kind), namespace=namespace, name=f"poison-{number}")
        for number, kind in enumerate(POISONED)
    ]
    faults.sort(key=lambda fault: fault.at)
    return faults


def crash_loop(seed: int, workload: Workload, writes: list[Write]) -> list[Fault]:
    """The status write of ``CRASHING_SHARE`` of the graphs (drawn by ``seed``) raises a ``Bug`` from
    the start, for ever: their reconciles always fail on an exception that is no API error."""
    rng = random.Random(f"crash-loop:{seed}")
    graphs = list(workload.graphs)
    chosen = rng.sample(graphs, max(1, int(len(graphs) * CRASHING_SHARE))) if graphs else []
    return [
        ApiFault(
            at=0.0, verb="patch", resource=str(DGD), subresource="status", name=graph.ref.name, error="Bug"
        )
        for graph in sorted(chosen, key=lambda graph: graph.ref.name)
    ]


GENERATORS: dict[Plan, Callable[[int, Workload, list[Write]], list[Fault]]] = {
    "unobserved-state": unobserved_state,
    "stale-state": stale_state,
    "random": random_faults,
    "poison": poison,
    "crash-loop": crash_loop,
}


def kill_targets(workload: Workload) -> list[str]:
    """Every operator actor a kill may aim at: the graphs' actors and their children, their scaling
    adapters' actors, the informers of the watched kinds, the router, and all DGD actors at once."""
    targets: list[str] = []
    for graph in workload.graphs:
        actor = f"{DGDS}/{graph.ref.namespace}/{graph.ref.name}"
        targets.append(actor)
        targets += [f"{actor}/{child}" for child in CHILDREN[graph.pathway]]
        targets += [f"{ADAPTERS}/{graph.ref.namespace}/{name}" for name in _adapters(workload, graph)]
    targets += [f"{INFORMERS}/{resource.plural}" for resource in WATCHED]
    targets += [ROUTER, f"{DGDS}/default/*"]
    return targets


def _adapters(workload: Workload, graph: Graph) -> list[str]:
    """The names of the scaling adapters ``graph`` asks for."""
    for action in workload.actions:
        if isinstance(action, Apply) and action.object["metadata"]["name"] == graph.ref.name:
            components = action.object["spec"].get("components") or []
            return [adapter_name(graph.ref.name, c["name"]) for c in components if "scalingAdapter" in c]
    return []


def _dgd_path(rng: random.Random, workload: Workload) -> str:
    graph = rng.choice(workload.graphs)
    return f"{DGDS}/{graph.ref.namespace}/{graph.ref.name}"


def _drawn(
    plan: Plan,
    seed: int,
    workload: Workload,
    writes: list[Write],
    times: tuple[int, int],
    draw: Callable[[random.Random, list[float]], list[Fault]],
) -> list[Fault]:
    """The faults of ``times[0]`` to ``times[1]`` calls of ``draw``, in call order. Every draw comes from
    the plan's own random source (seeded with the plan's name and ``seed``, so one seed gives one
    plan) and is given the instants the fault-free run changed things at (``_busy``)."""
    rng = random.Random(f"{plan}:{seed}")
    instants = _busy(writes, workload)
    return [fault for _ in range(rng.randint(*times)) for fault in draw(rng, instants)]


def _busy(writes: list[Write], workload: Workload) -> list[float]:
    """The instants the fault-free run wrote at, and the user's actions' (sorted, no repeats)."""
    instants = {round(write.at, 3) for write in writes} | {action.at for action in workload.actions}
    return sorted(instants)


def _time(seconds: float) -> float:
    return round(seconds, 1)
