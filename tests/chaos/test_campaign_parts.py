"""The parts of a chaos campaign: delta debugging, shrinking, schedules drawn from seeds, and the
crash right after a write."""

from __future__ import annotations

from collections import Counter

import pytest
from msgspec import structs

from dgd.cluster.resources import PCS
from dgd.messages.trace import Apply, Kill, Patch
from dgd.sim import WorldSettings
from dgd.sim.chaos_plans import GENERATORS, crash_points
from dgd.sim.chaos_schedule import CrashAfterWrite, Schedule
from dgd.sim.chaos_shrink import ddmin, shrink
from dgd.sim.chaos_workload import ENABLE_GROVE, PATHWAYS, workload
from dgd.sim.chaos_writes import CrashAfter, Write, WritePoint
from tests.chaos.test_campaign import EXAMPLES
from tests.scenarios.grove.stage import on_stage, upstream


def test_ddmin_keeps_exactly_the_items_that_fail_together() -> None:
    # given a failure that needs items 3 and 11 of sixteen
    tried: list[list[int]] = []

    def fails(kept: list[int]) -> bool:
        tried.append(kept)
        return {3, 11} <= set(kept)

    # when the list is minimized
    kept = ddmin(list(range(16)), fails)

    # then exactly those two are left, and no subset was tried twice
    assert kept == [3, 11]
    assert len(tried) == len({tuple(t) for t in tried})


def test_ddmin_drops_everything_when_the_failure_needs_nothing() -> None:
    assert ddmin(["kill", "expire", "stale"], lambda kept: True) == []


def _schedule() -> Schedule:
    work = workload(EXAMPLES, seed=3, dgds=3)
    faults = tuple(GENERATORS["random"](3, work, []))
    return Schedule(3, "random", 0, work.graphs, work.actions, faults)


def test_shrink_keeps_only_the_graph_its_edit_and_the_fault_the_failure_needs() -> None:
    # given a schedule whose failure needs one graph's apply, one of its edits and a kill of its actor
    schedule = _schedule()
    edit = next(a for a in schedule.actions if isinstance(a, Patch) and a.subresource == "")
    victim = edit.target.name
    kill = Kill(at=50.0, path=f"/operator/dgds/default/{victim}")
    schedule = structs.replace(schedule, faults=(*schedule.faults, kill))

    def fails(candidate: Schedule) -> bool:
        names = {str(a.object["metadata"]["name"]) for a in candidate.actions if isinstance(a, Apply)}
        return victim in names and edit in candidate.actions and kill in candidate.faults

    # when it is shrunk
    small = shrink(schedule, fails)

    # then only that graph, that edit and that kill are left, and the liveness expectation stays
    assert [g.ref.name for g in small.graphs] == [victim]
    assert [type(a).__name__ for a in small.actions] == ["Apply", "Patch"]
    assert small.actions[1] == edit
    assert small.faults == (kill,)
    assert [e.target.name for e in small.expectations()] == [victim]


def test_the_same_seed_draws_the_same_schedules_and_another_seed_others() -> None:
    # when the workload and the faults of each plan are drawn twice from one seed, and once from another
    def draw(seed: int) -> tuple[object, ...]:
        work = workload(EXAMPLES, seed=seed, dgds=3)
        return (work, *(generate(seed, work, []) for generate in GENERATORS.values()))

    # then the same seed gives the same, and another seed something else
    assert draw(5) == draw(5)
    assert draw(5) != draw(6)


def test_workloads_cover_every_example_on_both_pathways_with_rollouts_and_scales() -> None:
    # when forty seeds draw their workloads
    works = [workload(EXAMPLES, seed=seed, dgds=3) for seed in range(40)]

    # then every example is drawn on both pathways, the Component one through the annotation
    drawn = {(graph.source, graph.pathway) for work in works for graph in work.graphs}
    assert drawn == {(e.source, pathway) for e in EXAMPLES for pathway in PATHWAYS}
    applied = [a.object["metadata"] for w in works for a in w.actions if isinstance(a, Apply)]
    assert {m.get("annotations", {}).get(ENABLE_GROVE) for m in applied} == {None, "false"}
    # and the edits are rollouts, scales of a DGD's components, and scales of a scaling adapter
    edits = Counter(
        "adapter" if a.subresource == "scale" else "rollout" if "env" in a.patch["spec"] else "components"
        for w in works
        for a in w.actions
        if isinstance(a, Patch)
    )
    assert set(edits) == {"adapter", "rollout", "components"}


def test_crash_after_write_gives_one_schedule_per_distinct_write_point() -> None:
    # given a fault-free run that wrote twice at one point and once at another (for another DGD)
    create = WritePoint("create", "services", "", "/operator/dgds/default/a")
    again = WritePoint("create", "services", "", "/operator/dgds/default/b")
    status = WritePoint("update", "dynamographdeployments.nvidia.com", "status", "/operator/dgds/default/a")
    writes = [Write(create, 1.0, 1), Write(again, 1.0, 1), Write(status, 2.0, 1)]

    # when the crash-after-write plan is drawn
    crashes = crash_points(7, writes)

    # then there is one crash per kind of point, in the order they were first reached
    assert [crash.point.role for crash in crashes] == ["/operator/dgds/*/*", "/operator/dgds/*/*"]
    assert [crash.point.verb for crash in crashes] == ["create", "update"]
    assert crashes[1] == CrashAfterWrite(status, 1, 2.0)
    # and the crash is a kill of the writer at that time in a trace
    assert crashes[1].record() == Kill(at=2.0, path="/operator/dgds/default/a")


@pytest.mark.anyio
async def test_a_writer_killed_right_after_its_write_made_the_write_and_nothing_after_it() -> None:
    # given the operator, with the DGD actor to be killed right after it creates the PodCliqueSet
    crash = CrashAfter(WritePoint("create", str(PCS), "", "/operator/dgds/default/vllm-agg"))
    async with on_stage(WorldSettings(), seed=1) as stage:
        crash.attach(stage.sim.cluster)

        # when a graph is applied and becomes successful
        await stage.apply(upstream("ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml"))
        await stage.until_state("vllm-agg", "successful")
        podcliquesets = (await stage.sim.cluster.list(PCS, namespace="default")).items
        events = await stage.events("vllm-agg")
        restarts = {info.path: info.restarts for info in stage.sim.system.tree()}

    # then the actor was killed once, after the create was stored: the PodCliqueSet exists
    assert crash.killed == 0.0
    assert restarts["/operator/dgds/default/vllm-agg"] == 1
    assert [p.metadata.name for p in podcliquesets] == ["vllm-agg"]
    # and its Created event, told to the event poster with the write, was recorded once: the restarted
    # actor found nothing to create
    reasons = [reason for _, reason, _ in events]
    assert "CreateService" in reasons
    assert reasons.count("CreatePodCliqueSet") == 1
