"""The ``dgd-operator run`` command: the operator as an in-cluster daemon.

Runs the operator against a Kubernetes API server (in-cluster service account, or a kubeconfig from
a laptop) with leader election on a Lease, Prometheus metrics, liveness and readiness probes, JSON
logs and a graceful shutdown on SIGTERM or SIGINT (a second signal exits at once).

Settings come from the flags; a flag left out falls back to the ``--config`` file's key named in
its help, then to the default shown. Exit codes (:mod:`dgd.cli.exits`): 0 stopped on request
(SIGTERM or SIGINT), 1 the lease was lost, the operator failed, the cluster could not be reached or
refused to start it (a required feature gate's API missing), or the config file holds a bad value, 2
usage error or a file that cannot be read (``--config``, the kubeconfig), 130 interrupted while
starting.

This module is the command line: it imports ``dgd.daemon`` and, only when it runs, the kube adapter.
The flags themselves, with their help and defaults, are in :mod:`dgd.cli.run_flags`.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import yaml
from prometheus_client import disable_created_metrics

from dgd.cli.exits import EXIT_FAILED, Invalid, Usage, cluster_problem, wire
from dgd.cli.inputs import (
    POD_NAMESPACE_FILE,
    check_kubeconfig,
    duration,
    namespace_problem,
    parse_config,
    read_text,
    writable,
)
from dgd.cli.run_flags import (
    DEFAULT_LEASE_NAME,
    add_cluster_flags,
    add_election_flags,
    add_process_flags,
    add_serving_flags,
)
from dgd.cli.run_webhooks import add_webhook_flags, webhook_settings
from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.daemon.lease import LeaseTiming
from dgd.daemon.logs import FORMATS, LEVELS, Format, configure
from dgd.daemon.lookups import Discover
from dgd.daemon.metrics import DaemonMetrics
from dgd.daemon.run import Daemon, DaemonSettings
from dgd.daemon.servers import AddressError, parse_address
from dgd.domain.gates import GateError, effective_config, resolve_gates, served_apis
from dgd.messages.config import RELEASE_NAMESPACE, OperatorConfig

#: Seconds within which a second stop signal is taken for a copy of the first.
DUPLICATE_SIGNAL = 1.0

DESCRIPTION = (
    "Run the operator against a Kubernetes API server (the in-cluster service account, or a kubeconfig "
    "from a laptop) with leader election on a Lease, Prometheus metrics, liveness and readiness probes, "
    "JSON logs and a graceful shutdown on SIGTERM or SIGINT (a second signal exits at once). A flag left "
    "out falls back to the --config file's key named in its help, then to the default shown."
)


def add_command(commands: Any) -> None:
    """Add ``run`` to the ``dgd-operator`` parser."""
    run = commands.add_parser(
        "run",
        help="run the operator against a Kubernetes cluster (the in-cluster daemon)",
        description=DESCRIPTION,
    )
    add_cluster_flags(run.add_argument_group("cluster"))
    add_serving_flags(run.add_argument_group("metrics and probes"))
    add_webhook_flags(run.add_argument_group("admission and conversion webhooks"))
    add_election_flags(run.add_argument_group("leader election"))
    add_process_flags(run.add_argument_group("process"))
    wire(
        run,
        _run,
        ok="stopped by SIGTERM or SIGINT",
        failed="lease lost, operator failed, or the cluster unreachable or refusing to start it",
    )


class Options(msgspec.Struct, frozen=True, kw_only=True):
    """Everything ``run`` needs, settled from the flags, the config file and the defaults."""

    config: OperatorConfig
    settings: DaemonSettings
    kubeconfig: str | None
    qps: float
    burst: int
    log_format: Format
    log_level: str
    record: Path | None = None


def options(args: argparse.Namespace) -> Options:
    """Settle the flags (see the module); ``Usage`` names the flag that is wrong, ``Invalid`` the config
    file's key, ``BadFile`` a file that cannot be read or written."""
    text = read_text(args.config, flag="--config") if args.config is not None else ""
    config = parse_config(text, args.config)
    raw = _raw_config(text)
    # Namespace-restricted mode: the flags name the watched namespaces; the config's one key is the
    # switch the operator reads (planner RBAC, validation), so it holds the first of them.
    namespaces = tuple(dict.fromkeys(args.namespace or ()))
    for namespace in namespaces:
        problem = namespace_problem(namespace)
        if problem:
            raise Usage(f"--namespace: {namespace!r} {problem} (leave the flag out for every namespace)")
    if namespaces:
        restricted = msgspec.structs.replace(config.namespace, restricted=namespaces[0])
        config = msgspec.structs.replace(config, namespace=restricted)
    timing = LeaseTiming(
        duration=duration("--lease-duration", args.lease_duration),
        renew_deadline=duration("--renew-deadline", args.renew_deadline),
        retry_period=duration("--retry-period", args.retry_period),
    )
    problems = timing.problems()
    if problems:
        raise Usage(f"--lease-duration, --renew-deadline, --retry-period: {'; '.join(problems)}")
    shutdown = duration("--shutdown-timeout", args.shutdown_timeout)
    metrics = args.metrics_addr or f"{config.server.metrics.bind_address}:{config.server.metrics.port}"
    probes = args.probe_addr or f"{config.server.health_probe.bind_address}:{config.server.health_probe.port}"
    for flag, address in (("--metrics-addr", metrics), ("--probe-addr", probes)):
        try:
            parse_address(address)
        except AddressError as exc:
            raise Usage(f"{flag}: {exc}") from exc
    metrics_secure, metrics_cert_dir = _metrics_security(args, config)
    configured = (raw.get("leaderElection") or {}).get("enabled") if isinstance(raw, dict) else None
    leader_elect = args.leader_elect if args.leader_elect is not None else configured is not False
    chosen = args.log_format or config.logging.format or "json"
    if chosen not in FORMATS:
        raise Invalid(
            f"--config {args.config}: logging.format: {chosen!r} is not one of {', '.join(FORMATS)}"
        )
    log_format: Format = "json" if chosen == "json" else "text"
    log_level = (args.log_level or config.logging.level or "info").lower()
    if log_level not in LEVELS:
        raise Invalid(
            f"--config {args.config}: logging.level: {log_level!r} is not one of {', '.join(LEVELS)}"
        )
    if args.qps <= 0 or args.burst <= 0:
        raise Usage("--qps and --burst must be positive")
    if args.max_concurrent_reconciles < 1:
        raise Usage(f"--max-concurrent-reconciles: {args.max_concurrent_reconciles} must be at least 1")
    lease_namespace = args.lease_namespace or config.leader_election.namespace or _pod_namespace()
    settings = DaemonSettings(
        instance=args.instance or f"{socket.gethostname()}-{os.getpid()}",
        metrics_address=metrics,
        probe_address=probes,
        leader_elect=leader_elect,
        lease_name=args.lease_name or config.leader_election.id or DEFAULT_LEASE_NAME,
        lease_namespace=lease_namespace,
        timing=timing,
        shutdown_timeout=shutdown,
        namespaces=namespaces,
        max_concurrent_reconciles=args.max_concurrent_reconciles,
        dcd_controller=args.dcd_controller,
        webhooks=webhook_settings(args, lease_namespace),
        metrics_secure=metrics_secure,
        metrics_cert_dir=metrics_cert_dir,
    )
    return Options(
        config=config,
        settings=settings,
        kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG") or None,
        qps=args.qps,
        burst=args.burst,
        log_format=log_format,
        log_level=log_level,
        record=writable(args.record, "--record"),
    )


