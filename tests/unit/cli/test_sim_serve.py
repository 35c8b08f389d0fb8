"""``dgd-operator sim serve``: kubectl against the simulated cluster, and the command's own contract.

The kubectl tests run the real command and kubectl as subprocesses, as a user would: apply with
kubectl's default (client-side) validation, get, wait on a jsonpath, delete, and a server-side apply
of the CRDs. The kubectl is the project's own, built with the control plane by ``make kube`` (in
``$KUBEBUILDER_ASSETS`` when set, else the build cache), or else the first on ``PATH``. Without one
they are skipped, saying how to get it; under ``CI=true`` that is a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from tests.real.controlplane import cache_dir
from tests.upstream import DYNAMO

ROOT = Path(__file__).resolve().parents[3]
EXECUTABLE = Path(sys.executable).with_name("dgd-operator")


def find_kubectl(env: Mapping[str, str]) -> Path | None:
    """The control plane's kubectl (``find_binaries``' folder), else the first kubectl on ``PATH``."""
    assets = env.get("KUBEBUILDER_ASSETS")
    built = (Path(assets) if assets else cache_dir(env)) / "kubectl"
    if built.is_file() and os.access(built, os.X_OK):
        return built
    on_path = shutil.which("kubectl", path=env.get("PATH"))
    return Path(on_path) if on_path else None


@pytest.fixture(scope="module")
def kubectl() -> Path:
    """The kubectl to run; a skip saying how to get one when there is none (a failure under CI=true)."""
    found = find_kubectl(os.environ)
    if found is None:
        where = os.environ.get("KUBEBUILDER_ASSETS") or str(cache_dir())
        reason = f"no kubectl in {where} nor on PATH: build it with `make kube` (hack/kube/build.sh)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the kubectl tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    return found


#: A world fast enough for a test: pods are bound and ready within a second of wall-clock time.
FAST_WORLD = {"schedule_delay": 0.1, "ready_delay": 0.5, "termination_delay": 0.2}


@dataclass
class Serving:
    process: subprocess.Popen[str]
    kubeconfig: Path
    cache: Path
    kubectl_binary: Path | None = None

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        binary = self.kubectl_binary
        assert binary is not None, "started without a kubectl"
        command = [str(binary), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache), *args]
        return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, check=False)

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, str]:
        self.process.send_signal(signum)
        out, _ = self.process.communicate(timeout=30)
        return self.process.returncode, out


def start(tmp_path: Path, *options: str) -> Serving:
    """``sim serve`` on a free port, once it has written its kubeconfig (it does so once listening)."""
    world = tmp_path / "world.yaml"
    world.write_text(yaml.safe_dump(FAST_WORLD), encoding="utf-8")
    kubeconfig = tmp_path / "kubeconfig"
    command = [str(EXECUTABLE), "sim", "serve", "--port", "0", "--write-kubeconfig", str(kubeconfig)]
    process = subprocess.Popen(
        [*command, "--world", str(world), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"sim serve did not start: {process.communicate()[0]}")
        time.sleep(0.05)
    return Serving(process, kubeconfig, tmp_path / "kubectl-cache")


@pytest.fixture
def serving(tmp_path: Path, kubectl: Path) -> Iterator[Serving]:
    server = start(tmp_path, "--operator", "--seed", "1")
    server.kubectl_binary = kubectl
    yield server
    if server.process.poll() is None:
        server.stop()


def test_kubectl_applies_gets_waits_for_and_deletes_a_dgd(serving: Serving) -> None:
    # given sim serve running the world and the operator
    example = str(ROOT / "examples" / "agg.yaml")

    # when kubectl applies the example (default validation), waits for it to succeed, and deletes it
    applied = serving.kubectl("apply", "-f", example)
    waited = serving.kubectl(
        "wait", "--for=jsonpath={.status.state}=successful", "dgd/demo-agg", "--timeout=45s"
    )
    listed = serving.kubectl("get", "dgd")
    pods = serving.kubectl("get", "pods", "-o", "name")
    deleted = serving.kubectl("delete", "-f", example)
    after = serving.kubectl("get", "dgd", "--ignore-not-found", "-o", "name")

    # then each command succeeded and showed what the cluster did
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "dynamographdeployment.nvidia.com/demo-agg created"
    assert waited.returncode == 0, waited.stderr
    assert "condition met" in waited.stdout
    header, row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "READY", "BACKEND", "AGE"]
    assert row.split()[:3] == ["demo-agg", "True", "vllm"]
    assert len(pods.stdout.split()) == 3  # the frontend and two workers
    assert deleted.returncode == 0, deleted.stderr
    # (kubectl 1.36 adds "from default namespace"; older ones end at "deleted")
    assert deleted.stdout.startswith('dynamographdeployment.nvidia.com "demo-agg" deleted'), deleted.stdout
    assert after.returncode == 0 and after.stdout == ""


def test_kubectl_applies_the_upstream_v1alpha1_fixture_client_and_server_side(serving: Serving) -> None:
    # given the upstream v1alpha1 conversion fixture (served through the operator's conversion webhook)
    fixture = str(DYNAMO / "deploy" / "utils" / "tests" / "fixtures" / "v1alpha1" / "agg.yaml")

    # when kubectl applies it (default validation), then server-side, and waits for it to succeed
    applied = serving.kubectl("apply", "-f", fixture)
    server_side = serving.kubectl("apply", "--server-side", "--force-conflicts", "-f", fixture)
    waited = serving.kubectl(
        "wait", "--for=jsonpath={.status.state}=successful", "dgd/vllm-agg", "--timeout=45s"
    )
    alpha = serving.kubectl(
        "get",
        "dynamographdeployments.v1alpha1.nvidia.com",
        "vllm-agg",
        "-o",
        "jsonpath={.apiVersion} {.spec.services.VllmDecodeWorker.componentType}",
    )
    beta = serving.kubectl(
        "get", "dgd", "vllm-agg", "-o", "jsonpath={.apiVersion} {.spec.components[*].name}"
    )

    # then both applies were accepted, the DGD succeeded, and it reads at either version
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "dynamographdeployment.nvidia.com/vllm-agg created"
    assert server_side.returncode == 0, server_side.stderr
    assert server_side.stdout.strip() == "dynamographdeployment.nvidia.com/vllm-agg serverside-applied"
    assert waited.returncode == 0, waited.stderr
    assert alpha.stdout == "nvidia.com/v1alpha1 worker"
    assert beta.stdout == "nvidia.com/v1beta1 Frontend VllmDecodeWorker"


def test_kubectl_server_side_applies_the_crds(serving: Serving) -> None:
    # given the generated CRDs
    crds = sorted((ROOT / "deploy" / "crds").glob("*.yaml"))

    # when applied server-side (twice: the second apply changes nothing)
    first = serving.kubectl("apply", "--server-side", "-f", str(ROOT / "deploy" / "crds"))
    second = serving.kubectl("apply", "--server-side", "-f", str(ROOT / "deploy" / "crds"))
    listed = serving.kubectl("get", "crd", "-o", "name")

    # then every CRD is applied and served
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("serverside-applied") == len(crds) == 3
    assert second.returncode == 0, second.stderr
    names = [yaml.safe_load(path.read_text(encoding="utf-8"))["metadata"]["name"] for path in crds]
    # (beside the simulated cluster's own models of Grove's, which deploy/crds does not carry)
    assert sorted(listed.stdout.split()) == sorted(
        f"customresourcedefinition.apiextensions.k8s.io/{n}"
        for n in [*names, "podcliques.grove.io", "podcliquescalinggroups.grove.io", "podcliquesets.grove.io"]
    )


def test_kubectl_describe_shows_the_operators_events(serving: Serving) -> None:
    # given an applied DGD that the operator has worked on
    serving.kubectl("apply", "-f", str(ROOT / "examples" / "agg.yaml"))
    serving.kubectl("wait", "--for=jsonpath={.status.state}=successful", "dgd/demo-agg", "--timeout=45s")

    # when it is described
    described = serving.kubectl("describe", "dgd", "demo-agg")

    # then its events (events.k8s.io/v1, read through the core/v1 view) are listed
    assert described.returncode == 0, described.stderr
    events = described.stdout.split("Events:", 1)[1]
    assert "CreatePodCliqueSet" in events and "nvidia.com/dgd-operator" in events


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sim_serve_stops_cleanly_on_a_signal(tmp_path: Path, signum: int) -> None:
    # given sim serve without the world
    server = start(tmp_path, "--no-world")

    # when it is signalled
    code, out = server.stop(signum)

    # then it said where it listened, that it stopped, and exits 0
    lines = out.splitlines()
    assert code == 0, out
    assert lines[0].startswith("dgd-operator sim serve: serving the simulated cluster at http://127.0.0.1:")
    assert lines[1] == f"dgd-operator sim serve: kubeconfig written to {server.kubeconfig}"
    assert lines[-1] == "dgd-operator sim serve: stopped"


def test_sim_serve_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    # when the help is asked for
    with pytest.raises(SystemExit) as exited:
        main(["sim", "serve", "--help"])

    # then it exits 0 and names every flag
    out = capsys.readouterr().out
    assert exited.value.code == 0
    for flag in (
        "--port",
        "--host",
        "--write-kubeconfig",
        "--namespace",
        "--token",
        "--no-world",
        "--operator",
        "--seed",
        "--config",
        "--world",
    ):
        assert flag in out


def test_sim_serve_refuses_an_invalid_world_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # given world settings with a negative delay
    world = tmp_path / "world.yaml"
    world.write_text("ready_delay: -1\n", encoding="utf-8")

    # when sim serve is started with it
    code = main(["sim", "serve", "--world", str(world)])

    # then it exits 1 (the file was read, a value is wrong) naming the file, the field and the rule
    err = capsys.readouterr().err
    assert code == 1
    assert f"--world {world}: ready_delay: expected float >= 0.0" in err
