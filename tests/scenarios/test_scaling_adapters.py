"""Scaling adapters on both pathways, as an autoscaler and a user see them (dgd-domain §13).

A component with ``scalingAdapter`` gets a DynamoGraphDeploymentScalingAdapter (DGDSA) named
``<dgd>-<lower(component)>``, its ``spec.replicas`` seeded from the component once, at create
(``AdapterCreated`` on the DGD). From then on the adapter owns the component's replica count: a
write through its scale subresource (HPA, KEDA, the Planner) is carried into the DGD component
(``Scaled`` on the adapter, ``status.lastScaleTime``), from there into the workload (the worker's
PodClique on Grove, its DCD on the Component pathway) and its pods; no DGD reconcile ever writes it
back. A storm of writes ends at the last value, the DGD's replicas only moving forward through the
values written; and a direct edit of the component's replicas in the DGD is reverted to the adapter's.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgd.cluster.errors import Conflict
from dgd.cluster.protocol import Cluster, ScaleSpec
from dgd.cluster.resources import DCD, DGD, DGDSA, EVENT, PCLQ, POD, Resource
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.sim import EPOCH
from dgd.sim.clock import backend_options
from tests.scenarios.graphs import component_of, on_pathway, set_replicas
from tests.scenarios.grove.stage import NS, Edit, Stage, on_stage, scenario_settings, upstream

AGG = "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml"
PATHWAYS = ("grove", "component")
WORKER = "VllmDecodeWorker"
RAW_DGD = DGD.as_raw()


# The graph, its adapter and its worker's workload.


def graph(pathway: str, replicas: int | None = None) -> dict[str, Any]:
    """The aggregated vLLM graph on ``pathway``, its worker asking for a scaling adapter."""
    document = on_pathway(upstream(AGG), pathway)
    worker = component_of(document, WORKER)
    worker["scalingAdapter"] = {}
    if replicas is not None:
        worker["replicas"] = replicas
    return document


def adapter_name(name: str) -> str:
    return f"{name}-{WORKER.lower()}"


async def adapter(stage: Stage, name: str) -> Adapter:
    return await stage.user.get(DGDSA.key(NS, adapter_name(name)))


async def scale(client: Cluster, name: str, replicas: int) -> None:
    """Scale the worker's adapter as HPA does: read the scale subresource, write it back (again on a
    conflict)."""
    key = DGDSA.key(NS, adapter_name(name))
    while True:
        current = await client.get_scale(key)
        wanted = msgspec.structs.replace(current, spec=ScaleSpec(replicas=replicas))
        try:
            await client.replace_scale(key, wanted)
            return
        except Conflict:
            continue


def dgd_replicas(document: dict[str, Any]) -> int:
    """The worker's replicas in a raw DGD (default 1)."""
    replicas = component_of(document, WORKER).get("replicas")
    return 1 if replicas is None else int(replicas)


def is_workload(pathway: str, obj: dict[str, Any]) -> bool:
    """Whether a raw PodClique (Grove) or DCD (Component) is the worker's workload. The PCS name may
    be shortened: the worker's clique is found by its suffix."""
    if pathway == "grove":
        return str(obj["metadata"]["name"]).endswith(f"-0-{WORKER.lower()}")
    return (obj.get("spec") or {}).get("name") == WORKER


def workload_resource(pathway: str) -> Resource[Any]:
    return PCLQ if pathway == "grove" else DCD


async def workload_replicas(stage: Stage, pathway: str) -> list[int]:
    """``spec.replicas`` of each of the worker's workloads that is not being deleted."""
    found = (await stage.user.list(workload_resource(pathway).as_raw(), namespace=NS)).items
    return [
        int(obj["spec"].get("replicas", 1))
        for obj in found
        if is_workload(pathway, obj) and not obj["metadata"].get("deletionTimestamp")
    ]


async def running_pods(stage: Stage) -> int:
    """The worker's pods that are ready and not terminating."""
    count = 0
    for pod in (await stage.user.list(POD, namespace=NS)).items:
        labels = pod["metadata"].get("labels") or {}
        conditions = (pod.get("status") or {}).get("conditions") or []
        if (
            labels.get("nvidia.com/dynamo-component") == WORKER
            and not pod["metadata"].get("deletionTimestamp")
            and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        ):
            count += 1
    return count


