"""Chaos: Component-pathway rollouts converge while DGD actors are killed, and nothing happens twice.

Thirty DGDs (aggregated and disaggregated vLLM graphs that opt out of Grove, so each runs one
DynamoComponentDeployment per component) are applied and become successful. Then every one of them
gets a new worker image, which starts one managed rolling update each (dgd-domain §12). While the
rollouts are in flight, a random DGD actor or one of its children (``rollout``, ``shared-resources``,
...) is killed every half second or so of cluster time, and a few of the operator's writes of DCDs
and DGDs fail. Watches on the API record what a user would see. Once the kills and faults stop:

* every DGD converges: successful, ``observedGeneration == generation``, its rollout ``Completed``
  on the new worker hash, one worker DCD per worker component, of that hash;
* no DCD name was ever created twice (an old generation is never resurrected, a new one never made
  twice);
* ``RollingUpdateStarted`` and ``RollingUpdateCompleted`` were each recorded exactly once per DGD,
  and no Normal ``Create<Kind>`` or ``Delete<Kind>`` event twice for one object (a failed write's
  Warning may repeat);
* no DGD's ``observedGeneration`` ever went backwards;
* and the chaos did hit rollouts in flight: many DGD actors, which keep what a rollout remembers
  (its children rest between reconciles), were killed before their rollout completed.
"""

from __future__ import annotations

import contextlib
import random
from collections import Counter
from typing import Any

import anyio
import pytest

from dgd.cluster.errors import ServerError
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import DCD, DGD, EVENT
from dgd.sim import WorldSettings
from tests.chaos.helpers import all_successful, kill_at_random
from tests.scenarios.grove.stage import NS, Stage, on_stage, upstream

pytestmark = pytest.mark.anyio

SHAPES = (
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml",
    "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml",
)
GRAPHS = 30
WORKER_TYPES = ("worker", "prefill", "decode")
WORKER_HASH = "nvidia.com/dynamo-worker-hash"
CURRENT_HASH = "nvidia.com/current-worker-hash-v2"
NEW_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0"
#: Cluster seconds during which actors are killed and writes fail, once the rollouts have started.
CHAOS = 240.0


def component_graph(index: int) -> dict[str, Any]:
    """Graph ``index``: an upstream vLLM graph on the Component pathway, with 1 to 3 workers each."""
    document = upstream(SHAPES[index % len(SHAPES)])
    document["metadata"]["name"] = f"graph-{index:02d}"
    document["metadata"]["annotations"] = {"nvidia.com/enable-grove": "false"}
    for component in document["spec"]["components"]:
        if component["type"] in WORKER_TYPES:
            component["replicas"] = 1 + index % 3
    return document


class Record:
    """What the watches saw: DCD creations, events per DGD, observedGeneration per DGD, and when each
    DGD's rollout first completed (cluster seconds)."""

    def __init__(self) -> None:
        self.created: Counter[str] = Counter()
        self.transitions: Counter[tuple[str, str]] = Counter()
        self.lifecycle: Counter[tuple[str, str]] = Counter()
        self.generations: dict[str, list[int]] = {}
        self.completed: dict[str, float] = {}

    async def watch_dcds(self, cluster: Cluster) -> None:
        async with cluster.watch(DCD, namespace=NS) as watch:
            async for event in watch:
                if event.type == "ADDED" and event.object is not None:
                    self.created[event.object.metadata.name or ""] += 1

    async def watch_events(self, cluster: Cluster) -> None:
        async with cluster.watch(EVENT, namespace=NS) as watch:
            async for event in watch:
                recorded = event.object
                if event.type != "ADDED" or recorded is None or recorded.regarding is None:
                    continue
                reason = recorded.reason or ""
                if reason.startswith("RollingUpdate"):
                    self.transitions[(recorded.regarding.name or "", reason)] += 1
                elif reason.startswith(("Create", "Delete")) and recorded.type == "Normal":
                    self.lifecycle[(reason, recorded.note or "")] += 1

    async def watch_dgds(self, cluster: Cluster) -> None:
        async with cluster.watch(DGD, namespace=NS) as watch:
            async for event in watch:
                dgd = event.object
                if dgd is None or dgd.status is None:
                    continue
                name = dgd.metadata.name or ""
                if dgd.status.observed_generation is not None:
                    self.generations.setdefault(name, []).append(dgd.status.observed_generation)
                rolling_update = dgd.status.rolling_update
                if rolling_update is not None and rolling_update.phase == "Completed":
                    self.completed.setdefault(name, anyio.current_time())


async def new_worker_image(stage: Stage, name: str) -> None:
    """The user's edit: every worker component on ``NEW_IMAGE`` (read-modify-replace)."""
    raw = DGD.as_raw()
    document = await stage.user.get(raw.key(NS, name))
    for component in document["spec"]["components"]:
        if component["type"] in WORKER_TYPES:
            component["podTemplate"]["spec"]["containers"][0]["image"] = NEW_IMAGE
    await stage.user.replace(raw, document)


