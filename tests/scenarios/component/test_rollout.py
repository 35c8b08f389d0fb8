"""The managed worker rollout on the simulated cluster, as a user sees it (dgd-domain §12).

A worker image change rolls the worker from its old DCD to a new one within the surge and
unavailability bounds (``Pending`` -> ``InProgress`` -> ``Completed``), ``Ready=False /
rolling_update_in_progress`` throughout, and ``successful`` only once the old DCD is gone. A
replicas edit never rolls; ``Recreate`` starts the new pods only after the old ones ended; a revert
mid-rollout keeps serving from the reverted generation; a rollout stuck past the progress deadline
is ``Failed`` with a message naming what it waits for, and recovers. A timeline sampled every second
of cluster time checks what held *throughout*, not just at the end.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from dgd.actors.tree import DGDS
from dgd.cluster.resources import DCD, POD
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.sim import WorldSettings
from tests.scenarios import graphs
from tests.scenarios.grove.stage import NS, Edit, Stage, on_stage, upstream

pytestmark = pytest.mark.anyio

AGG = "ai-dynamo-dynamo/examples/backends/vllm/deploy/agg.yaml"
WORKER = "VllmDecodeWorker"
HASH = "nvidia.com/current-worker-hash-v2"


class Generation(msgspec.Struct, frozen=True):
    """One worker DCD at one instant."""

    name: str
    hash: str
    replicas: int
    ready: int
    deleting: bool


class Snapshot(msgspec.Struct, frozen=True):
    """The DGD and its worker generations at one instant of cluster time."""

    at: float
    generation: int
    observed: int | None
    state: str
    reason: str
    phase: str | None
    dcds: tuple[Generation, ...]
    #: ready, non-terminating worker pods; and every worker pod as (DCD name, phase, terminating)
    ready_pods: int
    pods: tuple[tuple[str, str, bool], ...]
    #: the worker's component status: its DCD names, runtime namespace, replicas and updated replicas
    worker_status: tuple[tuple[str, ...], str | None, int, int] | None = None

    def hashes(self) -> set[str]:
        return {dcd.hash for dcd in self.dcds}


def agg(replicas: int = 4, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """The aggregated vLLM graph on the Component pathway, its worker at ``replicas``."""
    document = graphs.on_pathway(upstream(AGG), "component")
    for component in document["spec"]["components"]:
        if component["name"] == WORKER:
            component["replicas"] = replicas
    if annotations:
        document["spec"]["annotations"] = annotations
    return document


def set_image(tag: str) -> Edit:
    """The worker on the vLLM runtime image tagged ``tag``."""
    return graphs.set_image(WORKER, f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{tag}")


async def snapshot(stage: Stage, name: str) -> Snapshot:
    dgd: DynamoGraphDeployment = await stage.dgd(name)
    status = dgd.status
    ready = next((c for c in (status.conditions if status else None) or () if c.type == "Ready"), None)
    dcds = []
    for dcd in (await stage.user.list(DCD, namespace=NS)).items:
        worker_hash = (dcd.metadata.labels or {}).get("nvidia.com/dynamo-worker-hash")
        if dcd.spec.name != WORKER or worker_hash is None:
            continue
        component = dcd.status.component if dcd.status is not None else None
        dcds.append(
            Generation(
                name=dcd.metadata.name or "",
                hash=worker_hash,
                replicas=1 if dcd.spec.replicas is None else dcd.spec.replicas,
                ready=(component.ready_replicas or 0) if component is not None else 0,
                deleting=bool(dcd.metadata.deletion_timestamp),
            )
        )
    pods = []
    ready_pods = 0
    for pod in (await stage.user.list(POD, namespace=NS)).items:
        labels = pod["metadata"].get("labels") or {}
        if labels.get("nvidia.com/dynamo-component") != WORKER:
            continue
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        pods.append((labels.get("nvidia.com/selector", ""), phase, terminating))
        conditions = (pod.get("status") or {}).get("conditions") or []
        if not terminating and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            ready_pods += 1
    found = (status.components or {}).get(WORKER) if status is not None else None
    worker_status = (
        (tuple(found.component_names or ()), found.runtime_namespace, found.replicas, found.updated_replicas)
        if found is not None
        else None
    )
    return Snapshot(
        worker_status=worker_status,
        at=anyio.current_time(),
        generation=dgd.metadata.generation or 0,
        observed=status.observed_generation if status else None,
        state=status.state if status else "",
        reason=ready.reason or "" if ready else "",
        phase=status.rolling_update.phase if status and status.rolling_update else None,
        dcds=tuple(sorted(dcds, key=lambda d: d.name)),
        ready_pods=ready_pods,
        pods=tuple(sorted(pods)),
    )


@asynccontextmanager
async def timeline(stage: Stage, name: str) -> AsyncIterator[list[Snapshot]]:
    """Snapshots of the DGD every second of cluster time while the block runs."""
    snapshots: list[Snapshot] = []

    async def sample() -> None:
        while True:
            snapshots.append(await snapshot(stage, name))
            await anyio.sleep(1.0)

    async with anyio.create_task_group() as group:
        group.start_soon(sample)
        yield snapshots
        group.cancel_scope.cancel()


def rolled(old_hash: str) -> Callable[[DynamoGraphDeployment], bool]:
    """The DGD finished rolling away from ``old_hash``: successful at its generation, Completed."""

    def check(dgd: DynamoGraphDeployment) -> bool:
        status = dgd.status
        return bool(
            status is not None
            and status.state == "successful"
            and status.observed_generation == dgd.metadata.generation
            and (dgd.metadata.annotations or {}).get(HASH) != old_hash
            and status.rolling_update is not None
            and status.rolling_update.phase == "Completed"
        )

    return check


async def started(stage: Stage, document: dict[str, Any]) -> tuple[str, str]:
    """Apply ``document`` and wait for ``successful``; its name and first worker hash."""
    name = await stage.apply(document)
    await stage.until_state(name, "successful", timeout=300)
    return name, ((await stage.dgd(name)).metadata.annotations or {})[HASH]


async def test_an_image_change_rolls_the_worker_and_succeeds_only_once_the_old_dcd_is_gone() -> None:
    async with on_stage() as stage:
        # given the aggregated graph with four worker replicas (surge 1, unavailable 1), successful
        name, old_hash = await started(stage, agg(replicas=4))
        events_before = len(await stage.events(name))

        # when the worker's image changes
        async with timeline(stage, name) as seen:
            await stage.edit(name, set_image("v2"))
            await stage.until(name, rolled(old_hash), timeout=1200)
            await stage.sim.run_for(5)

        # then the rollout went Pending -> InProgress -> Completed
        after = [s for s in seen if s.generation == 2]
        phases = [s.phase for s in after if s.observed == 2]
        assert _squeeze(phases) == ["Pending", "InProgress", "Completed"] or _squeeze(phases) == [
            "InProgress",
            "Completed",
        ]
        # and while it was not Completed, the DGD was pending with Ready=False/rolling_update_in_progress
        rolling = [s for s in after if s.observed == 2 and s.phase in ("Pending", "InProgress")]
        assert rolling and all(
            (s.state, s.reason) == ("pending", "rolling_update_in_progress") for s in rolling
        )
        # and never more than d + surge = 5 worker replicas were asked for, never fewer than d - 1 = 3 ready
        assert all(sum(d.replicas for d in s.dcds if not d.deleting) <= 5 for s in after)
        assert all(s.ready_pods >= 3 for s in after)
        # and meanwhile the worker's status counted both generations, routing on the old namespace
        # (dgd-domain §12.6): both DCDs named, replicas summed, updated only the new generation's
        both = [s for s in rolling if len(s.hashes()) == 2 and s.worker_status is not None]
        assert both
        for s in both:
            assert s.worker_status is not None
            names, runtime_namespace, replicas, updated = s.worker_status
            assert names == tuple(sorted(d.name for d in s.dcds))
            assert runtime_namespace == f"{NS}-{name}-{old_hash}"
            assert updated <= replicas
        assert any(s.worker_status is not None and s.worker_status[3] < s.worker_status[2] for s in both)
        # and successful only once the old DCD was gone
        successful = [s for s in after if s.observed == 2 and s.state == "successful"]
        assert successful and all(old_hash not in s.hashes() for s in successful)

        # and at the end one worker DCD of the new generation runs the four replicas
        dgd = await stage.dgd(name)
        new_hash = (dgd.metadata.annotations or {})[HASH]
        final = await snapshot(stage, name)
        assert [(d.hash, d.replicas, d.ready) for d in final.dcds] == [(new_hash, 4, 4)]
        assert dgd.status is not None and dgd.status.rolling_update is not None
        assert dgd.status.rolling_update.updated_components == [WORKER]
        assert dgd.status.components is not None
        assert dgd.status.components[WORKER].component_names == [f"{name}-{WORKER.lower()}-{new_hash}"]
        # and the events tell the story in order: the new DCD and the old one's first step down
        # (mutation events, at once), the rollout started (queued with the status that says so), the
        # new DCD scaled up and the old one down, the old one deleted, the rollout completed
        new_dcd = f"{NS}/{name}-{WORKER.lower()}-{new_hash}"
        old_dcd = f"{NS}/{name}-{WORKER.lower()}-{old_hash}"
        events = (await stage.events(name))[events_before:]
        assert events[:3] == [
            ("Normal", "CreateDynamoComponentDeployment", f"Created DynamoComponentDeployment {new_dcd}"),
            (
                "Normal",
                "UpdateDynamoComponentDeployment",
                f"Updated DynamoComponentDeployment {old_dcd} "
                "(old worker generation scaled from 4 to 3 replicas)",
            ),
            ("Normal", "RollingUpdateStarted", f"Starting rolling update to worker hash {new_hash}"),
        ]
        assert events[-2:] == [
            (
                "Normal",
                "DeleteDynamoComponentDeployment",
                f"Deleted DynamoComponentDeployment {old_dcd}: its worker generation was replaced",
            ),
            ("Normal", "RollingUpdateCompleted", f"Rolling update completed, worker hash {new_hash}"),
        ]
        steps = events[3:-2]
        scale_ups = [e for e in steps if e[2].startswith(f"Updated DynamoComponentDeployment {new_dcd}")]
        scale_downs = [e for e in steps if e[2].startswith(f"Updated DynamoComponentDeployment {old_dcd} ")]
        assert scale_ups and all(
            e == ("Normal", "UpdateDynamoComponentDeployment", f"Updated DynamoComponentDeployment {new_dcd}")
            for e in scale_ups
        )
        # the old DCD only went down, each step from where the last one left it, to 0 before it was deleted
        steps_down = [
            tuple(int(n) for n in e[2].split(" from ")[1].split(" replicas")[0].split(" to "))
            for e in scale_downs
        ]
        assert steps_down and steps_down[0][0] == 3 and steps_down[-1][1] == 0
        assert all(a > b for a, b in steps_down)
        assert all(earlier[1] == later[0] for earlier, later in itertools.pairwise(steps_down))
        assert len(scale_ups) + len(scale_downs) == len(steps)


async def test_a_replicas_edit_never_starts_a_rollout() -> None:
    async with on_stage() as stage:
        # given the graph with two worker replicas, successful
        name, worker_hash = await started(stage, agg(replicas=2))

        # when the worker is scaled to three
        await stage.edit(name, graphs.set_replicas(WORKER, 3))
        await stage.until_successful(
            name,
            2,
            lambda status: status.components is not None and status.components[WORKER].ready_replicas == 3,
        )

        # then the same worker DCD was scaled: no rollout, no new generation
        dgd = await stage.dgd(name)
        assert dgd.status is not None and dgd.status.rolling_update is None
        assert (dgd.metadata.annotations or {})[HASH] == worker_hash
        final = await snapshot(stage, name)
        assert [(d.hash, d.replicas, d.ready) for d in final.dcds] == [(worker_hash, 3, 3)]
        assert "RollingUpdateStarted" not in [reason for _, reason, _ in await stage.events(name)]


async def test_recreate_starts_the_new_pods_only_after_every_old_pod_ended() -> None:
    async with on_stage(WorldSettings(termination_delay=20.0)) as stage:
        # given a graph whose worker rolls by Recreate, successful with three replicas
        name, old_hash = await started(
            stage, agg(replicas=3, annotations={"nvidia.com/deployment-strategy": "Recreate"})
        )

        # when the worker's image changes
        async with timeline(stage, name) as seen:
            await stage.edit(name, set_image("v2"))
            await stage.until(name, rolled(old_hash), timeout=1200)

        # then whenever the new generation was asked for a replica, every old pod had ended
        new_hash = ((await stage.dgd(name)).metadata.annotations or {})[HASH]
        old_dcd = f"{name}-{WORKER.lower()}-{old_hash}"
        scaled_up = [s for s in seen if any(d.hash == new_hash and d.replicas > 0 for d in s.dcds)]
        assert scaled_up
        for s in scaled_up:
            old_pods = [pod for pod in s.pods if pod[0] == old_dcd]
            assert all(phase in ("Succeeded", "Failed") for _, phase, _ in old_pods), s
        # and the old pods took their time to end: the new generation waited for them
        first_down = next(s.at for s in seen if any(d.hash == old_hash and d.replicas == 0 for d in s.dcds))
        assert scaled_up[0].at - first_down >= 20.0


async def test_a_revert_mid_rollout_keeps_serving_from_the_reverted_generation() -> None:
    async with on_stage(WorldSettings(ready_delay=60.0)) as stage:
        # given the graph with four worker replicas, successful, and a rollout to a new image under way
        name, old_hash = await started(stage, agg(replicas=4))
        async with timeline(stage, name) as seen:
            await stage.edit(name, set_image("v2"))
            await stage.until(
                name,
                lambda d: d.status is not None and d.status.rolling_update is not None
                and d.status.rolling_update.phase == "InProgress",
            )  # fmt: skip
            await stage.sim.run_for(70)

            # when the user reverts to the original image
            await stage.edit(name, set_image("my-tag"))
            await stage.until_successful(name, 3, timeout=1200)
            await stage.sim.run_for(5)

        # then the original generation is the only one left, at four ready replicas
        dgd = await stage.dgd(name)
        assert (dgd.metadata.annotations or {})[HASH] == old_hash
        final = await snapshot(stage, name)
        assert [(d.hash, d.replicas, d.ready) for d in final.dcds] == [(old_hash, 4, 4)]
        # and at no point were fewer than d - 1 = 3 worker pods ready, nor a DCD with ready pods deleted
        assert all(s.ready_pods >= 3 for s in seen)
        for before, now in itertools.pairwise(seen):
            gone = {d.name for d in before.dcds} - {d.name for d in now.dcds if not d.deleting}
            assert all(d.ready == 0 for d in before.dcds if d.name in gone), (before, now)


async def test_a_rollout_stuck_past_its_deadline_fails_naming_what_it_waits_for_and_recovers() -> None:
    async with on_stage() as stage:
        # given the graph with two worker replicas, successful, in a cluster with no room left
        name, old_hash = await started(stage, agg(replicas=2))
        await stage.sim.reconfigure(WorldSettings(capacity=3))

        # when the worker's image changes, and its new pod cannot be scheduled for half an hour
        await stage.edit(name, set_image("v2"))
        waited = await stage.until_state(name, "failed", timeout=3600)

        # then the rollout failed at the deadline, saying what it waits for
        assert 1800 <= waited <= 1860  # the deadline counts from the last visible change
        dgd = await stage.dgd(name)
        new_hash = (dgd.metadata.annotations or {}).get(HASH)
        assert new_hash == old_hash  # the failed generation was never recorded
        assert dgd.status is not None and dgd.status.conditions is not None
        ready = dgd.status.conditions[0]
        assert dgd.status.rolling_update is not None and dgd.status.rolling_update.phase == "Failed"
        assert (ready.status, ready.reason) == ("False", "rolling_update_failed")
        assert ready.message.startswith("Rolling update to worker hash ")
        assert ready.message.endswith(
            f"made no progress for 30m0s: {WORKER}: 0/2 new replicas ready, 2 old still serving"
        )
        warnings = [e for e in await stage.events(name) if e[0] == "Warning"]
        assert warnings == [("Warning", "RollingUpdateFailed", ready.message)]
        # and the old generation kept serving
        assert (await snapshot(stage, name)).ready_pods == 2

        # when room arrives, then the rollout resumes and completes
        await stage.sim.reconfigure(WorldSettings())
        await stage.until(name, rolled(old_hash), timeout=1200)
        reasons = [reason for _, reason, _ in await stage.events(name)]
        assert reasons.count("RollingUpdateStarted") == 1 and reasons[-1] == "RollingUpdateCompleted"


async def test_a_running_rollout_keeps_no_child_between_reconciles_and_still_fails_at_its_deadline() -> None:
    async with on_stage() as stage:
        # given the graph with two worker replicas, successful, in a cluster with no room left
        name, _ = await started(stage, agg(replicas=2))
        await stage.sim.reconfigure(WorldSettings(capacity=3))

        # when the worker's image changes and the rollout waits, with nothing to reconcile, for room
        edited_at = anyio.current_time()
        await stage.edit(name, set_image("v2"))
        await stage.sim.run_for(900)

        # then the DGD actor runs none of its children meanwhile, though its rollout is in progress
        assert (await stage.dgd(name)).status.rolling_update.phase == "InProgress"  # type: ignore[union-attr]
        actor = f"{DGDS}/{NS}/{name}"
        assert [i.path for i in stage.sim.system.tree() if i.path.startswith(f"{actor}/")] == []
        # and the rollout, rebuilt by each reconcile, still fails at its deadline from the last change
        await stage.until_state(name, "failed", timeout=3600)
        assert 1800 <= anyio.current_time() - edited_at <= 1860


async def test_a_failed_rollout_reports_in_progress_once_pods_roll_again_then_completed() -> None:
    async with on_stage() as stage:
        # given a rollout that failed at its deadline for want of room
        name, old_hash = await started(stage, agg(replicas=2))
        await stage.sim.reconfigure(WorldSettings(capacity=3))
        await stage.edit(name, set_image("v2"))
        await stage.until_state(name, "failed", timeout=3600)

        # when room arrives and the pods roll again
        async with timeline(stage, name) as seen:
            await stage.sim.reconfigure(WorldSettings())
            await stage.until(name, rolled(old_hash), timeout=1200)
            seen.append(await snapshot(stage, name))

        # then the rollout said it resumed (InProgress, the DGD pending) before it completed
        assert _squeeze([(s.phase, s.state, s.reason) for s in seen]) == [
            ("Failed", "failed", "rolling_update_failed"),
            ("InProgress", "pending", "rolling_update_in_progress"),
            ("Completed", "successful", "all_resources_are_ready"),
        ]
        # and resuming queued no event of its own
        reasons = [reason for _, reason, _ in await stage.events(name)]
        assert reasons.count("RollingUpdateFailed") == 1 and reasons[-1] == "RollingUpdateCompleted"


async def test_a_new_worker_spec_after_a_failed_rollout_starts_a_fresh_one() -> None:
    async with on_stage() as stage:
        # given a rollout that failed at its deadline for want of room
        name, old_hash = await started(stage, agg(replicas=2))
        await stage.sim.reconfigure(WorldSettings(capacity=3))
        await stage.edit(name, set_image("v2"))
        await stage.until_state(name, "failed", timeout=3600)
        failed_at = (await stage.dgd(name)).status.rolling_update.start_time  # type: ignore[union-attr]

        # when the user fixes the image (a new worker spec) and room arrives
        await stage.edit(name, set_image("v3"))
        await stage.until(
            name,
            lambda d: d.status is not None and d.status.observed_generation == 3
            and d.status.rolling_update is not None and d.status.rolling_update.phase == "InProgress",
        )  # fmt: skip
        fresh = await stage.dgd(name)
        await stage.sim.reconfigure(WorldSettings())
        await stage.until(name, rolled(old_hash), timeout=1200)

        # then a fresh rollout started (a new start time, a second Started event) and completed
        assert fresh.status is not None and fresh.status.rolling_update is not None
        assert fresh.status.rolling_update.start_time != failed_at
        reasons = [reason for _, reason, _ in await stage.events(name)]
        assert reasons.count("RollingUpdateStarted") == 2
        assert reasons.count("RollingUpdateFailed") == 1
        assert reasons[-1] == "RollingUpdateCompleted"
        final = await snapshot(stage, name)
        assert len(final.dcds) == 1 and final.dcds[0].ready == 2


async def test_a_multinode_graph_rolls_natively_with_one_warning() -> None:
    async with on_stage(graphs.WITH_LWS) as stage:
        # given a multinode graph on the Component pathway (LeaderWorkerSet served), successful
        document = upstream("ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg-multinode.yaml")
        graphs.on_pathway(document, "component")
        name, old_hash = await started(stage, document)

        # when a worker's image changes
        await stage.edit(name, graphs.set_image("decode", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:v2"))
        await stage.until_successful(name, 2)
        await stage.sim.run_for(600)

        # then the new hash is recorded at once, no managed rollout runs, and one Warning says so
        dgd = await stage.dgd(name)
        assert (dgd.metadata.annotations or {})[HASH] != old_hash
        assert dgd.status is not None and dgd.status.rolling_update is None
        warnings = [e for e in await stage.events(name) if e[0] == "Warning"]
        assert warnings == [graphs.ROLLING_UPDATE_NOT_SUPPORTED]


def _squeeze(values: list[Any]) -> list[Any]:
    """``values`` with consecutive repeats collapsed."""
    out: list[Any] = []
    for value in values:
        if not out or out[-1] != value:
            out.append(value)
    return out