async def adapter_events(stage: Stage, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, note) of every event about the worker's adapter, in the order recorded."""
    listed = (await stage.user.list(EVENT, namespace=NS)).items
    mine = [
        e
        for e in listed
        if e.regarding is not None
        and e.regarding.kind == "DynamoGraphDeploymentScalingAdapter"
        and e.regarding.name == adapter_name(name)
    ]
    mine.sort(key=lambda e: int(e.metadata.resource_version or 0))
    return [(e.type or "", e.reason or "", e.note or "") for e in mine]


def scaled_to(replicas: int) -> Callable[[Any], bool]:
    """The DGD is successful at its generation, its worker at ``replicas``, all of them ready."""

    def check(dgd: Any) -> bool:
        status = dgd.status
        worker = next(c for c in dgd.spec.components if c.name == WORKER)
        found = (status.components or {}).get(WORKER) if status is not None else None
        return bool(
            status is not None
            and status.state == "successful"
            and status.observed_generation == dgd.metadata.generation
            and worker.replicas == replicas
            and found is not None
            and found.replicas == replicas
            and (found.ready_replicas or 0) == replicas
        )

    return check


# What a watch sees: every stored version, in order.


@dataclass
class Record:
    """Every value the DGD worker's replicas and its workloads' ``spec.replicas`` took, in order."""

    pathway: str
    dgd: list[int] = field(default_factory=list)
    workload: list[tuple[str, int]] = field(default_factory=list)

    def workload_values(self) -> list[int]:
        return [replicas for _, replicas in self.workload]


def squeeze(values: list[int]) -> list[int]:
    """``values`` without consecutive repeats."""
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


def is_subsequence(seen: list[int], written: list[int]) -> bool:
    """Whether ``seen`` appears in ``written`` in order (not necessarily contiguously)."""
    remaining = iter(written)
    return all(any(value == w for w in remaining) for value in seen)


@asynccontextmanager
async def recording(stage: Stage, pathway: str, name: str) -> AsyncIterator[Record]:
    """Watch the DGD ``name`` and the worker's workloads while the block runs (start it before the
    DGD is applied to see every value from the first)."""
    record = Record(pathway)
    observer = stage.sim.cluster.client()

    async def watch_dgd() -> None:
        async with observer.watch(RAW_DGD, namespace=NS) as events:
            async for event in events:
                obj = event.object
                if obj is not None and event.type != "DELETED" and obj["metadata"]["name"] == name:
                    record.dgd.append(dgd_replicas(obj))

    async def watch_workload() -> None:
        async with observer.watch(workload_resource(pathway).as_raw(), namespace=NS) as events:
            async for event in events:
                obj = event.object
                if obj is not None and event.type != "DELETED" and is_workload(pathway, obj):
                    record.workload.append((obj["metadata"]["name"], int(obj["spec"].get("replicas", 1))))

    async with anyio.create_task_group() as group:
        group.start_soon(watch_dgd)
        group.start_soon(watch_workload)
        await anyio.sleep(0)
        yield record
        group.cancel_scope.cancel()


# 1. An adapter scale write reaches the workload, and stays.


@pytest.mark.anyio
@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_an_adapter_write_scales_the_component_and_no_dgd_reconcile_reverts_it(pathway: str) -> None:
    async with on_stage() as stage:
        # given the graph with two workers and a scaling adapter for them, successful
        name = await stage.apply(graph(pathway, replicas=2))
        await stage.until(name, scaled_to(2))

        # then the DGD created the worker's adapter, seeded from the worker's replicas
        created = adapter_name(name)
        assert (
            "Normal",
            "AdapterCreated",
            f"Created scaling adapter {created} for component {WORKER}",
        ) in await stage.events(name)
        seeded = await adapter(stage, name)
        dgd = await stage.dgd(name)
        assert seeded.spec.replicas == 2
        assert (seeded.spec.dgd_ref.name, seeded.spec.dgd_ref.component_name) == (name, WORKER)
        assert [(r.uid, r.controller) for r in seeded.metadata.owner_references or ()] == [
            (dgd.metadata.uid, True)
        ]
        assert seeded.status is not None and seeded.status.replicas == 2
        assert seeded.status.last_scale_time is None
        assert await adapter_events(stage, name) == []

        # when an autoscaler scales the adapter to four through its scale subresource
        written_at = stage.sim.now()
        await scale(stage.user, name, 4)
        waited = await stage.until(name, scaled_to(4))

        # then the DGD component, the workload and its pods are at four, and the DGD is successful
        assert await workload_replicas(stage, pathway) == [4]
        assert await running_pods(stage) == 4
        # and the adapter recorded one scale, when it happened, and reports the new count
        assert await adapter_events(stage, name) == [
            ("Normal", "Scaled", f"Scaled component {WORKER} from 2 to 4 replicas")
        ]
        scaled = await adapter(stage, name)
        assert scaled.status is not None and scaled.status.replicas == 4
        assert scaled.status.last_scale_time is not None
        at = datetime.fromisoformat(scaled.status.last_scale_time.replace("Z", "+00:00")).timestamp()
        assert int(written_at) <= at <= EPOCH + waited
        scale_view = await stage.user.get_scale(DGDSA.key(NS, created))
        assert (scale_view.spec.replicas, scale_view.status and scale_view.status.replicas) == (4, 4)

        # when a long time passes (periodic resyncs reconcile the DGD and the adapter again)
        await stage.sim.run_for(1200)

        # then nothing was reverted: not the DGD component, not the workload, not the adapter
        dgd = await stage.dgd(name)
        assert scaled_to(4)(dgd)
        assert await workload_replicas(stage, pathway) == [4]
        assert await running_pods(stage) == 4
        later = await adapter(stage, name)
        assert later.spec.replicas == 4 and later.metadata.generation == scaled.metadata.generation
        assert later.status == scaled.status
        assert len(await adapter_events(stage, name)) == 1
        # and the DGD created its adapter once and never rewrote it
        reasons = [reason for _, reason, _ in await stage.events(name)]
        assert reasons.count("AdapterCreated") == 1
        assert "AdapterUpdated" not in reasons and "AdapterDeleted" not in reasons


