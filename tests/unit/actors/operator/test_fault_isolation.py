"""One DGD's failures stay its own: a reconcile that raises is caught and backed off per DGD, an actor
that keeps crashing is parked (never escalated), and the router never waits for an actor to stop."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest

from dgd.actors import tree
from dgd.actors.dgd.actor import DGDActor
from dgd.actors.dgd.children.restart import RestartResolver
from dgd.actors.dgd.programs.grove import GroveProgram
from dgd.actors.machinery.cache import Cache
from dgd.actors.machinery.retries import Retries
from dgd.actors.machinery.workers import Workers
from dgd.cluster.errors import NotFound, ServerError
from dgd.cluster.memory import server as server_module
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import DGD, DGDSA, PCLQ, PCS, PCSG
from dgd.domain.events import INTERNAL_ERROR
from dgd.domain.projection import FAILED_TO_RECONCILE
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import CountingMetrics
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio


def raising_for(monkeypatch: pytest.MonkeyPatch, name: str) -> list[float]:
    """Make the Grove program raise ``KeyError`` for the DGD ``name`` (as a bug would); the returned
    list gets one entry per reconcile of it that reached the program."""
    calls: list[float] = []
    original = GroveProgram.reconcile

    async def reconcile(self: GroveProgram, dgd: DynamoGraphDeployment) -> Any:
        if dgd.metadata.name == name:
            calls.append(0.0)
            raise KeyError("components")
        return await original(self, dgd)

    monkeypatch.setattr(GroveProgram, "reconcile", reconcile)
    return calls


async def test_a_reconcile_that_raises_fails_only_its_dgd_says_so_in_words_and_backs_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = CountingMetrics()
    calls = raising_for(monkeypatch, "bad")
    async with running_operator(metrics=metrics) as op:
        # given a DGD whose reconcile raises, beside a healthy one
        await op.apply(manifest(name="bad"))
        await op.apply(manifest())
        await op.grove_realizes()

        # then the healthy one converges
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]
        # and the failing one says what happened in words, without runtime internals
        bad = await op.dgd("bad")
        assert bad.status is not None and bad.status.conditions
        ready = bad.status.conditions[0]
        assert (bad.status.state, ready.reason, ready.message) == (
            "failed",
            FAILED_TO_RECONCILE,
            INTERNAL_ERROR,
        )
        assert ("Warning", "ReconcileError", INTERNAL_ERROR) in await op.events("bad")

        # when T seconds pass, with watch events nudging it all along
        horizon = 2000.0
        for _ in range(int(horizon // 50)):
            op.nudge("bad", times=3)
            await op.advance(50)

        # then it reconciled no more than the backoff allows (0.5 s doubling to 1,000 s)
        bound = math.ceil(math.log2(horizon / 0.5)) + horizon / 1000 + 1
        assert 3 <= len(calls) <= bound, calls
        # and no actor crashed or was restarted for it: the operator supervisor least of all
        assert not [path for path in metrics.crashes if "/bad" in path or path == "/operator"]
        assert not metrics.escalations


async def test_a_spec_change_retries_a_failing_dgd_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = raising_for(monkeypatch, "demo")
    async with running_operator() as op:
        # given a DGD that failed often enough to back off for minutes
        await op.apply(manifest())
        for _ in range(8):
            await op.advance(2 ** len(calls))
        failed = len(calls)

        # when the user changes its spec
        monkeypatch.undo()
        await op.scale("Worker", 3)
        await op.grove_realizes()

        # then it is reconciled at once, not at the end of its backoff
        assert failed >= 8
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]


async def test_an_actor_that_keeps_crashing_is_parked_with_its_status_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = CountingMetrics()
    original = DGDActor.receive

    async def crashing(self: DGDActor, message: Any) -> None:
        # Outside the reconcile's own error handling: the actor itself crashes.
        if self._name == "bad":
            raise RuntimeError("boom")
        await original(self, message)

    monkeypatch.setattr(DGDActor, "receive", crashing)
    async with running_operator(metrics=metrics) as op:
        # given a DGD whose actor crashes on every message, beside a healthy DGD
        await op.apply(manifest())
        await op.apply(manifest(name="bad"))
        for _ in range(30):
            op.nudge("bad")
            await op.advance(1)

        # then it is parked once over its own restart budget, and its status says so in words
        path = "/operator/dgds/team-a/bad"
        bad = await op.dgd("bad")
        assert bad.status is not None and bad.status.conditions
        message = bad.status.conditions[0].message
        assert message.startswith(
            "The operator stopped working on this resource after repeated internal failures"
        )
        assert "/operator" not in message and "RuntimeError" not in message
        assert metrics.parkings[path] >= 1
        # and nothing above it was restarted, the healthy DGD's actor included
        assert not metrics.escalations
        assert not [p for p in metrics.restarts if p != path]

        # when its spec changes (and the bug is gone)
        restarts = metrics.restarts[path]
        monkeypatch.undo()
        await op.scale("Worker", 3, name="bad")

        # then it starts again at once, without waiting for its backoff
        assert metrics.restarts[path] == restarts + 1
        assert (await op.dgd("bad")).status.observed_generation == 2  # type: ignore[union-attr]


async def test_the_router_routes_events_while_an_actor_takes_its_time_to_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = DGDActor.on_stop
    stopping, released = anyio.Event(), anyio.Event()

    async def slow_stop(self: DGDActor) -> None:
        if self._name == "slow":
            stopping.set()
            await released.wait()  # for as long as the test says
        await original(self)

    monkeypatch.setattr(DGDActor, "on_stop", slow_stop)
    async with running_operator() as op:
        # given two reconciled DGDs
        await op.apply(manifest(name="slow"))
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()

        # when one is deleted and its actor takes its whole shutdown timeout to stop
        await op.cluster.delete(DGD.key(NS, "slow"))
        await op.settle()
        assert stopping.is_set()

        # then a change of the other is reconciled meanwhile (no time passes: the stop is not over)
        await op.scale("Worker", 3)
        scaled = (await op.cluster.get(PCLQ.key(NS, "demo-0-worker"))).spec.replicas
        released.set()
        assert scaled == 3


def poison_adapter(name: str) -> dict[str, Any]:
    """A scaling adapter our model refuses (``replicas: -1``) that a looser CRD would admit."""
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": -1, "dgdRef": {"name": "demo", "componentName": "Worker"}},
    }


async def test_an_object_the_model_refuses_is_left_out_and_every_other_object_is_reconciled() -> None:
    async def poisoned(server: MemoryCluster) -> None:
        server.create_loose(DGDSA.as_raw(), poison_adapter("listed"))

    async with running_operator(before=poisoned) as op:
        # given an undecodable adapter in the first list, and another arriving by the watch
        op.cluster.create_loose(DGDSA.as_raw(), poison_adapter("watched"))
        await op.settle()

        # when a DGD is applied
        await op.apply(manifest())
        await op.grove_realizes()

        # then it is reconciled to successful: the informers synced past what they cannot read
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]
        assert op.cache.get(DGDSA, NS, "listed") is None and op.cache.get(DGDSA, NS, "watched") is None


async def test_the_grove_scaler_reads_the_shared_cache_and_never_writes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writes: list[str] = []
    original = Cache.observe

    def observe(self: Cache, resource: Any, obj: Any) -> None:
        if resource in (PCLQ, PCSG):
            writes.append(f"{resource.kind} {obj.metadata.name}")
        original(self, resource, obj)

    monkeypatch.setattr(Cache, "observe", observe)
    async with running_operator() as op:
        # given a successful Grove DGD
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()

        # when the user scales its worker (Grove has not acted on it yet)
        await op.scale("Worker", 5)

        # then the clique was scaled, this reconcile saw it unprocessed, and no cache entry was made up
        assert (await op.cluster.get(PCLQ.key(NS, "demo-0-worker"))).spec.replicas == 5
        assert (await op.dgd()).status.state == "pending"  # type: ignore[union-attr]
        assert writes == []


async def test_a_crashed_step_reads_as_a_sentence_in_the_status(monkeypatch: pytest.MonkeyPatch) -> None:
    async def crashing(self: RestartResolver, message: Any) -> Any:
        raise KeyError("observedID")

    monkeypatch.setattr(RestartResolver, "receive", crashing)
    async with running_operator() as op:
        # given a DGD whose restart step's actor crashes on every ask
        await op.apply(manifest())

        # then its status says a step did not complete, without actor paths or exception names
        dgd = await op.dgd()
        assert dgd.status is not None and dgd.status.conditions
        message = dgd.status.conditions[0].message
        assert "an internal step of the operator did not complete; it is retried" in message
        assert "/operator" not in message and "KeyError" not in message and "crashed" not in message


async def test_a_failing_dgd_that_is_deleted_leaves_no_backoff_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    retries = Retries()
    monkeypatch.setattr(tree, "Retries", lambda: retries)

    async def failing(self: DGDActor, dgd: DynamoGraphDeployment) -> DynamoGraphDeployment:
        raise KeyError("workload-provider")

    # Before the finalizer is added: the deletion then needs no reconcile to succeed.
    monkeypatch.setattr(DGDActor, "_adopt_provider", failing)
    async with running_operator() as op:
        # given a DGD whose reconciles fail, backing off
        await op.apply(manifest())
        assert retries.failures(f"{NS}/demo") >= 1

        # when it is deleted, and its actor stopped, while it backs off
        await op.cluster.delete(DGD.key(NS, "demo"))
        await op.advance(1)

        # then the DGD is gone, and so is its entry in the backoff ledger
        with pytest.raises(NotFound):
            await op.dgd()
        assert retries.failures(f"{NS}/demo") == 0


async def test_an_events_api_that_never_answers_holds_no_reconcile(monkeypatch: pytest.MonkeyPatch) -> None:
    posting, released = anyio.Event(), anyio.Event()

    async def hanging_emit(self: MemoryCluster, event: Any) -> Any:
        posting.set()
        await released.wait()  # an API server that takes the Event and never answers
        raise ServerError("the API server went away")

    monkeypatch.setattr(MemoryCluster, "emit", hanging_emit)
    # given one reconcile worker, so a reconcile held by an event would hold every other one
    async with running_operator(workers=Workers(1)) as op:
        try:
            # when two DGDs are applied one after the other, each with events to record
            await op.apply(manifest(name="first"))
            await op.apply(manifest())
            for name in ("first", "demo"):
                await op.grove_accepts(name)
                await op.grove_realizes(name)
            done = {name: (await op.dgd(name)).status for name in ("first", "demo")}
        finally:
            released.set()  # else the operator could not stop

        # then an event was being posted, and still both DGDs were reconciled to successful
        assert posting.is_set()
        assert {name: status.state if status else None for name, status in done.items()} == {
            "first": "successful",
            "demo": "successful",
        }


async def test_a_pod_clique_set_from_a_newer_grove_is_still_read(monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_operator() as op:
        # given a reconciled DGD whose PodCliqueSet a newer Grove gives status fields of shapes our
        # model does not know (a new pod-gang phase; last errors as a string): admitted by its CRD
        await op.apply(manifest())
        await op.grove_accepts()
        monkeypatch.setattr(server_module, "validate", lambda resource, data, schema_check=None: None)
        raw = PCS.as_raw()
        live = await op.cluster.get(raw.key(NS, "demo"))
        newer = {"podGangStatuses": [{"name": "demo-0", "phase": "Preempted"}], "lastErrors": "quota"}
        await op.cluster.replace_status(raw, {**live, "status": {**live["status"], **newer}})
        monkeypatch.undo()

        # when Grove makes its cliques ready
        await op.grove_realizes()

        # then the operator still sees the set (without the two fields) and the DGD is successful
        seen = op.cache.get(PCS, NS, "demo")
        assert seen is not None and seen.status is not None and seen.status.last_errors is None
        assert (await op.dgd()).status.state == "successful"  # type: ignore[union-attr]