def converged(dgd: Any, dcds: list[Any], hashes_before: dict[str, str]) -> str | None:
    """Why the DGD has not converged on its new worker generation (``None``: it has)."""
    name = dgd.metadata.name or ""
    status = dgd.status
    current = (dgd.metadata.annotations or {}).get(CURRENT_HASH)
    if status is None or status.state != "successful":
        return f"{name}: state {status.state if status else None}"
    if status.observed_generation != dgd.metadata.generation:
        return f"{name}: observedGeneration {status.observed_generation} != {dgd.metadata.generation}"
    if status.rolling_update is None or status.rolling_update.phase != "Completed":
        return f"{name}: rollingUpdate {status.rolling_update}"
    if current is None or current == hashes_before[name]:
        return f"{name}: worker hash still {current}"
    workers = sorted(c.name for c in dgd.spec.components or [] if c.type in WORKER_TYPES)
    mine = [
        d
        for d in dcds
        if d.metadata.owner_references
        and d.metadata.owner_references[0].uid == dgd.metadata.uid
        and (d.metadata.labels or {}).get(WORKER_HASH)
    ]
    found = sorted((d.spec.name or "", (d.metadata.labels or {})[WORKER_HASH]) for d in mine)
    if found != [(component, current) for component in workers]:
        return f"{name}: worker DCDs {found}, expected one per {workers} on {current}"
    return None


async def test_component_rollouts_converge_while_actors_are_killed_and_nothing_happens_twice() -> None:
    rng = random.Random(2027)
    record = Record()
    kills: list[tuple[float, str]] = []
    # Slow pods (a minute to ready) keep the rollouts in flight for many kills.
    async with on_stage(WorldSettings(ready_delay=60.0), seed=12) as stage:
        observer = stage.sim.cluster.client()
        async with anyio.create_task_group() as watches:
            # given watches recording what users would see
            watches.start_soon(record.watch_dcds, observer)
            watches.start_soon(record.watch_events, observer)
            watches.start_soon(record.watch_dgds, observer)

            # and thirty Component-pathway graphs, successful
            names = [await stage.apply(component_graph(index)) for index in range(GRAPHS)]

            await stage.sim.until(all_successful(observer, GRAPHS), timeout=600)
            hashes_before = {
                d.metadata.name or "": (d.metadata.annotations or {})[CURRENT_HASH]
                for d in (await observer.list(DGD, namespace=NS)).items
            }

            # when every graph gets a new worker image, while actors are killed twice a second or so
            # and a few of the operator's writes of DCDs and DGDs fail (events are best effort: a
            # failed event write would be an event lost, not one recorded twice)
            faults = [
                stage.sim.cluster.faults.fail(
                    ServerError("chaos: the API server failed the write"),
                    verb=("create", "update", "patch", "delete"),
                    resource=resource,
                    probability=0.03,
                )
                for resource in (DCD, DGD)
            ]
            async with anyio.create_task_group() as chaos:
                chaos.start_soon(kill_at_random, stage, rng, 0.5, kills)
                for name in names:
                    await new_worker_image(stage, name)
                await stage.sim.run_for(CHAOS)
                chaos.cancel_scope.cancel()
            for rule in faults:
                stage.sim.cluster.faults.remove(rule)

            # and the cluster is left alone until every rollout has converged
            async def why_not() -> list[str]:
                dgds = (await observer.list(DGD, namespace=NS)).items
                dcds = (await observer.list(DCD, namespace=NS)).items
                return [why for d in dgds if (why := converged(d, dcds, hashes_before)) is not None]

            async def all_converged() -> bool:
                return not await why_not()

            with contextlib.suppress(TimeoutError):
                await stage.sim.until(all_converged, timeout=1800)
            stuck = await why_not()
            watches.cancel_scope.cancel()

    # then every DGD converged on its new worker generation
    assert stuck == [], stuck

    # and many actors were killed, among them DGD actors (which keep what a rollout remembers: its
    # children rest between reconciles) before their rollout completed, and some writes failed
    assert len(kills) >= 200, f"only {len(kills)} kills"
    in_flight = [
        path
        for at, path in kills
        if path.split("/")[-1] in record.completed and at < record.completed[path.split("/")[-1]]
    ]
    assert len(in_flight) >= 20, f"only {len(in_flight)} DGD actors killed in flight"
    failed = sum(rule.fired for rule in faults)
    assert failed >= 5, f"only {failed} failed writes"
    # and no DCD was created twice
    assert record.created and max(record.created.values()) == 1, record.created.most_common(3)
    # and every DGD recorded one rollout start and one completion, and no object's creation or
    # deletion twice
    assert record.transitions == Counter(
        {(name, reason): 1 for name in names for reason in ("RollingUpdateStarted", "RollingUpdateCompleted")}
    ), [t for t, n in record.transitions.items() if n != 1]
    assert record.lifecycle and max(record.lifecycle.values()) == 1, record.lifecycle.most_common(3)
    # and no observedGeneration ever decreased
    for name, seen in record.generations.items():
        assert seen == sorted(seen), (name, seen)