# 2. A planner's storm of writes ends at the last one, never flapping back.


@pytest.mark.anyio
@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_a_storm_of_adapter_writes_ends_at_the_last_value_without_flapping_back(pathway: str) -> None:
    async with on_stage() as stage:
        name = graph(pathway)["metadata"]["name"]
        async with recording(stage, pathway, name) as record:
            # given the graph (one worker, seeding the adapter with 1), successful
            await stage.apply(graph(pathway))
            await stage.until(name, scaled_to(1))

            # when a planner writes 100 values of 1..8 into the adapter at random instants of 20 seconds
            # (some at the same instant), while each of the operator's API calls takes 50 ms
            stage.sim.cluster.faults.delay(0.05, verb=("get", "list", "create", "update", "patch"))
            rng = random.Random(20260101)
            written = [rng.randint(1, 8) for _ in range(100)]
            instants = sorted(round(rng.uniform(0.0, 20.0), 1) for _ in written)
            planner = stage.sim.cluster.client()
            start = anyio.current_time()
            for value, instant in zip(written, instants, strict=True):
                await anyio.sleep(max(0.0, start + instant - anyio.current_time()))
                await scale(planner, name, value)
            last = written[-1]
            await stage.until(name, scaled_to(last))
            await stage.sim.run_for(60)

        # then the DGD component, the workload and the adapter's status are at the last value written
        dgd = await stage.dgd(name)
        assert scaled_to(last)(dgd)
        assert await workload_replicas(stage, pathway) == [last]
        assert await running_pods(stage) == last
        final = await adapter(stage, name)
        assert final.spec.replicas == last
        assert final.status is not None and final.status.replicas == last
        # and the DGD's replicas only moved forward through the values written (from the seed)
        assert record.dgd, "the watch saw no DGD"
        through = squeeze(record.dgd)
        assert through[0] == 1 and through[-1] == last
        assert is_subsequence(through[1:], written), f"the DGD went {through} for {written}"
        # and so did the workload's
        workload = squeeze(record.workload_values())
        assert is_subsequence(workload, [1, *written]), f"the workload went {workload} for {written}"
        # and every Scaled event moved the component from a value it had to a value written (a repeat
        # of an earlier move joins that event's series, as client-go's recorder aggregates events)
        notes = [note for _, reason, note in await adapter_events(stage, name) if reason == "Scaled"]
        assert notes and len(notes) <= len(written)
        moves = [note.split(" from ")[1].removesuffix(" replicas").split(" to ") for note in notes]
        targets = [int(after) for _, after in moves]
        assert is_subsequence(targets, written)
        assert all(int(before) in {1, *written} for before, _ in moves)


# 3. Property: whatever the interleaving, the adapter's value wins, and nothing else is ever asked.
#
# Hypothesis draws (deterministically) the seeded replicas, an API latency for the operator's calls
# (none, or 50 ms: reconciles then overlap the writes), and 5 to 25 steps: adapter scale writes,
# user edits of the DGD that leave the worker's replicas alone (a Frontend env var or replica count,
# a DGD metadata annotation), direct user edits of the worker's replicas (the adapter owns them: they
# are reverted), and waits of 0 to 30 s. ``spec.annotations`` is not among the edits: it reaches the
# worker's pod template, so the worker hash changes and the Component pathway rolls the worker to a
# new DCD (whose replicas ramp through surge values no owner asked for).