def _metrics_security(args: argparse.Namespace, config: OperatorConfig) -> tuple[bool, str | None]:
    """Whether ``/metrics`` is served securely, and from which certificate folder (``None``: its own)."""
    secure = args.metrics_secure if args.metrics_secure is not None else config.server.metrics.secure
    folder = args.metrics_cert_dir
    if folder is not None and not secure:
        raise Usage(
            f"--metrics-cert-dir: {folder!r} is for HTTPS metrics, but they are served over plain HTTP "
            "(--no-metrics-secure, or the config's server.metrics.secure: false)"
        )
    if folder is not None and not Path(folder).is_dir():
        raise Usage(f"--metrics-cert-dir: {folder!r} is not a directory")
    return secure, folder


def _raw_config(text: str) -> Any:
    # Only to tell a key set to its default from a key left out (load_config has checked the text).
    return yaml.safe_load(text) if text.strip() else {}


def _pod_namespace() -> str:
    try:
        return POD_NAMESPACE_FILE.read_text(encoding="utf-8").strip() or RELEASE_NAMESPACE
    except OSError:
        return RELEASE_NAMESPACE


def _run(args: argparse.Namespace) -> int:
    settled = options(args)
    check_kubeconfig(args.kubeconfig)
    # As controller-runtime's registry: no ``_created`` series beside every counter and histogram.
    disable_created_metrics()  # type: ignore[no-untyped-call]
    metrics = DaemonMetrics()
    configure(settled.log_format, settled.log_level, reconcile_id=metrics.reconcile_id)
    # SIGTERM and SIGINT stop the daemon gracefully once it serves (``_signals``); a SIGINT before
    # that interrupts the start (``run_command``).
    code: int = anyio.run(_main, settled, metrics, backend="asyncio", backend_options={"use_uvloop": True})
    return code


