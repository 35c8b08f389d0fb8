"""The daemon's recorder: someone else's changes become records, the operator's own never do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dgd.cluster.resources import DGD, DGDSA
from dgd.daemon.trace_recorder import SETTLE, DaemonRecorder
from dgd.messages.config import OperatorConfig
from dgd.messages.trace import Apply, Delete, Expect, Patch
from dgd.sim.trace_io import read_trace

NS = "team-a"
GRAPH = (str(DGD), NS, "demo")
ADAPTER = (str(DGDSA), NS, "demo-worker")
READY = {"type": "Ready", "status": "True", "reason": "AllReady"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def dgd(version: int, *, replicas: int = 2, state: str | None = None, **metadata: Any) -> dict[str, Any]:
    meta = {"name": "demo", "namespace": NS, "uid": "u-demo", "resourceVersion": str(version)}
    obj: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": meta | metadata,
        "spec": {"components": [{"name": "Worker", "type": "worker", "replicas": replicas}]},
    }
    if state is not None:
        obj["status"] = {"state": state, "conditions": [READY]}
    return obj


def adapter(version: int, replicas: int) -> dict[str, Any]:
    owner = {"kind": "DynamoGraphDeployment", "name": "demo", "uid": "u-demo", "controller": True}
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {
            "name": "demo-worker",
            "namespace": NS,
            "uid": "u-adapter",
            "resourceVersion": str(version),
            "ownerReferences": [owner],
        },
        "spec": {"replicas": replicas, "dgdRef": {"name": "demo", "componentName": "Worker"}},
    }


def recorder(tmp_path: Path) -> tuple[DaemonRecorder, Clock]:
    clock = Clock()
    return DaemonRecorder(tmp_path / "trace.jsonl", config=OperatorConfig(), clock=clock), clock


def changes(rec: DaemonRecorder) -> list[Any]:
    return [r for r in rec.trace().records if not isinstance(r, Expect)]


def test_a_users_graph_and_edit_are_recorded_and_the_operators_writes_are_not(tmp_path: Path) -> None:
    rec, clock = recorder(tmp_path)
    # given a user's DGD, then the operator's finalizer patch (its answer came before the event)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    clock.now += 1
    rec.writing(GRAPH)
    rec.written(GRAPH, dgd(2, finalizers=["nvidia.com/finalizer"]))
    rec.hear(str(DGD), "MODIFIED", dgd(1), dgd(2, finalizers=["nvidia.com/finalizer"]))
    # and its status write, whose event arrived before the write answered
    rec.writing(GRAPH)
    rec.hear(str(DGD), "MODIFIED", dgd(2), dgd(3, state="successful"))
    rec.written(GRAPH, dgd(3, state="successful"))
    # when the user scales the worker
    clock.now += 1
    rec.hear(str(DGD), "MODIFIED", dgd(3, state="successful"), dgd(4, replicas=3, state="successful"))

    # then the trace holds the apply and the user's edit only, at their times
    recorded = changes(rec)
    assert [type(r) for r in recorded] == [Apply, Patch]
    assert recorded[0].at == 0.0 and recorded[0].object["metadata"] == {"name": "demo", "namespace": NS}
    assert recorded[1].at == 2.0
    assert recorded[1].patch == {
        "spec": {"components": [{"name": "Worker", "type": "worker", "replicas": 3}]}
    }


def test_an_event_heard_during_a_write_of_the_same_object_is_judged_by_the_answer(tmp_path: Path) -> None:
    rec, _ = recorder(tmp_path)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    # given the operator writing the DGD while a user's edit lands first
    rec.writing(GRAPH)
    rec.hear(str(DGD), "MODIFIED", dgd(1), dgd(2, replicas=5))
    assert [type(r) for r in changes(rec)] == [Apply]  # held until the write answers
    # when the write answers with a later version, then the edit was someone else's
    rec.written(GRAPH, dgd(3, replicas=5, finalizers=["nvidia.com/finalizer"]))
    assert [type(r) for r in changes(rec)] == [Apply, Patch]


def test_a_failed_write_releases_what_it_held_as_someone_elses(tmp_path: Path) -> None:
    rec, _ = recorder(tmp_path)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    rec.writing(GRAPH)
    rec.hear(str(DGD), "MODIFIED", dgd(1), dgd(2, replicas=4))
    rec.written(GRAPH, None)
    assert [type(r) for r in changes(rec)] == [Apply, Patch]


def test_an_owned_adapters_scale_is_recorded_but_not_its_coming_and_going(tmp_path: Path) -> None:
    rec, _ = recorder(tmp_path)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    # given the adapter the operator made for the DGD (heard after its create answered)
    rec.writing(ADAPTER)
    rec.written(ADAPTER, adapter(2, 2))
    rec.hear(str(DGDSA), "ADDED", None, adapter(2, 2))
    # when an autoscaler writes its scale, then the user deletes the DGD and the adapter is collected
    rec.hear(str(DGDSA), "MODIFIED", adapter(2, 2), adapter(3, 4))
    rec.hear(str(DGD), "MODIFIED", dgd(1), dgd(4, deletionTimestamp="2026-01-01T00:00:00Z"))
    rec.hear(str(DGDSA), "DELETED", adapter(3, 4), None)
    rec.hear(str(DGD), "DELETED", dgd(4), None)

    # then the scale and the DGD's deletion are recorded, nothing else
    recorded = changes(rec)
    assert [type(r) for r in recorded] == [Apply, Patch, Delete]
    assert (recorded[1].target.name, recorded[1].patch) == ("demo-worker", {"spec": {"replicas": 4}})
    assert recorded[2].target.name == "demo"


def test_the_saved_trace_expects_each_graphs_last_state_with_time_to_settle(tmp_path: Path) -> None:
    rec, clock = recorder(tmp_path)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    rec.writing(GRAPH)
    rec.written(GRAPH, dgd(2, state="successful"))
    rec.hear(str(DGD), "MODIFIED", dgd(1), dgd(2, state="successful"))
    clock.now += 30

    rec.save()

    trace = read_trace(rec.path.read_bytes())
    (expect,) = [r for r in trace.records if isinstance(r, Expect)]
    assert (expect.target.name, expect.state, expect.status) == ("demo", "successful", "True")
    assert (expect.at, expect.by) == (30.0, 30.0 + SETTLE)
    assert trace.header.description == "recorded by dgd-operator run"


def test_a_users_change_between_two_operator_writes_is_recorded_even_when_the_cache_skipped_it(
    tmp_path: Path,
) -> None:
    rec, _ = recorder(tmp_path)
    rec.hear(str(DGD), "ADDED", None, dgd(1))
    # given two operator writes answered before their events came, a user's edit landing between them
    for version, replicas in ((2, 2), (4, 6)):
        rec.writing(GRAPH)
        rec.written(GRAPH, dgd(version, replicas=replicas))
    # when the cache passes over the two older events (it already holds version 4), then hears version 4
    rec.hear(str(DGD), "MODIFIED", None, dgd(2))
    rec.hear(str(DGD), "MODIFIED", None, dgd(3, replicas=6))
    rec.hear(str(DGD), "MODIFIED", dgd(4, replicas=6), dgd(4, replicas=6))

    # then the user's edit is the one change recorded after the apply
    recorded = changes(rec)
    assert [type(r) for r in recorded] == [Apply, Patch]
    assert recorded[1].patch == {
        "spec": {"components": [{"name": "Worker", "type": "worker", "replicas": 6}]}
    }
