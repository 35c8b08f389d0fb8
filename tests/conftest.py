"""The whole run's fixtures: the real Kubernetes control plane, shared by every real-server test.

``control_plane`` starts upstream etcd, kube-apiserver and kube-controller-manager (built by ``make
kube``, or from ``$KUBEBUILDER_ASSETS``; ``$DGD_KUBE_VERSION`` picks another release's build, as ``make
test-k8s KUBE_VERSION=1.x.y`` does, and the apiserver must then report it) once per run, on first
use, with the CRDs the operator and its tests need applied, and stops them with the run (also when it
is interrupted: the launcher ends its children at exit). Tests that share it use namespaces of their own.

Without binaries the real-server tests skip with one line saying how to enable them; under
``CI=true`` that is a failure, so CI cannot pass without the real tier. At the end the run prints
which kube-apiserver and etcd the tier ran on, how many tests it ran, and the conformance suite's
count per target.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real.controlplane import (
    KUBE_VERSION_ENV,
    BinariesNotFoundError,
    ControlPlane,
    find_binaries,
    kube_version,
)
from tests.upstream import CRD_DIR, GROVE, UPSTREAM

ROOT = Path(__file__).resolve().parent.parent
#: What every real-server test may use: our CRDs (DGD, DCD, DGDSA), Grove's own (ClusterTopologyBinding
#: among them), upstream's DynamoCheckpoint and PodSnapshot, LeaderWorkerSet's, the Gateway API inference
#: extension's InferencePool, Istio's 15 (VirtualService and DestinationRule among them), and what the
#: examples expect of a GPU cluster. The real CRDs, never upstream's schemaless test stubs.
REAL_CRDS = (
    *sorted((ROOT / "deploy" / "crds").glob("nvidia.com_*.yaml")),
    *sorted((GROVE / "operator" / "api" / "core" / "v1alpha1" / "crds").glob("grove.io_*.yaml")),
    CRD_DIR / "nvidia.com_dynamocheckpoints.yaml",
    CRD_DIR.parents[2] / "internal" / "controller" / "testing" / "nvidia" / "nvidia.com_podsnapshots.yaml",
    UPSTREAM
    / "kubernetes-sigs-lws"
    / "config"
    / "crd"
    / "bases"
    / "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    UPSTREAM
    / "kubernetes-sigs-gateway-api-inference-extension"
    / "config"
    / "crd"
    / "bases"
    / "inference.networking.k8s.io_inferencepools.yaml",
    UPSTREAM / "istio-istio" / "manifests" / "charts" / "base" / "files" / "crd-all.gen.yaml",
    ROOT / "tests" / "real" / "cluster-extras.yaml",
)

_real: dict[str, str] = {}
_outcomes: Counter[tuple[str, str]] = Counter()


def unavailable(reason: str) -> None:
    """Skip a real-server test because the tier cannot run here (a failure under ``CI=true``)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"the real-server tier must run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def kubectl(
    plane: ControlPlane, *args: str, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the control plane's own kubectl (the same version as the server) as cluster admin."""
    binary = plane.binaries.kubectl
    if binary is None:
        unavailable(f"no kubectl in {plane.binaries.folder}: build it with `make kube`")
    assert binary is not None
    return subprocess.run(
        [str(binary), "--kubeconfig", str(plane.kubeconfig), *args],
        input=input,
        capture_output=True,
        check=False,
        timeout=120,
    )


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The run's real control plane (see the module), with ``REAL_CRDS`` applied and established."""
    try:
        binaries = find_binaries()
    except BinariesNotFoundError as error:
        unavailable(f"real-server tier skipped: {error}")
        raise
    with ControlPlane(binaries=binaries) as plane:
        _real.update(apiserver=plane.apiserver_version, etcd=plane.etcd_version)
        _runs_the_asked_version(plane)
        files = [arg for crd in REAL_CRDS for arg in ("-f", str(crd))]
        applied = kubectl(plane, "apply", "--server-side", *files)
        assert applied.returncode == 0, applied.stderr.decode()
        established = kubectl(plane, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        assert established.returncode == 0, established.stderr.decode()
        _storage_ready(plane)
        if plane.with_controller_manager:
            _collector_knows_our_kinds(plane)
        yield plane


def _runs_the_asked_version(plane: ControlPlane) -> None:
    """Under ``$DGD_KUBE_VERSION`` (``make test-k8s``) the apiserver must be that release, whichever
    folder the binaries came from (``$KUBEBUILDER_ASSETS`` wins over the build cache)."""
    if os.environ.get(KUBE_VERSION_ENV, "").strip() and plane.apiserver_version != kube_version():
        pytest.fail(
            f"{KUBE_VERSION_ENV} asks for Kubernetes {kube_version()}, but kube-apiserver in "
            f"{plane.binaries.folder} is {plane.apiserver_version}",
            pytrace=False,
        )


def _collector_knows_our_kinds(plane: ControlPlane, timeout: float = 90.0) -> None:
    """Wait until kube-controller-manager's garbage collector follows owner references to a DGD: it
    discovers new kinds only at its periodic resync, so a cascade right after the CRDs are applied
    would wait for that."""
    probe = "gc-probe"
    kubectl(plane, "create", "namespace", probe)
    graph = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "owner", "namespace": probe},
        "spec": {},
    }
    created = kubectl(
        plane, "create", "-o", "jsonpath={.metadata.uid}", "-f", "-", input=json.dumps(graph).encode()
    )
    assert created.returncode == 0, created.stderr.decode()
    owner = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "name": "owner",
        "uid": created.stdout.decode(),
    }
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dependent", "namespace": probe, "ownerReferences": [owner]},
    }
    assert kubectl(plane, "create", "-f", "-", input=json.dumps(child).encode()).returncode == 0
    assert kubectl(plane, "delete", "-n", probe, "dynamographdeployment", "owner").returncode == 0
    deadline = time.monotonic() + timeout
    while kubectl(plane, "get", "-n", probe, "configmap", "dependent").returncode == 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"the garbage collector did not follow a DGD owner within {timeout:g}s")
        time.sleep(0.5)


