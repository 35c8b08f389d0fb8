"""The pod checkpoint-restore mutator over HTTPS: the candidate's checkpoint read through the cluster,
the pod reshaped once it is Ready, and allowed unchanged (never refused) when it cannot be read."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from dgd.cluster.errors import Forbidden
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CHECKPOINT
from dgd.daemon import certificates
from dgd.daemon import webhooks as webhook_module
from dgd.daemon.servers import Server
from dgd.daemon.webhooks import POD_RESTORE_PATH, TLS, webhook_app
from dgd.domain.admission import json_patch
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.config import CheckpointConfig
from tests.unit.daemon.test_webhooks import NOW, post

pytestmark = pytest.mark.anyio

REVIEW = Path(__file__).resolve().parents[1] / "domain" / "reviews" / "pod-create-restore-candidate.json"
CHECKPOINT_NAME = "checkpoint-5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"
GATE_ON = AdmissionSettings(checkpoint=CheckpointConfig(enabled=True))


@pytest.fixture(scope="module")
def issued() -> certificates.Certificates:
    return certificates.issue(["localhost"], ["127.0.0.1"], now=NOW)


@asynccontextmanager
async def serving(
    issued: certificates.Certificates, cluster: MemoryCluster | None, settings: AdmissionSettings = GATE_ON
) -> AsyncIterator[str]:
    tls = TLS()
    tls.load(issued.cert, issued.key)
    server = await Server.start(
        webhook_app(settings, converter=None, cluster=cluster), "127.0.0.1", 0, tls=tls.context
    )
    try:
        yield f"https://127.0.0.1:{server.port}{POD_RESTORE_PATH}"
    finally:
        await server.stop()
        tls.close()


async def cluster_with_checkpoint(phase: str | None) -> MemoryCluster:
    """A cluster with namespace ``team-a`` and (unless ``phase`` is ``None``) the candidate's checkpoint."""
    cluster = MemoryCluster(namespaces=["team-a"])
    if phase is not None:
        checkpoint = {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "DynamoCheckpoint",
            "metadata": {"name": CHECKPOINT_NAME, "namespace": "team-a"},
            "spec": {"identity": {"model": "team-a/qwen", "backendFramework": "vllm"}},
        }
        await cluster.create(CHECKPOINT, checkpoint)
        status = {"phase": phase, "checkpointID": "5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"}
        await cluster.patch_status(CHECKPOINT.key("team-a", CHECKPOINT_NAME), {"status": status})
    return cluster


async def answer(url: str, issued: certificates.Certificates) -> dict[str, Any]:
    status, body = await post(url, issued.ca_cert, REVIEW.read_bytes())
    assert status == 200 and body["response"]["allowed"] is True
    response: dict[str, Any] = body["response"]
    return response


def recorded_pod() -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(REVIEW.read_text())["request"]["object"]
    return pod


async def test_a_candidate_created_after_its_checkpoint_is_ready_is_restored(
    issued: certificates.Certificates,
) -> None:
    # given a Ready checkpoint in the pod's namespace
    cluster = await cluster_with_checkpoint("Ready")

    # when the API server sends the candidate's create
    async with serving(issued, cluster) as url:
        response = await answer(url, issued)

    # then the answer is a patch that makes the pod a restore target of that checkpoint
    assert response["patchType"] == "JSONPatch"
    pod = json_patch.apply(recorded_pod(), json.loads(base64.b64decode(response["patch"])))
    assert (
        pod["metadata"]["labels"]["nvidia.com/snapshot-checkpoint-id"] == "5f0c6a0e2b9d4e7f8a1b2c3d4e5f6a7b"
    )
    assert "nvidia.com/dynamo-checkpoint-restore-candidate" not in pod["metadata"]["annotations"]
    assert pod["spec"]["securityContext"]["seccompProfile"]["type"] == "Localhost"


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("Creating", "checkpoint not ready"),
        (
            None,
            f"checkpoint not available: NotFound (404): DynamoCheckpoint team-a/{CHECKPOINT_NAME}: "
            f'dynamocheckpoints.nvidia.com "{CHECKPOINT_NAME}" not found',
        ),
    ],
)
async def test_a_candidate_whose_checkpoint_is_not_ready_or_missing_starts_cold(
    issued: certificates.Certificates, phase: str | None, expected: str
) -> None:
    cluster = await cluster_with_checkpoint(phase)

    async with serving(issued, cluster) as url:
        response = await answer(url, issued)

    assert "patch" not in response
    assert response["status"] == {"code": 200, "message": expected, "status": "Success"}


async def test_a_checkpoint_that_cannot_be_read_leaves_the_pod_cold_but_admitted(
    issued: certificates.Certificates,
) -> None:
    # given an API server that refuses the operator the checkpoint
    cluster = await cluster_with_checkpoint("Ready")
    cluster.faults.fail(Forbidden("dynamocheckpoints is forbidden"), verb="get", resource=CHECKPOINT)

    async with serving(issued, cluster) as url:
        response = await answer(url, issued)

    # then the pod is admitted as it came, saying why
    assert "patch" not in response
    assert response["status"]["message"] == (
        "checkpoint not available: Forbidden (403): dynamocheckpoints is forbidden"
    )


async def test_a_checkpoint_read_that_does_not_answer_in_time_leaves_the_pod_cold(
    issued: certificates.Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an API server slower than the mutator waits
    monkeypatch.setattr(webhook_module, "READ_TIMEOUT", 0.05)
    cluster = await cluster_with_checkpoint("Ready")
    cluster.faults.delay(30.0, verb="get", resource=CHECKPOINT)

    async with serving(issued, cluster) as url:
        response = await answer(url, issued)

    # then the mutator answers without it
    assert "patch" not in response
    assert response["status"]["message"] == (
        "checkpoint not available: the API server did not answer within 0.05s"
    )


async def test_with_the_gate_off_nothing_is_read_and_the_pod_is_admitted_as_it_came(
    issued: certificates.Certificates,
) -> None:
    # given a cluster whose every read fails: a read would show
    cluster = await cluster_with_checkpoint("Ready")
    cluster.faults.fail(Forbidden("no reads expected"), verb="get")

    async with serving(issued, cluster, AdmissionSettings()) as url:
        response = await answer(url, issued)

    assert response["status"]["message"] == "checkpoint disabled"


async def test_a_failure_of_the_mutator_itself_admits_the_pod_unchanged(
    issued: certificates.Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given rules that raise (a bug)
    def broken(*_: object) -> None:
        raise KeyError("spec")

    monkeypatch.setattr(webhook_module.pod_restore, "mutate_pod", broken)
    cluster = await cluster_with_checkpoint("Ready")

    async with serving(issued, cluster) as url:
        response = await answer(url, issued)

    # then pod creation is not blocked: allowed, unchanged, with a sentence (the traceback is logged)
    assert "patch" not in response
    assert response["status"]["message"] == "checkpoint restore mutation unavailable"


async def test_the_mutator_is_not_served_without_a_cluster_to_read_from(
    issued: certificates.Certificates,
) -> None:
    async with serving(issued, None) as url:
        status, _ = await post(url, issued.ca_cert, REVIEW.read_bytes())

    assert status == 404
