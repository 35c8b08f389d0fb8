"""Graph restarts on both pathways, as a user sees them (dgd-domain §11).

A new ``spec.restart.id`` restarts the graph's components: one at a time in ``strategy.order`` (or
alphabetically), or all at once; ``status.restart`` follows, and each component's pods are replaced
(the id is stamped on them as ``nvidia.com/restartAt``). A restart requested while a managed rollout
runs is ``Superseded`` with one ``RestartSuperseded`` event; an id that does not change never rolls
pods again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dgd.cluster.resources import POD
from dgd.messages.dgd import DynamoGraphDeployment, RestartStatus
from tests.scenarios.graphs import on_pathway, set_image, set_replicas
from tests.scenarios.grove.stage import NS, Edit, Stage, on_stage, upstream

pytestmark = pytest.mark.anyio

DISAGG = "ai-dynamo-dynamo/examples/backends/vllm/deploy/disagg.yaml"
PATHWAYS = ("grove", "component")
COMPONENTS = ("Frontend", "VllmDecodeWorker", "VllmPrefillWorker")


async def successful_graph(stage: Stage, pathway: str) -> str:
    """Apply the disaggregated graph on ``pathway``; its name, once it is successful."""
    name = await stage.apply(on_pathway(upstream(DISAGG), pathway))
    await stage.until_state(name, "successful")
    return name


def request(restart: dict[str, Any]) -> Edit:
    def change(document: dict[str, Any]) -> None:
        document["spec"]["restart"] = restart

    return change


async def pods(stage: Stage) -> dict[str, set[str]]:
    """The uids of each component's running pods."""
    out: dict[str, set[str]] = {c: set() for c in COMPONENTS}
    for pod in (await stage.user.list(POD, namespace=NS)).items:
        labels = pod["metadata"].get("labels") or {}
        component = labels.get("nvidia.com/dynamo-component")
        if component in out and not pod["metadata"].get("deletionTimestamp"):
            out[component].add(pod["metadata"]["uid"])
    return out


async def progression(stage: Stage, name: str, until: Callable[[DynamoGraphDeployment], bool]) -> list[Any]:
    """Every distinct ``(state, restart phase, inProgress)`` the DGD went through, until ``until``."""
    seen: list[Any] = []

    async def record() -> bool:
        dgd = await stage.dgd(name)
        status = dgd.status
        restart = status.restart if status is not None else None
        value = (
            status.state if status else None,
            restart.phase if restart else None,
            tuple(restart.in_progress or ()) if restart else None,
        )
        if not seen or seen[-1] != value:
            seen.append(value)
        return until(dgd)

    await stage.sim.until(record, timeout=1200, every=1.0)
    return seen


def completed(restart_id: str) -> Callable[[DynamoGraphDeployment], bool]:
    def check(dgd: DynamoGraphDeployment) -> bool:
        status = dgd.status
        return bool(
            status is not None
            and status.state == "successful"
            and status.restart == RestartStatus(observed_id=restart_id, phase="Completed")
        )

    return check


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_a_sequential_restart_follows_its_order_and_replaces_every_pod(pathway: str) -> None:
    async with on_stage() as stage:
        # given the disaggregated graph, successful
        name = await successful_graph(stage, pathway)
        before = await pods(stage)

        # when a restart is requested in a chosen order
        order = ["VllmPrefillWorker", "Frontend", "VllmDecodeWorker"]
        await stage.edit(name, request({"id": "r1", "strategy": {"type": "Sequential", "order": order}}))
        seen = await progression(stage, name, completed("r1"))

        # then the components restarted one after the other, in that order, and the graph is back
        restarting = [value[2] for value in seen if value[1] == "Restarting"]
        assert restarting == [(c,) for c in order]
        assert seen[-1] == ("successful", "Completed", ())
        # and every pod was replaced
        after = await pods(stage)
        assert all(before[c] and after[c] and not (before[c] & after[c]) for c in COMPONENTS)
        assert "RestartSuperseded" not in [reason for _, reason, _ in await stage.events(name)]


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_a_sequential_restart_without_an_order_goes_alphabetically(pathway: str) -> None:
    async with on_stage() as stage:
        name = await successful_graph(stage, pathway)

        await stage.edit(name, request({"id": "r1"}))
        seen = await progression(stage, name, completed("r1"))

        restarting = [value[2] for value in seen if value[1] == "Restarting"]
        assert restarting == [(c,) for c in sorted(COMPONENTS)]


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_a_parallel_restart_restarts_every_component_at_once(pathway: str) -> None:
    async with on_stage() as stage:
        name = await successful_graph(stage, pathway)
        before = await pods(stage)

        await stage.edit(name, request({"id": "p1", "strategy": {"type": "Parallel"}}))
        seen = await progression(stage, name, completed("p1"))

        # then all components were in progress together first, and all pods were replaced
        restarting = [value[2] for value in seen if value[1] == "Restarting"]
        assert restarting[0] == tuple(sorted(COMPONENTS))
        after = await pods(stage)
        assert all(not (before[c] & after[c]) for c in COMPONENTS)


