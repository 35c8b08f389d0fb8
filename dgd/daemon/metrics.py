"""The daemon's Prometheus metrics: controller-runtime's names, fed by the actor runtime.

Dashboards built for controller-runtime operators read the same series here:
``controller_runtime_reconcile_total{controller,result}``, ``controller_runtime_reconcile_errors_total``,
``controller_runtime_reconcile_time_seconds``, ``controller_runtime_active_workers``, ``workqueue_depth``,
``workqueue_adds_total``, ``workqueue_queue_duration_seconds``, ``workqueue_retries_total``,
``rest_client_requests_total{code,method}`` and ``leader_election_master_status``; plus the actor
runtime's own: ``dgd_actor_restarts_total{kind}``, ``dgd_actor_mailbox_depth{kind}``,
``dgd_supervisor_escalations_total``, ``dgd_actor_parkings_total{kind}``,
``dgd_informer_decode_errors_total{kind}``, ``dgd_events_dropped_total{reason}`` and
``dgd_actors{kind}``; and the process's
``dgd_event_loop_lag_seconds``, a histogram of how late a timer on the event loop fires
(``watch_loop_lag``, every ``LAG_INTERVAL``): every step that holds the loop delays every actor,
watch and lease renewal by as much, and a histogram keeps each stall between two scrapes (a gauge
would show only the last sample). For example, alert on
``histogram_quantile(0.99, rate(dgd_event_loop_lag_seconds_bucket[5m])) > 0.1``.

A "controller" is a kind of reconciling actor: the DGD actors under ``/operator/dgds`` and the
scaling-adapter actors under ``/operator/adapters``, which report every reconcile they run
(``reconcile_started``/``reconcile_finished``: ``ReconcileObserver``). Their "work queue" is their
mailboxes: a DGD actor with a nudge waiting is one queued key (nudges coalesce, as a work queue
deduplicates keys), and so is a DGD waiting for a reconcile worker.

Every hook runs on the event loop and is cheap; the per-kind gauges are computed when Prometheus
scrapes (on the loop too: the HTTP server is an aiohttp app on the same loop).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Gauge, Histogram
from prometheus_client import Counter as PromCounter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dgd.actors.machinery.loop import ADAPTER_CONTROLLER, DGD_CONTROLLER
from dgd.actors.machinery.workers import Workers
from dgd.actors.tree import ADAPTERS, DGDS
from dgd.runtime import ActorSystem, Clock, NullMetrics

#: The controller name of each kind of reconciling actor (controller-runtime's lower-case kind).
CONTROLLERS = (DGD_CONTROLLER, ADAPTER_CONTROLLER)
RESULTS = ("success", "error", "requeue", "requeue_after")

_RECONCILER = re.compile(rf"^(?:({re.escape(DGDS)})|({re.escape(ADAPTERS)}))/([^/]+)/([^/]+)$")
_UNDER_RECONCILER = re.compile(rf"^((?:{re.escape(DGDS)}|{re.escape(ADAPTERS)})/[^/]+/[^/]+)(?:/|$)")

#: controller-runtime's reconcile time buckets (seconds).
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0,
    40.0, 50.0, 60.0,
)  # fmt: skip
#: client-go's work queue latency buckets: 10ns to 1000s, by powers of ten.
QUEUE_BUCKETS = tuple(10e-9 * 10**i for i in range(12))
#: Event loop lag buckets (seconds): 1 ms to 10 s (the lease's renew deadline); 0.1 s is the target.
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: How often the loop lag is sampled (seconds): any stall at least this long is seen.
LAG_INTERVAL = 0.1


def reconciler(path: str) -> tuple[str, str, str] | None:
    """``(controller, namespace, name)`` of the reconciling actor at ``path`` (``None``: not one)."""
    match = _RECONCILER.match(path)
    if match is None:
        return None
    controller = DGD_CONTROLLER if match.group(1) else ADAPTER_CONTROLLER
    return controller, match.group(3), match.group(4)


def reconciler_of(path: str) -> str | None:
    """The path of the reconciling actor that ``path`` is, or is a descendant of (``None``: neither)."""
    match = _UNDER_RECONCILER.match(path)
    return match.group(1) if match is not None else None


class DaemonMetrics(NullMetrics):
    """The registry and everything that feeds it: the runtime's ``Metrics`` hooks (restarts and
    escalations; the others report nothing), the ``ReconcileObserver`` hooks, the rest client
    (``requested``) and the elector (``leading``).

    ``bind`` the actor system to get the per-kind gauges and mailbox-based numbers; unbound, they
    read zero.
    """

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._system: ActorSystem | None = None
        #: The DGD reconcile workers of the bound system (their waiting keys are queued work).
        self.workers: Workers | None = None
        self._numbers: Counter[str] = Counter()
        self._active: Counter[str] = Counter()
        self._define(self.registry)
        # Every controller's series exist from the start, as controller-runtime initialises them.
        for controller in CONTROLLERS:
            for result in RESULTS:
                self.reconciles.labels(controller, result)
            self.reconcile_errors.labels(controller)
            self.reconcile_time.labels(controller)
            self.active_workers.labels(controller).set_function(self._workers(controller))
            self.adds.labels(controller)
            self.queue_duration.labels(controller)
            self.retries.labels(controller)
        self.registry.register(_ActorGauges(self))

    def _define(self, registry: CollectorRegistry) -> None:
        """Every series, under controller-runtime's and client-go's names (see the module)."""
        counter = functools.partial(PromCounter, registry=registry)
        gauge = functools.partial(Gauge, registry=registry)
        histogram = functools.partial(Histogram, registry=registry)
        self.reconciles = counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
        )
        self.reconcile_errors = counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
        )
        self.reconcile_time = histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
        )
        self.active_workers = gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            ["controller"],
        )
        self.adds = counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"], registry=registry
        )
        self.queue_duration = histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name"],
            buckets=QUEUE_BUCKETS,
        )
        self.retries = counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            ["name"],
        )
        self.requests = counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code and method",
            ["code", "method"],
        )
        self.leader = gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
        )
        self.restarts = counter(
            "dgd_actor_restarts_total",
            "Actors restarted by their supervisor, by actor kind",
            ["kind"],
        )
        self.escalations = counter(
            "dgd_supervisor_escalations_total",
            "Supervisors that exceeded their restart intensity and failed to their parent",
        )
        self.decode_errors = counter(
            "dgd_informer_decode_errors_total",
            "Objects (versions of them) an informer could not decode and left out, by kind",
            ["kind"],
        )
        self.events_dropped = counter(
            "dgd_events_dropped_total",
            "Events the operator dropped instead of posting: refused by the API, or over a full queue",
            ["reason"],
        )
        self.parkings = counter(
            "dgd_actor_parkings_total",
            "Actors over their own restart intensity, parked until their backoff ends, by actor kind",
            ["kind"],
        )
        self.loop_lag = histogram(
            "dgd_event_loop_lag_seconds",
            "How late a periodic timer on the event loop fired (the loop was busy when it was due)",
            buckets=LAG_BUCKETS,
        )

    async def watch_loop_lag(self, clock: Clock, interval: float = LAG_INTERVAL) -> None:
        """Sample the event loop's lag forever (run it as a task): sleep ``interval`` on ``clock``,
        observe how much later than due it woke."""
        while True:
            due = clock.now() + interval
            await clock.sleep(interval)
            self.loop_lag.observe(max(0.0, clock.now() - due))

    def _workers(self, controller: str) -> Callable[[], float]:
        return lambda: float(self._active[controller])

    # The actor system whose tree the gauges read.

    def bind(self, system: ActorSystem | None, workers: Workers | None = None) -> None:
        """Read the per-kind gauges from ``system`` (``None``: the operator tree stopped); the DGDs
        waiting for one of ``workers`` count in the DGD controller's work queue depth."""
        self._system = system
        self.workers = workers if system is not None else None
        if system is None:
            self._numbers.clear()

    @property
    def system(self) -> ActorSystem | None:
        return self._system

    # The rest client and the elector.

    def requested(self, method: str, code: str) -> None:
        self.requests.labels(code, method).inc()

    def leading(self, lease: str, leading: bool) -> None:
        self.leader.labels(lease).set(1.0 if leading else 0.0)

    # ReconcileObserver: exact numbers, from the reconciling actors themselves.

    def reconcile_started(self, controller: str, namespace: str, name: str) -> None:
        self._numbers[f"{_base(controller)}/{namespace}/{name}"] += 1
        self._active[controller] += 1
        self.adds.labels(controller).inc()

    def reconcile_finished(
        self, controller: str, namespace: str, name: str, result: str, seconds: float
    ) -> None:
        self._active[controller] = max(0, self._active[controller] - 1)
        self.reconciles.labels(controller, result).inc()
        self.reconcile_time.labels(controller).observe(seconds)
        if result == "error":
            self.reconcile_errors.labels(controller).inc()
        if result in ("error", "requeue"):
            self.retries.labels(controller).inc()

    def reconcile_id(self, path: str) -> str | None:
        """The id of the reconcile running at the reconciling actor ``path`` (``ns/name#n``: its
        n-th in this process), or ``None`` if ``path`` is not a reconciling actor."""
        found = reconciler(path)
        if found is None:
            return None
        return f"{found[1]}/{found[2]}#{self._numbers[path]}"

    # The runtime's Metrics hooks.

    def restarted(self, path: str, restarts: int) -> None:
        cell = self._system.lookup(path) if self._system is not None else None
        self.restarts.labels(cell.kind if cell is not None else "unknown").inc()

    def escalated(self, path: str) -> None:
        self.escalations.inc()

    def undecodable(self, kind: str) -> None:
        """An informer left out an object of ``kind`` it could not decode."""
        self.decode_errors.labels(kind).inc()

    def event_dropped(self, why: str) -> None:
        """The event poster dropped one event (``refused`` or ``full``)."""
        self.events_dropped.labels(why).inc()

    def parked(self, path: str) -> None:
        cell = self._system.lookup(path) if self._system is not None else None
        self.parkings.labels(cell.kind if cell is not None else "unknown").inc()

    def forget_gone(self) -> None:
        """Drop what is kept per actor for actors that no longer exist (DGDs deleted)."""
        system = self._system
        if system is None:
            return
        for path in [p for p in self._numbers if system.lookup(p) is None]:
            del self._numbers[path]