async def _main(settled: Options, metrics: DaemonMetrics) -> int:
    try:
        async with connect(settled.kubeconfig, qps=settled.qps, burst=settled.burst) as connected:
            cluster, election, reviews, served = connected
            # API discovery stays live for admission (an InferencePool CRD installed later counts).
            discover = getattr(cluster, "group_versions", None)
            return await serve(
                cluster,
                served,
                settled,
                metrics=metrics,
                election_cluster=election,
                review_cluster=reviews,
                discover=discover,
            )
    except AdapterMissing as exc:
        raise Invalid(str(exc)) from None
    except ClusterError as exc:
        raise Invalid(f"cannot start against the cluster: {cluster_problem(exc)}") from None


async def serve(
    cluster: Cluster,
    group_versions: Sequence[str],
    settled: Options,
    *,
    metrics: DaemonMetrics | None = None,
    election_cluster: Cluster | None = None,
    review_cluster: Cluster | None = None,
    discover: Discover | None = None,
) -> int:
    """Resolve the feature gates against what the cluster serves, then run the daemon until a signal
    (or its own end). The testable part of ``run``: any ``Cluster`` will do."""
    try:
        gates = resolve_gates(settled.config, served_apis(group_versions))
    except GateError as exc:
        print(f"dgd-operator run: error: the operator cannot start: {exc}", file=sys.stderr)
        return EXIT_FAILED
    config = effective_config(settled.config, gates)
    recorder = None
    if settled.record is not None:
        from dgd.daemon.trace_recorder import DaemonRecorder

        recorder = DaemonRecorder(settled.record, config=config, clock=anyio.current_time)
    daemon = Daemon(
        cluster,
        config=config,
        settings=settled.settings,
        metrics=metrics,
        election_cluster=election_cluster,
        review_cluster=review_cluster,
        recorder=recorder,
        discover=discover,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(_signals, daemon)
        try:
            code = await daemon.run()
        except OSError as exc:  # a server's address is taken or not ours
            print(f"dgd-operator run: error: {exc.strerror or exc}", file=sys.stderr)
            code = EXIT_FAILED
        tg.cancel_scope.cancel()
    return code


async def _signals(daemon: Daemon) -> None:
    # The first SIGTERM or SIGINT stops gracefully; a second one exits at once (controller-runtime's
    # rule), unless it came within a second of the first: the same signal sent to the process and
    # to its process group (as `timeout` and some shells do) arrives twice.
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
        first: float | None = None
        async for signum in received:
            now = anyio.current_time()
            if first is None:
                first = now
                daemon.stop()
            elif now - first > DUPLICATE_SIGNAL:
                print(f"dgd-operator run: {signal.Signals(signum).name} again: exiting now", file=sys.stderr)
                os._exit(EXIT_FAILED)


class AdapterMissing(Exception):
    """The kube adapter is not part of this build."""


#: Seconds a watch request asks the server to keep the stream open (the informer then resumes it).
WATCH_TIMEOUT = 600.0
#: Seconds of silence after which the kube adapter ends a watch as stalled (the informer then resumes
#: it). API servers send a bookmark about every minute to a watch that asks for them, as ours do.
WATCH_IDLE_TIMEOUT = 300.0


@asynccontextmanager
async def connect(
    kubeconfig: str | None, *, qps: float, burst: int
) -> AsyncIterator[tuple[Cluster, Cluster, Cluster, list[str]]]:
    """Three kube adapter clients for ``kubeconfig`` (``None``: ``$KUBECONFIG`` or in-cluster) — the
    operator's, rate-limited by ``qps``/``burst``; the leader elector's, not limited (as in
    controller-runtime, lease renewals never queue behind the operator's requests); the secure metrics'
    reviews', limited alike but apart (scrapes never spend the operator's budget) — and the
    ``group/version`` s the API server serves (API discovery). The adapter is imported only here."""
    try:
        from dgd.cluster.kube.adapter import KubeCluster
    except ImportError as exc:
        raise AdapterMissing(
            f"the Kubernetes adapter (dgd.cluster.kube.adapter) is not available: {exc}"
        ) from exc
    operator = await KubeCluster.from_config(
        kubeconfig, qps=qps, burst=burst, watch_idle_timeout=WATCH_IDLE_TIMEOUT, watch_timeout=WATCH_TIMEOUT
    )
    async with (
        operator,
        await KubeCluster.from_config(kubeconfig, qps=None) as election,
        await KubeCluster.from_config(kubeconfig, qps=qps, burst=burst) as reviews,
    ):
        served = await operator.group_versions()
        yield operator, election, reviews, served
