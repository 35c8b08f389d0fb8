"""Checkpoints of intra-pod GMS components (dgd-domain §10.3; upstream ``internal/gms/clients.go``, the
DynamoCheckpoint CRD's ``spec.gpuMemoryService`` description, and the checkpoint Job admission rules of
supplement §5: the Job pod must carry the GMS wiring, since the checkpoint controller adds none)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dgd.domain.checkpoint_gms import gms_spec, prepare_job, restore_targets
from dgd.domain.render.errors import RenderError
from dgd.messages.component import ComponentCheckpoint, ComponentSpec


def _component(experimental: dict[str, Any]) -> ComponentSpec:
    return msgspec.convert({"name": "Worker", "type": "worker", "experimental": experimental}, ComponentSpec)


def _job() -> dict[str, Any]:
    return {
        "spec": {
            "resourceClaims": [{"name": "intrapod-shared-gpu", "resourceClaimTemplateName": "g-worker-gpu"}],
            "containers": [{"name": "main"}, {"name": "gms-saver", "image": "saver:1"}],
        }
    }


CHECKPOINT = {"enabled": True, "job": {"gmsClientContainers": ["gms-saver"]}}


def test_the_job_claims_from_the_checkpoints_template_and_wires_its_gms_clients() -> None:
    # given an intra-pod GMS worker whose checkpoint Job adds a GMS client container
    component = _component({"gpuMemoryService": {}, "checkpoint": CHECKPOINT})
    config = msgspec.convert(CHECKPOINT, ComponentCheckpoint)

    # when its Job pod is prepared
    prepared = prepare_job(_job(), component, config, "abc")

    # then the pod claim names the checkpoint's own template, and the client is wired ([gms] EnsureClient)
    spec = prepared["spec"]
    assert spec["resourceClaims"] == [
        {"name": "intrapod-shared-gpu", "resourceClaimTemplateName": "checkpoint-abc-worker-gpu"}
    ]
    saver = spec["containers"][1]
    assert saver["env"] == [{"name": "GMS_SOCKET_DIR", "value": "/gms-intrapod-control"}]
    assert saver["resources"] == {"claims": [{"name": "intrapod-shared-gpu"}]}
    # and the checkpoint records the client with the GMS configuration
    assert gms_spec(component, config) == {
        "enabled": True,
        "mode": "intraPod",
        "deviceClassName": "gpu.nvidia.com",
        "extraClientContainers": ["gms-saver"],
    }


def test_a_job_gms_client_that_names_no_container_is_refused() -> None:
    # given a checkpoint Job client that the Job's pod does not have
    checkpoint = {"enabled": True, "job": {"gmsClientContainers": ["ghost"]}}
    component = _component({"gpuMemoryService": {}, "checkpoint": checkpoint})

    # when the Job pod is prepared, then it is refused naming the field and the containers there are
    with pytest.raises(RenderError) as refused:
        prepare_job(_job(), component, msgspec.convert(checkpoint, ComponentCheckpoint), "abc")
    assert refused.value.path == "experimental.checkpoint.job.gmsClientContainers[0]"
    assert "'ghost' does not name a container of the checkpoint Job's pod (main, gms-saver)" in str(
        refused.value
    )


@pytest.mark.parametrize(
    ("experimental", "targets"),
    [
        ({"gpuMemoryService": {}, "failover": {}}, ("engine-0", "engine-1")),
        ({"gpuMemoryService": {}}, ("main",)),
        ({"gpuMemoryService": {"mode": "InterPod"}, "failover": {"mode": "InterPod"}}, ("main",)),
    ],
    ids=["intra-pod failover", "gms only", "inter-pod failover"],
)
def test_restores_target_the_failover_engines_only_for_intra_pod_failover(
    experimental: dict[str, Any], targets: tuple[str, ...]
) -> None:
    # given a checkpointed component targeting main (dgd-domain §10.3: "Intra-pod failover overrides them
    # with its engine container names")
    config = ComponentCheckpoint(enabled=True, target_container_name="main")

    # then its restores target these containers
    assert restore_targets(_component(experimental), config) == targets