def _base(controller: str) -> str:
    return DGDS if controller == DGD_CONTROLLER else ADAPTERS


class _ActorGauges(Collector):
    """The gauges read from the actor tree at scrape time."""

    def __init__(self, metrics: DaemonMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily(name, text, labels=[label]) for name, text, label in _TREE_GAUGES]

    def collect(self) -> Iterator[Metric]:
        actors: Counter[str] = Counter()
        depth: Counter[str] = Counter()
        queued: Counter[str] = Counter({controller: 0 for controller in CONTROLLERS})
        system = self._metrics.system
        if system is not None:
            # A key is queued once, whether a nudge waits in its mailbox, it waits for a worker, or both.
            waiting = self._metrics.workers.queued if self._metrics.workers is not None else frozenset()
            for info in system.tree():
                actors[info.actor] += 1
                depth[info.actor] += info.mailbox_depth
                found = reconciler(info.path) if info.mailbox_depth else None
                if found is not None and not (
                    found[0] == DGD_CONTROLLER and f"{found[1]}/{found[2]}" in waiting
                ):
                    queued[found[0]] += 1
            queued[DGD_CONTROLLER] += len(waiting)
            self._metrics.forget_gone()
        for (name, text, label), values in zip(_TREE_GAUGES, (actors, depth, queued), strict=True):
            family = GaugeMetricFamily(name, text, labels=[label])
            for key in sorted(values):
                family.add_metric([key], float(values[key]))
            yield family


#: The gauges read from the tree: name, help, label.
_TREE_GAUGES = (
    ("dgd_actors", "Actors in the tree, by actor kind", "kind"),
    ("dgd_actor_mailbox_depth", "Messages waiting in actor mailboxes, by actor kind", "kind"),
    ("workqueue_depth", "Current depth of workqueue", "name"),
)
