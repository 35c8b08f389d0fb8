"""Metrics: controller-runtime's names and the actor runtime's, scraped over HTTP from a running daemon."""

from __future__ import annotations

import aiohttp
import anyio
import anyio.lowlevel
import msgspec
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dgd.actors.machinery.loop import Nudge
from dgd.actors.machinery.workers import Workers
from dgd.actors.tree import DGDS
from dgd.cluster.resources import DGD
from dgd.daemon.metrics import DGD_CONTROLLER, DaemonMetrics
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.runtime import ActorSystem, ManualClock, settle
from tests.unit.actors.operator.harness import manifest
from tests.unit.daemon.harness import LEASE_NAME, NS, advance, daemon, installed, running

pytestmark = pytest.mark.anyio

#: Every series a controller-runtime dashboard or an actor dashboard reads.
NAMES = (
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds",
    "controller_runtime_active_workers",
    "workqueue_depth",
    "workqueue_adds_total",
    "workqueue_queue_duration_seconds",
    "workqueue_retries_total",
    "rest_client_requests_total",
    "leader_election_master_status",
    "dgd_actor_restarts_total",
    "dgd_actor_mailbox_depth",
    "dgd_supervisor_escalations_total",
    "dgd_actors",
    "dgd_event_loop_lag_seconds",
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, series: str, **labels: str) -> float:
    return samples.get((series, frozenset(labels.items())), 0.0)


async def scrape(port: int | None) -> tuple[str, Samples]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    return text, parse(text)


async def test_a_scrape_after_a_few_reconciles_has_every_series_with_what_happened() -> None:
    clock, server = await installed()
    a = daemon(server.client(), clock, "a")
    async with running(a):
        # given a leading daemon that reconciled a DGD, then was nudged twice more
        await server.create(DGD, msgspec.convert(manifest(), DynamoGraphDeployment))
        await settle()
        assert a.system is not None
        for _ in range(2):
            a.system.ref(f"{DGDS}/{NS}/demo").tell_nowait(Nudge())
            await settle()

        # and whose DGD actor was killed once and restarted by its supervisor
        assert a.system.kill(f"{DGDS}/{NS}/demo")
        await advance(clock, 5.0)

        # when Prometheus scrapes it
        text, samples = await scrape(a.metrics_port)

    # then every series is there, under controller-runtime's and the runtime's names
    for name in NAMES:
        assert f"# TYPE {name} " in text, name
    # and they say what happened
    reconciles = value(
        samples, "controller_runtime_reconcile_total", controller=DGD_CONTROLLER, result="success"
    )
    assert reconciles == 4  # the first, two nudges, the restarted incarnation's first
    assert value(samples, "workqueue_adds_total", name=DGD_CONTROLLER) == reconciles
    # every reconcile is timed (the DGD actor reports each one)
    assert value(samples, "controller_runtime_reconcile_time_seconds_count", controller=DGD_CONTROLLER) == 4
    assert value(samples, "controller_runtime_active_workers", controller=DGD_CONTROLLER) == 0
    assert value(samples, "rest_client_requests_total", code="200", method="GET") > 0
    assert value(samples, "rest_client_requests_total", code="201", method="POST") > 0
    assert value(samples, "leader_election_master_status", name=LEASE_NAME) == 1
    assert value(samples, "dgd_actor_restarts_total", kind="DGDActor") == 1
    assert value(samples, "dgd_actors", kind="DGDActor") == 1
    assert value(samples, "dgd_actors", kind="Informer") >= 10
    assert value(samples, "workqueue_depth", name=DGD_CONTROLLER) == 0


async def test_a_standby_reports_that_it_does_not_lead_and_runs_no_actors() -> None:
    clock, server = await installed()
    a, b = daemon(server.client(), clock, "a"), daemon(server.client(), clock, "b")
    async with running(a, b):
        # when the standby is scraped
        _, samples = await scrape(b.metrics_port)

    # then it says it is not the leader, and has no actors
    assert value(samples, "leader_election_master_status", name=LEASE_NAME) == 0
    assert not any(name == "dgd_actors" for name, _ in samples)


def test_reported_reconciles_are_counted_and_the_runtime_hooks_count_none() -> None:
    metrics = DaemonMetrics()
    path = f"{DGDS}/{NS}/demo"

    # given one message the runtime reports handled (the reconcile reports are what count)
    metrics.message_processed(path, Nudge)

    # when the actors report reconciles themselves: one succeeded, one failed, one to be retried
    metrics.reconcile_started(DGD_CONTROLLER, NS, "demo")
    metrics.reconcile_finished(DGD_CONTROLLER, NS, "demo", "success", 0.0)
    metrics.reconcile_started(DGD_CONTROLLER, NS, "demo")
    metrics.reconcile_finished(DGD_CONTROLLER, NS, "demo", "error", 0.25)
    metrics.message_processed(path, Nudge)
    metrics.reconcile_started(DGD_CONTROLLER, NS, "demo")
    id_during = metrics.reconcile_id(path)
    metrics.reconcile_finished(DGD_CONTROLLER, NS, "demo", "requeue", 0.5)
    metrics.message_processed(path, Nudge)

    # then the reports count, and the handled messages do not
    samples = parse(_exposition(metrics))
    assert (
        value(samples, "controller_runtime_reconcile_total", controller=DGD_CONTROLLER, result="success") == 1
    )
    assert (
        value(samples, "controller_runtime_reconcile_total", controller=DGD_CONTROLLER, result="error") == 1
    )
    assert (
        value(samples, "controller_runtime_reconcile_total", controller=DGD_CONTROLLER, result="requeue") == 1
    )
    assert value(samples, "controller_runtime_reconcile_errors_total", controller=DGD_CONTROLLER) == 1
    assert value(samples, "workqueue_retries_total", name=DGD_CONTROLLER) == 2
    assert value(samples, "controller_runtime_reconcile_time_seconds_sum", controller=DGD_CONTROLLER) == 0.75
    assert value(samples, "controller_runtime_active_workers", controller=DGD_CONTROLLER) == 0
    assert id_during == f"{NS}/demo#3"


