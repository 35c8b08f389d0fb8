"""The flags of ``dgd-operator run`` but the webhooks' (:mod:`dgd.cli.run_webhooks`), by ``--help`` group:
each with its help, the config key it overrides and its default."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dgd.actors.machinery.workers import DEFAULT_WORKERS
from dgd.cli.inputs import add_config_flag
from dgd.daemon.logs import FORMATS, LEVELS
from dgd.messages.config import RELEASE_NAMESPACE

DEFAULT_LEASE_NAME = "dgd-operator"


def add_cluster_flags(cluster: Any) -> None:
    cluster.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file to reach the API server "
        "(default: $KUBECONFIG, else the in-cluster service account)",
    )
    cluster.add_argument(
        "--namespace",
        action="append",
        metavar="NS",
        help="watch only this namespace; repeat the flag to watch several (namespace-restricted mode: "
        "no cluster-scoped RBAC is written or needed). Given, the flags replace the config's "
        "namespace.restricted; default: that key's one namespace if set, else every namespace",
    )
    cluster.add_argument(
        "--qps", type=float, default=20.0, help="client-side rate limit, requests per second (default 20)"
    )
    cluster.add_argument("--burst", type=int, default=30, help="client-side rate limit burst (default 30)")
    cluster.add_argument(
        "--max-concurrent-reconciles",
        type=int,
        default=DEFAULT_WORKERS,
        metavar="N",
        help="how many DGDs are reconciled at once; the others wait their turn, DGDs reconciled before "
        f"ahead of new ones, otherwise first come first served (default {DEFAULT_WORKERS})",
    )
    cluster.add_argument(
        "--dcd-controller",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the DynamoComponentDeployment controller too (DCDs to Deployments or LeaderWorkerSets, "
        "Services and Ingresses; default on); --no-dcd-controller leaves the DCDs to another controller, "
        "as during a switch-over from upstream's operator",
    )
    add_config_flag(cluster)


def add_serving_flags(serving: Any) -> None:
    serving.add_argument(
        "--metrics-addr",
        metavar="[HOST]:PORT",
        help="where /metrics is served, 0 to turn it off (config: server.metrics; default :8080)",
    )
    serving.add_argument(
        "--metrics-secure",
        action=argparse.BooleanOptionalAction,
        help="serve /metrics over HTTPS, only to clients whose bearer token the API server authenticates "
        "(a TokenReview) and allows to get /metrics (a SubjectAccessReview; the chart's metrics-reader "
        "ClusterRole grants it), as controller-runtime's secure metrics; --no-metrics-secure serves plain "
        "HTTP to anyone who reaches the port (config: server.metrics.secure; default on)",
    )
    serving.add_argument(
        "--metrics-cert-dir",
        metavar="DIR",
        help="serve the metrics certificate in DIR/tls.crt and DIR/tls.key, managed by someone else and "
        "re-read when it changes; default: each replica makes its own (self-signed)",
    )
    serving.add_argument(
        "--probe-addr",
        metavar="[HOST]:PORT",
        help="where /healthz and /readyz are served, 0 to turn them off "
        "(config: server.healthProbe; default :8081)",
    )


def add_election_flags(election: Any) -> None:
    election.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        help="run only while holding the lease, so replicas can stand by (config: leaderElection.enabled; "
        "default on)",
    )
    election.add_argument(
        "--lease-name",
        metavar="NAME",
        help=f"name of the Lease (config: leaderElection.id; default {DEFAULT_LEASE_NAME})",
    )
    election.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="namespace of the Lease (config: leaderElection.namespace; default: the pod's namespace, else "
        f"{RELEASE_NAMESPACE})",
    )
    election.add_argument(
        "--lease-duration",
        default="15s",
        metavar="DURATION",
        help="how long standbys wait before taking a lease that was not renewed (default 15s)",
    )
    election.add_argument(
        "--renew-deadline",
        default="10s",
        metavar="DURATION",
        help="how long the leader keeps trying to renew before it stops all work and exits (default 10s)",
    )
    election.add_argument(
        "--retry-period",
        default="2s",
        metavar="DURATION",
        help="how often candidates try the lease (default 2s)",
    )


def add_process_flags(process: Any) -> None:
    process.add_argument(
        "--log-format", choices=FORMATS, help="log line format (config: logging.format; default json)"
    )
    process.add_argument(
        "--log-level", choices=LEVELS, help="lowest level logged (config: logging.level; default info)"
    )
    process.add_argument(
        "--shutdown-timeout",
        default="30s",
        metavar="DURATION",
        help="on SIGTERM, how long in-flight reconciles may take to finish before they are cancelled "
        "(default 30s)",
    )
    process.add_argument(
        "--record",
        metavar="FILE",
        type=Path,
        help="write what users do to the cluster's graphs while this runs as a trace that `dgd-operator "
        "sim replay` replays (DGD and adapter changes the operator did not make); written when the "
        "daemon stops",
    )
    process.add_argument(
        "--instance",
        metavar="ID",
        help="this replica's identity in the Lease and in Events (default: HOSTNAME-PID)",
    )
