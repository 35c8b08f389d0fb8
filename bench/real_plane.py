"""The control plane ``bench/real.py`` runs on: the real-server test tier's, with an audit log of
request metadata and a /16 service range; what the benchmark prepares on it (CRDs, the chart's
cluster-wide RBAC, namespaces) and reads of it (the API server's request counters).

Imported as ``real_plane`` by ``bench/real.py`` (run as a script: its folder first on ``sys.path``,
then the repository root, for ``dgd`` and ``tests.real``).
"""

from __future__ import annotations

import ssl
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import yaml
from request_counts import Request, from_metrics

from dgd.cluster.errors import AlreadyExists
from dgd.cluster.kube.adapter import KubeCluster
from dgd.cluster.resources import NAMESPACE
from tests.real.controlplane import SERVICE_CIDR, ControlPlane
from tests.upstream import GROVE_CRD_DIR

ROOT = Path(__file__).resolve().parent.parent
LEASE_NS = "dynamo-system"
NAMESPACE_NAME = "bench"
#: The benchmark's own user agent (the operators' are in ``operators.py``).
BENCH_AGENT = "dgd-bench-real"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
"""
#: Room for 65,534 ClusterIPs, the same first address (the apiserver's certificate names it).
SERVICE_RANGE = "--service-cluster-ip-range=10.0.0.0/16"


class AuditedControlPlane(ControlPlane):
    """The tier's control plane, its API server also writing an audit log of request metadata, with a
    service range for thousands of Services."""

    def __init__(self, state_dir: Path) -> None:
        super().__init__(state_dir)
        self.audit_log = state_dir / "audit.log"
        self.audit_policy = state_dir / "audit-policy.yaml"

    def _apiserver_args(self) -> list[str]:
        self.audit_policy.write_text(AUDIT_POLICY, encoding="utf-8")
        # The tier's /24 holds 254 ClusterIPs; every DGD here makes two Services.
        tier = f"--service-cluster-ip-range={SERVICE_CIDR}"
        args = [SERVICE_RANGE if arg == tier else arg for arg in super()._apiserver_args()]
        assert SERVICE_RANGE in args, "the tier's control plane no longer sets the service range"
        return [
            *args,
            f"--audit-policy-file={self.audit_policy}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
        ]


def kubectl(plane: ControlPlane, *args: str) -> None:
    assert plane.binaries.kubectl is not None, "no kubectl: build it with `make kube`"
    subprocess.run([str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig), *args],
                   check=True, capture_output=True, timeout=120)  # fmt: skip


def apiserver_metrics(plane: ControlPlane) -> Counter[Request]:
    """The API server's request counters now (read as cluster admin)."""
    context = ssl.create_default_context(cafile=str(plane.ca_cert))
    context.load_cert_chain(str(plane.pki.admin.cert), str(plane.pki.admin.key))
    with urllib.request.urlopen(f"{plane.server}/metrics", context=context, timeout=30) as reply:
        return from_metrics(reply.read().decode())


async def prepared(plane: ControlPlane, kube: KubeCluster) -> None:
    """Our CRDs and Grove's established and listable, the chart's cluster-wide RBAC, and the namespaces."""
    for name in (LEASE_NS, NAMESPACE_NAME):
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        with suppress(AlreadyExists):
            await kube.create(NAMESPACE, body)
    # Ours, and Grove's own (deploy/crds carries only ours): `sim world` plays Grove on them.
    crds = [
        *sorted((ROOT / "deploy" / "crds").glob("*.yaml")),
        *sorted(GROVE_CRD_DIR.glob("grove.io_*.yaml")),
    ]
    kubectl(plane, "apply", "--server-side", *[arg for crd in crds for arg in ("-f", str(crd))])
    kubectl(plane, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    kubectl(plane, "apply", "--server-side", "-f", str(ROOT / "deploy" / "rbac" / "cluster-wide.yaml"))
    # An established CRD's storage still answers 429 ("storage is (re)initializing") for a moment.
    names = [yaml.safe_load(crd.read_text(encoding="utf-8"))["metadata"]["name"] for crd in crds]
    deadline = time.monotonic() + 60
    while names:
        names = [name for name in names if not listable(plane, name)]
        if names and time.monotonic() > deadline:
            raise TimeoutError(f"custom resources not listable after 60s: {names}")


def listable(plane: ControlPlane, name: str) -> bool:
    assert plane.binaries.kubectl is not None
    argv = [str(plane.binaries.kubectl), "--kubeconfig", str(plane.kubeconfig), "get", name, "-A"]
    return subprocess.run(argv, capture_output=True, timeout=60, check=False).returncode == 0


@asynccontextmanager
async def admin(plane: ControlPlane) -> AsyncIterator[KubeCluster]:
    async with await KubeCluster.from_config(plane.kubeconfig, qps=None) as kube:
        kube.api.user_agent = BENCH_AGENT
        yield kube