Step = tuple[str, int]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("scale"), st.integers(0, 6)),
        st.tuples(st.just("frontend-env"), st.integers(0, 9)),
        st.tuples(st.just("frontend-replicas"), st.integers(1, 2)),
        st.tuples(st.just("annotate"), st.integers(0, 9)),
        st.tuples(st.just("direct"), st.integers(0, 6)),
        st.tuples(st.just("wait"), st.integers(0, 30)),
    ),
    min_size=5,
    max_size=25,
)


def set_frontend_env(value: int) -> Edit:
    def change(document: dict[str, Any]) -> None:
        container = component_of(document, "Frontend")["podTemplate"]["spec"]["containers"][0]
        env = [e for e in container.get("env") or [] if e["name"] != "SCENARIO_EDIT"]
        container["env"] = [*env, {"name": "SCENARIO_EDIT", "value": str(value)}]

    return change


def annotate(value: int) -> Edit:
    """A DGD metadata annotation (a DGD write that is no spec change at all)."""

    def change(document: dict[str, Any]) -> None:
        document["metadata"].setdefault("annotations", {})["example.com/note"] = str(value)

    return change


@dataclass
class Outcome:
    seed: int
    expected: int
    asked: set[int]
    record: Record
    dgd: int
    converged: bool
    workload: list[int]
    adapter_spec: int
    adapter_status: int | None


async def play(pathway: str, seed: int, latency: float, plan: list[Step]) -> Outcome:
    async with on_stage() as stage:
        name = graph(pathway)["metadata"]["name"]
        if latency:
            stage.sim.cluster.faults.delay(latency, verb=("get", "list", "create", "update", "patch"))
        async with recording(stage, pathway, name) as record:
            # given the graph, its worker's adapter seeded with ``seed``, successful
            await stage.apply(graph(pathway, replicas=seed))
            await stage.until(name, scaled_to(seed))
            expected, asked = seed, {seed}

            # when an autoscaler and a user act in turn, the cluster running in between
            for kind, value in plan:
                if kind == "scale":
                    await scale(stage.user, name, value)
                    expected = value
                    asked.add(value)
                elif kind == "direct":
                    await stage.edit(name, set_replicas(WORKER, value))
                    asked.add(value)
                elif kind == "frontend-env":
                    await stage.edit(name, set_frontend_env(value))
                elif kind == "frontend-replicas":
                    await stage.edit(name, set_replicas("Frontend", value))
                elif kind == "annotate":
                    await stage.edit(name, annotate(value))
                else:
                    await stage.sim.run_for(value)

            # and the cluster settles
            await stage.sim.run_for(300)
            document = await stage.user.get(RAW_DGD.key(NS, name))
            converged = scaled_to(expected)(await stage.dgd(name))
            final = await adapter(stage, name)
            return Outcome(
                seed=seed,
                expected=expected,
                asked=asked,
                record=record,
                dgd=dgd_replicas(document),
                converged=converged,
                workload=await workload_replicas(stage, pathway),
                adapter_spec=final.spec.replicas,
                adapter_status=final.status.replicas if final.status is not None else None,
            )


@pytest.mark.parametrize("pathway", PATHWAYS)
@scenario_settings(max_examples=120)
@given(seed=st.integers(1, 3), latency=st.sampled_from((0.0, 0.05)), plan=steps)
def test_the_adapter_owns_the_replicas_whatever_the_interleaving(
    pathway: str, seed: int, latency: float, plan: list[Step]
) -> None:
    outcome = anyio.run(
        play, pathway, seed, latency, plan, backend="asyncio", backend_options=backend_options(virtual=True)
    )

    # then the DGD's worker, its workload and the adapter agree on the last adapter write (or the seed)
    assert outcome.dgd == outcome.expected
    assert outcome.converged, "the DGD is not successful with every replica of its worker ready"
    assert outcome.workload == [outcome.expected]
    assert (outcome.adapter_spec, outcome.adapter_status) == (outcome.expected, outcome.expected)
    # and neither the DGD nor the workload ever held a value no owner asked for
    assert set(outcome.record.dgd) <= outcome.asked, (outcome.record.dgd, outcome.asked)
    workload = outcome.record.workload_values()
    assert workload, "the watch saw no workload"
    assert set(workload) <= outcome.asked, (outcome.record.workload, outcome.asked)