def _storage_ready(plane: ControlPlane, timeout: float = 60.0) -> None:
    """Wait until every custom resource can be listed: an established CRD's storage still answers 429
    ("storage is (re)initializing") for a moment."""
    names = kubectl(plane, "get", "crd", "-o", "name")
    assert names.returncode == 0, names.stderr.decode()
    kinds = [line.split("/", 1)[1] for line in names.stdout.decode().split()]
    deadline = time.monotonic() + timeout
    while kinds:
        kinds = [kind for kind in kinds if kubectl(plane, "get", kind, "-A").returncode != 0]
        if kinds and time.monotonic() > deadline:
            raise AssertionError(f"custom resources not listable after {timeout:g}s: {kinds}")


@pytest.fixture(scope="session")
def controller_manager(control_plane: ControlPlane) -> ControlPlane:
    """The control plane, for tests that need kube-controller-manager (garbage collection, namespace
    deletion, service-account tokens)."""
    if not control_plane.with_controller_manager:
        unavailable(
            f"no kube-controller-manager in {control_plane.binaries.folder}: build it with `make kube`"
        )
    return control_plane


#: The conformance target of each conformance test (by node id), and the real-server tests.
_targets: dict[str, str] = {}
_real_tests: set[str] = set()


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: the ``real`` marker is given here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Records each conformance test's target, and marks the real-server tier ``real`` (``-m real``
    selects it: the tests on the control plane and the conformance suite's ``real`` target)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        target = callspec.id.split("-")[0] if callspec is not None and "harness" in callspec.params else None
        if target is not None:
            _targets[item.nodeid] = target
        if "control_plane" in getattr(item, "fixturenames", ()) or target == "real":
            _real_tests.add(item.nodeid)
            item.add_marker(pytest.mark.real)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if report.nodeid in _real_tests:
            _outcomes[("real-server tier", report.outcome)] += 1
        if report.nodeid in _targets:
            _outcomes[(f"conformance on {_targets[report.nodeid]}", report.outcome)] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for group in sorted({group for group, _ in _outcomes}):
        counts = [
            f"{_outcomes[(group, o)]} {o}" for o in ("passed", "skipped", "failed") if _outcomes[(group, o)]
        ]
        line = f"{group}: {', '.join(counts)}"
        if group == "real-server tier" and _real:
            line += f" on kube-apiserver {_real['apiserver']} and etcd {_real['etcd']}"
        terminalreporter.write_line(line)