def test_escalations_and_restarts_are_counted() -> None:
    metrics = DaemonMetrics()

    # when a supervisor escalates and an actor outside any bound system restarts
    metrics.escalated("/operator/informers")
    metrics.restarted("/operator/router", 1)

    # then both are counted
    samples = parse(_exposition(metrics))
    assert value(samples, "dgd_supervisor_escalations_total") == 1
    assert value(samples, "dgd_actor_restarts_total", kind="unknown") == 1


def test_parkings_undecodable_objects_and_dropped_events_are_counted() -> None:
    metrics = DaemonMetrics()

    # when an actor is parked, an informer leaves out an object it cannot decode, and events are dropped
    metrics.parked("/operator/dgds/ns/x")
    metrics.undecodable("DynamoGraphDeploymentScalingAdapter")
    metrics.event_dropped("refused")
    metrics.event_dropped("full")
    metrics.event_dropped("full")

    # then each is counted by its label
    samples = parse(_exposition(metrics))
    assert value(samples, "dgd_actor_parkings_total", kind="unknown") == 1
    assert value(samples, "dgd_informer_decode_errors_total", kind="DynamoGraphDeploymentScalingAdapter") == 1
    assert value(samples, "dgd_events_dropped_total", reason="refused") == 1
    assert value(samples, "dgd_events_dropped_total", reason="full") == 2


def _exposition(metrics: DaemonMetrics) -> str:
    return generate_latest(metrics.registry).decode()


async def test_dgds_waiting_for_a_reconcile_worker_count_in_the_work_queue_depth() -> None:
    metrics = DaemonMetrics()
    workers = Workers(1)
    release = anyio.Event()

    async def reconcile(key: str) -> None:
        async with workers.slot(key) as granted:
            assert granted
            await release.wait()

    async with ActorSystem([], clock=ManualClock()) as system, anyio.create_task_group() as tg:
        metrics.bind(system, workers)
        # given one DGD reconciling on the only worker and two more waiting for it
        for key in (f"{NS}/a", f"{NS}/b", f"{NS}/c"):
            tg.start_soon(reconcile, key)
        await settle()

        # when Prometheus scrapes, then the two waiting are the DGD controller's queue
        samples = parse(_exposition(metrics))
        assert value(samples, "workqueue_depth", name=DGD_CONTROLLER) == 2
        assert workers.queued == {f"{NS}/b", f"{NS}/c"} and workers.busy == 1

        # and once the worker is free and every one had its turn, nothing is queued
        release.set()
    samples = parse(_exposition(metrics))
    assert value(samples, "workqueue_depth", name=DGD_CONTROLLER) == 0


class _LateClock:
    """A clock on which every sleep wakes ``late`` seconds after it was due (a busy loop), ``wakes`` times."""

    def __init__(self, late: float, wakes: int) -> None:
        self._now = 0.0
        self._late = late
        self._wakes = wakes

    def now(self) -> float:
        return self._now

    async def sleep(self, delay: float) -> None:
        if self._wakes == 0:
            await anyio.sleep_forever()
        self._wakes -= 1
        self._now += delay + self._late
        await anyio.lowlevel.checkpoint()


async def test_the_event_loop_lag_is_how_late_each_periodic_wake_up_comes() -> None:
    metrics = DaemonMetrics()

    # given a loop on which the monitor's timer fires 0.3 s late, three times
    clock = _LateClock(late=0.3, wakes=3)

    # when the lag monitor has woken three times
    async with anyio.create_task_group() as tg:
        tg.start_soon(metrics.watch_loop_lag, clock)
        await settle()
        tg.cancel_scope.cancel()

    # then three samples of 0.3 s were observed, each above the 0.25 s bucket, within the 0.5 s one
    samples = parse(_exposition(metrics))
    assert value(samples, "dgd_event_loop_lag_seconds_count") == 3
    assert value(samples, "dgd_event_loop_lag_seconds_sum") == pytest.approx(0.9)
    assert value(samples, "dgd_event_loop_lag_seconds_bucket", le="0.25") == 0
    assert value(samples, "dgd_event_loop_lag_seconds_bucket", le="0.5") == 3
