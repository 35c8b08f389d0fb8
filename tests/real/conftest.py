"""Fixtures of the real-server tier: a namespace of its own per test, and daemon processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dgd.cluster.kube.adapter import KubeCluster
from tests.conftest import kubectl
from tests.e2e.operators import Operators
from tests.real.controlplane import ControlPlane
from tests.real.harness import LEASE_NS, RealCluster, ensure_namespace, new_namespace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def real(controller_manager: ControlPlane, anyio_backend: object) -> AsyncIterator[RealCluster]:
    """The run's control plane through an admin client, with a fresh namespace for this test."""
    async with await KubeCluster.from_config(controller_manager.kubeconfig, qps=None) as kube:
        await ensure_namespace(kube, LEASE_NS)
        yield RealCluster(controller_manager, kube, await new_namespace(kube))


@pytest.fixture
async def daemons(real: RealCluster, tmp_path: Path) -> AsyncIterator[Operators]:
    """``dgd-operator run`` processes against the control plane; killed when the test ends, and none of
    their requests may have drawn a warning from the API server (a field it dropped, a deprecated API)."""
    started = Operators(real, tmp_path)  # type: ignore[arg-type]
    try:
        yield started
    finally:
        started.stop_all()
        for operator in started.started:  # shown by pytest only when the test fails
            print(f"--- the last lines of {operator.instance}'s log:\n{operator.tail(80)}")
    warned = [m for op in started.started for m in op.messages() if m.startswith("the API server warns")]
    assert not warned, warned


@pytest.fixture
def cluster_rbac(real: RealCluster) -> None:
    """The chart's cluster-wide RBAC (the planner ClusterRole the operator binds among it), applied
    server-side as users apply it; a module that runs daemons asks for it with ``usefixtures``."""
    applied = kubectl(
        real.plane, "apply", "--server-side", "-f", str(ROOT / "deploy" / "rbac" / "cluster-wide.yaml")
    )
    assert applied.returncode == 0, applied.stderr.decode()
