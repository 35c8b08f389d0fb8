"""``one-serving-generation``: judged only once a rollout has ended, on the live worker DCDs."""

from __future__ import annotations

from typing import Any

from dgd.sim.invariants_generations import several_generations


def dgd(state: str = "successful", phase: str | None = "Completed", observed: int = 2) -> dict[str, Any]:
    status: dict[str, Any] = {"state": state, "observedGeneration": observed}
    if phase is not None:
        status["rollingUpdate"] = {"phase": phase}
    return {"metadata": {"namespace": "default", "name": "g", "generation": 2}, "status": status}


def worker(worker_hash: str, *, component: str = "Worker", deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": f"g-{component.lower()}-{worker_hash}",
        "labels": {"nvidia.com/dynamo-worker-hash": worker_hash},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"kind": "DynamoComponentDeployment", "metadata": metadata, "spec": {"name": component}}


FRONTEND = {
    "kind": "DynamoComponentDeployment",
    "metadata": {"name": "g-frontend"},
    "spec": {"name": "Frontend"},
}


def test_two_live_generations_of_a_settled_dgd_are_named() -> None:
    found = several_generations(
        dgd(), [FRONTEND, worker("aaaa"), worker("bbbb"), worker("cccc", component="P")]
    )
    assert found == (
        "default/g: successful with no rollout active, but several worker generations serve "
        "(Worker: aaaa, bbbb)"
    )
    assert several_generations(dgd(phase=None), [worker("aaaa"), worker("bbbb")]) is not None


def test_one_generation_per_component_holds() -> None:
    assert several_generations(dgd(), [FRONTEND, worker("aaaa"), worker("cccc", component="P")]) is None


def test_a_generation_being_deleted_does_not_serve() -> None:
    assert several_generations(dgd(), [worker("aaaa", deleting=True), worker("bbbb")]) is None


def test_it_is_not_judged_during_a_rollout_or_before_the_dgd_settled() -> None:
    both = [worker("aaaa"), worker("bbbb")]
    assert all(
        several_generations(dgd(phase=phase), both) is None for phase in ("Pending", "InProgress", "Failed")
    )
    assert several_generations(dgd(state="pending"), both) is None
    assert several_generations(dgd(observed=1), both) is None
