"""The invariants catch what they promise to: each test breaks one on purpose and sees it reported.

Some break the operator itself (a monkeypatched bug, or the ``bug`` hook of ``run_replay``); others
write, from the test, as if an operator actor had (the actor runtime's ``current_actor`` is what
names the writer of each change).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from dgd.actors.dgd import actor as dgd_actor
from dgd.actors.dgd import grove_observation
from dgd.actors.dgd.children import rollout
from dgd.cluster.resources import DCD, DGD
from dgd.messages.config import OperatorConfig
from dgd.messages.trace import VERSION, Apply, Capacity, Expect, Header, Kill, ObjectRef, Patch, Trace
from dgd.runtime.ref import current_actor
from dgd.sim import WorldSettings
from dgd.sim.invariants import Invariants
from dgd.sim.operator import simulated_operator
from dgd.sim.replay import run_replay
from dgd.sim.trace_io import read_trace
from tests.planted_bugs import annotations_trusted, events_before_status

ROOT = Path(__file__).resolve().parents[3]
NS = "default"
REF = ObjectRef("nvidia.com/v1beta1", "DynamoGraphDeployment", "demo-agg", NS)


def agg(*, component: bool = True) -> dict[str, Any]:
    """The aggregated example (two workers behind a scaling adapter), on the Component pathway."""
    document: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "agg.yaml").read_text())
    document["metadata"]["namespace"] = NS
    if component:
        document["metadata"]["annotations"] = {"nvidia.com/enable-grove": "false"}
    return document


def broken(report_invariants: list[Any]) -> dict[str, int]:
    return {result.name: len(result.violations) for result in report_invariants if not result.ok}


class _Writer:
    """Stands in for an actor cell: only its path is read."""

    def __init__(self, path: str) -> None:
        self.path = path


@contextlib.contextmanager
def acting_as(path: str) -> Iterator[None]:
    """Writes made meanwhile are attributed to the actor at ``path``."""
    token = current_actor.set(_Writer(path))  # type: ignore[arg-type]
    try:
        yield
    finally:
        current_actor.reset(token)


def test_an_event_emitted_before_its_status_is_written_breaks_events_follow_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a build whose DGD actor emits the queued events before it writes the status
    def bug() -> None:
        monkeypatch.setattr(dgd_actor.DGDActor, "_persist", events_before_status)

    # when a rollout (whose start and end are status-transition events) is replayed
    trace = read_trace((ROOT / "examples" / "traces" / "rollout.jsonl").read_bytes())
    report = run_replay(trace, bug=bug)

    # then the replay fails, naming the invariant and the event
    assert not report.ok
    assert broken(report.invariants) == {"events-follow-status": 2}
    details = [v.detail for r in report.invariants for v in r.violations]
    assert details == [
        "default/demo-agg: event RollingUpdateStarted recorded, but the persisted status does not carry it",
        "default/demo-agg: event RollingUpdateCompleted recorded, but the persisted status does not carry it",
    ]


def test_a_replace_that_orphans_the_serving_generation_breaks_one_serving_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a build whose rollout trusts the worker-hash annotation over the worker DCDs (before #13495)
    def bug() -> None:
        monkeypatch.setattr(rollout, "serving_hashes", annotations_trusted)

    # when a replace that drops the annotation and changes the worker's image is replayed
    trace = read_trace((ROOT / "examples" / "traces" / "replace.jsonl").read_bytes())
    report = run_replay(trace, bug=bug)

    # then the DGD said successful with two worker generations serving, and the judge names them
    assert broken(report.invariants) == {"one-serving-generation": 1}
    (violation,) = [v for r in report.invariants for v in r.violations]
    assert violation.detail.startswith(
        "default/demo-agg: successful with no rollout active, but several worker generations serve (Worker: "
    )


def test_readiness_read_from_a_stale_cache_after_a_scale_breaks_ready_means_current(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a build whose readiness reads a child as the cache held it before this reconcile scaled it
    # (the bug the grove-scaler once had)
    monkeypatch.setattr(grove_observation, "rescaled_child", lambda child, replicas: child)

    # when a planner's scale storm is replayed
    trace = read_trace((ROOT / "examples" / "traces" / "scale-storm.jsonl").read_bytes())
    report = run_replay(trace)

    # then Ready=True was written while a PodClique had not processed its new replicas
    assert set(broken(report.invariants)) == {"ready-means-current"}
    first = next(r for r in report.invariants if not r.ok).violations[0]
    assert (
        "Ready=True written while PodClique default/storm-0-worker reports observedGeneration" in first.detail
    )


def test_an_observed_generation_going_back_breaks_its_invariant() -> None:
    # given the graph at generation 2, then its status set back to generation 1
    edited = copy.deepcopy(agg())
    edited["spec"]["components"][0]["replicas"] = 2
    trace = Trace(
        Header(version=VERSION),
        (
            Apply(at=0, object=agg()),
            Apply(at=100, object=edited),
            Patch(at=200, target=REF, patch={"status": {"observedGeneration": 1}}, subresource="status"),
        ),
    )

    # when it is replayed
    report = run_replay(trace)

    # then the step back is named
    (result,) = [r for r in report.invariants if not r.ok]
    assert result.name == "observed-generation-monotonic"
    assert [(v.at, v.detail) for v in result.violations] == [
        (200.0, "default/demo-agg: observedGeneration went from 2 to 1")
    ]


def test_a_dgd_still_pending_after_the_last_fault_breaks_bounded_liveness() -> None:
    # given a cluster with room for one pod, a graph that needs three, and a fault
    trace = Trace(
        Header(version=VERSION),
        (
            Apply(at=0, object=agg()),
            Capacity(at=0, pods=1),
            Kill(at=10, path="/operator/router"),
            Expect(at=300, target=REF, state="pending"),
        ),
    )

    # when it is replayed, then the graph never settles: liveness is broken, expectations hold
    report = run_replay(trace)
    assert [e.ok for e in report.expectations] == [True]
    assert broken(report.invariants) == {"bounded-liveness": 1}
    (violation,) = [v for r in report.invariants for v in r.violations]
    assert (
        violation.detail == "default/demo-agg is pending, not stable, 290s after the last fault (bound 290s)"
    )


@pytest.mark.anyio
async def test_a_status_written_by_another_actor_breaks_one_status_writer() -> None:
    # given the graph, up
    async with _graph_up() as (_, invariants, user):
        # when its rollout child writes the DGD's status
        with acting_as("/operator/dgds/default/demo-agg/rollout"):
            await user.patch_status(DGD.key(NS, "demo-agg"), {"status": {"state": "pending"}})
        invariants.check()

    # then that writer is named
    assert [(v.invariant, v.detail) for v in invariants.violations] == [
        ("one-status-writer", "default/demo-agg: status written by /operator/dgds/default/demo-agg/rollout")
    ]


@pytest.mark.anyio
async def test_replicas_changed_by_another_actor_than_the_adapter_break_one_replicas_owner() -> None:
    # given the graph, its worker owned by its scaling adapter
    async with _graph_up() as (_, invariants, user):
        # when the DGD actor itself changes the worker's replicas
        dgd = await user.get(DGD.as_raw().key(NS, "demo-agg"))
        components = dgd["spec"]["components"]
        components[1]["replicas"] = 4
        with acting_as("/operator/dgds/default/demo-agg"):
            await user.patch(DGD.key(NS, "demo-agg"), {"spec": {"components": components}})
        invariants.check()

    # then the change and the owner it bypassed are named
    assert [(v.invariant, v.detail) for v in invariants.violations] == [
        (
            "one-replicas-owner",
            "default/demo-agg: /operator/dgds/default/demo-agg changed the replicas of Worker (2 -> 4), "
            "which adapter demo-agg-worker owns",
        )
    ]


@pytest.mark.anyio
async def test_a_child_the_operator_deleted_and_made_again_for_one_generation_breaks_child_created_once() -> (
    None
):
    # given the graph, up
    async with _graph_up() as (sim, invariants, user):
        # when the DGD actor deletes its frontend DCD, and the operator creates it again
        with acting_as("/operator/dgds/default/demo-agg"):
            await user.delete(DCD.key(NS, "demo-agg-frontend"))
        await sim.run_for(60)
        invariants.check()

    # then the second creation is named
    assert [(v.invariant, v.detail) for v in invariants.violations] == [
        (
            "child-created-once",
            "DynamoComponentDeployment default/demo-agg-frontend created again for the same DGD "
            "generation 1, after the operator (/operator/dgds/default/demo-agg) deleted it",
        )
    ]


@pytest.mark.anyio
async def test_a_child_the_user_deleted_may_be_created_again() -> None:
    async with _graph_up() as (sim, invariants, user):
        await user.delete(DCD.key(NS, "demo-agg-frontend"))
        await sim.run_for(60)
        invariants.check()
        recreated = await user.get(DCD.key(NS, "demo-agg-frontend"))
    assert recreated.metadata.name == "demo-agg-frontend"
    assert invariants.violations == []


@contextlib.asynccontextmanager
async def _graph_up() -> Any:
    """The operator with the invariants watching, and the aggregated graph a user applied a minute ago:
    the simulated cluster, the invariants and the user's client."""
    sim = simulated_operator(WorldSettings(), seed=0, config=OperatorConfig())
    async with sim, anyio.create_task_group() as group:
        invariants = Invariants(sim)
        await invariants.start(group)
        user = sim.cluster.client()
        await user.create(DGD.as_raw(), agg())
        await sim.run_for(60)
        yield sim, invariants, user
        group.cancel_scope.cancel()