@pytest.mark.parametrize("pathway", PATHWAYS)
async def test_a_restart_id_that_does_not_change_never_rolls_pods_again(pathway: str) -> None:
    async with on_stage() as stage:
        # given a graph restarted once, and settled
        name = await successful_graph(stage, pathway)
        await stage.edit(name, request({"id": "r1", "strategy": {"type": "Parallel"}}))
        await progression(stage, name, completed("r1"))
        await stage.sim.run_for(60)
        settled = await pods(stage)

        # when the spec changes elsewhere (the frontend scaled), and a resync passes
        await stage.edit(name, set_replicas("Frontend", 2))
        await stage.until_successful(name, 3)
        await stage.sim.run_for(900)

        # then no pod of the restarted components was replaced, and the restart stays Completed
        after = await pods(stage)
        assert after["VllmDecodeWorker"] == settled["VllmDecodeWorker"]
        assert after["VllmPrefillWorker"] == settled["VllmPrefillWorker"]
        assert settled["Frontend"] <= after["Frontend"] and len(after["Frontend"]) == 2
        dgd = await stage.dgd(name)
        assert dgd.status is not None
        assert dgd.status.restart == RestartStatus(observed_id="r1", phase="Completed")


async def test_a_restart_requested_during_a_rollout_is_superseded_once() -> None:
    # The webhooks refuse a restart.id change while a rolling update is Pending or InProgress
    # (supplement §4.5 rule 6: test_webhook_handlers.py); without them the operator must still cope.
    async with on_stage(admission=False) as stage:
        # given a graph on the Component pathway, a worker rollout under way
        name = await successful_graph(stage, "component")

        await stage.edit(name, set_image("VllmDecodeWorker", "nvcr.io/nvidia/ai-dynamo/vllm-runtime:v2"))
        await stage.until(
            name,
            lambda d: d.status is not None and d.status.rolling_update is not None
            and d.status.rolling_update.phase == "InProgress",
        )  # fmt: skip

        # when a restart is requested meanwhile
        await stage.edit(name, request({"id": "r1"}))
        await stage.until(
            name,
            lambda d: d.status is not None and d.status.state == "successful"
            and d.status.rolling_update is not None and d.status.rolling_update.phase == "Completed",
            timeout=1200,
        )  # fmt: skip
        await stage.sim.run_for(300)

        # then the restart is superseded by the rollout (which replaced the worker's pods anyway),
        # with one Warning saying so
        dgd = await stage.dgd(name)
        assert dgd.status is not None
        assert dgd.status.restart == RestartStatus(observed_id="r1", phase="Superseded")
        warnings = [e for e in await stage.events(name) if e[0] == "Warning"]
        assert warnings == [("Warning", "RestartSuperseded", "Restart r1 superseded by rolling update")]
