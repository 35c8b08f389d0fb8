"""The webhooks' registration by the daemon: the configurations point where the flags say, and the leader
registers the pod-restore mutator only under the checkpoint gate.
"""

from __future__ import annotations

import base64
import random

import anyio
import anyio.streams.tls
import pytest

from dgd.cluster.errors import NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    DEFAULT_RESOURCES,
    MUTATING_WEBHOOK_CONFIGURATION,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from dgd.daemon import certificate_sources
from dgd.daemon.registration import WebhookSettings, configurations, conversion_patch
from dgd.domain.admission.webhooks import AdmissionSettings
from dgd.messages.config import CheckpointConfig
from tests.unit.daemon.webhook_replicas import NS, START, Wall, replica

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def quick_reloads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certificate_sources, "RELOAD", 0.02)


def rule(version: str, resource: str) -> dict[str, object]:
    return {
        "apiGroups": ["nvidia.com"],
        "apiVersions": [version],
        "operations": ["CREATE", "UPDATE"],
        "resources": [resource],
    }


def test_url_registration_points_every_webhook_and_the_conversion_at_the_address() -> None:
    settings = WebhookSettings(address="127.0.0.1:9443", register="url", secret_namespace=NS)
    bundle = b"-----BEGIN CERTIFICATE-----\n...\n"

    (_, mutating), (_, validating) = configurations(
        settings, bundle, url="https://127.0.0.1:9443", namespaces=()
    )

    assert (mutating["metadata"]["name"], validating["metadata"]["name"]) == (
        "dynamo-operator-mutating",
        "dynamo-operator-validating",
    )
    hooks = mutating["webhooks"] + validating["webhooks"]
    base = "https://127.0.0.1:9443"
    assert [(hook["name"], hook["clientConfig"]["url"], hook["rules"]) for hook in hooks] == [
        (
            "mdynamographdeployment.kb.io",
            f"{base}/mutate/nvidia.com/v1beta1/dynamographdeployments",
            [rule("v1beta1", "dynamographdeployments")],
        ),
        (
            "mdynamocomponentdeploymentv1beta1.kb.io",
            f"{base}/mutate-nvidia-com-v1beta1-dynamocomponentdeployment",
            [rule("v1beta1", "dynamocomponentdeployments")],
        ),
        (
            "vdynamographdeployment.kb.io",
            f"{base}/validate/nvidia.com/v1beta1/dynamographdeployments",
            [rule("v1beta1", "dynamographdeployments")],
        ),
        (
            "vdynamocomponentdeployment.kb.io",
            f"{base}/validate/nvidia.com/v1beta1/dynamocomponentdeployments",
            [rule("v1beta1", "dynamocomponentdeployments")],
        ),
        (
            "vdynamocheckpoint.kb.io",
            f"{base}/validate-nvidia-com-v1alpha1-dynamocheckpoint",
            [rule("v1alpha1", "dynamocheckpoints")],
        ),
    ]
    # the DCD defaulting matches its version exactly (§4.1), the others as the API server's default
    assert [hook.get("matchPolicy") for hook in hooks] == [None, "Exact", None, None, None]
    for hook in hooks:
        assert base64.b64decode(hook["clientConfig"]["caBundle"]) == bundle
        assert (hook["failurePolicy"], hook["sideEffects"], hook["timeoutSeconds"]) == ("Fail", "None", 10)
        assert hook["admissionReviewVersions"] == ["v1"] and "namespaceSelector" not in hook
    conversion = conversion_patch(settings, bundle, url="https://127.0.0.1:9443")["spec"]["conversion"]
    assert conversion["webhook"]["clientConfig"] == {
        "url": "https://127.0.0.1:9443/convert",
        "caBundle": base64.b64encode(bundle).decode(),
        "service": None,
    }


def test_namespace_restricted_registration_selects_the_namespace_and_names_itself_apart() -> None:
    settings = WebhookSettings(secret_namespace="team-a-operator")

    (_, mutating), _ = configurations(settings, b"", url=None, namespaces=("team-a",))

    assert mutating["metadata"]["name"] == "dynamo-operator-mutating-team-a-operator"
    hook = mutating["webhooks"][0]
    assert hook["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}
    assert hook["clientConfig"] == {
        "service": {
            "namespace": "dynamo-system",
            "name": "dynamo-operator-webhook-service",
            "path": "/mutate/nvidia.com/v1beta1/dynamographdeployments",
        }
    }


def test_an_operator_watching_several_namespaces_selects_each_of_them() -> None:
    settings = WebhookSettings(secret_namespace="teams-operator")

    # when a restricted operator watches two namespaces (run --namespace team-a --namespace team-b)
    registered = configurations(settings, b"", url=None, namespaces=("team-a", "team-b"))

    # then every webhook selects both, and nothing else
    selector = {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}
        ]
    }
    assert [hook["namespaceSelector"] for _, c in registered for hook in c["webhooks"]] == [selector] * sum(
        len(c["webhooks"]) for _, c in registered
    )


def test_under_the_checkpoint_gate_the_pod_restore_mutator_is_registered_for_pod_creates() -> None:
    settings = WebhookSettings(secret_namespace=NS)

    (_, mutating), (_, validating) = configurations(settings, b"", url=None, namespaces=(), pod_restore=True)

    # then it comes last in the mutating configuration, for pod creates only, and Ignore by default
    *others, restore = mutating["webhooks"]
    assert [hook["name"] for hook in others] == [
        "mdynamographdeployment.kb.io",
        "mdynamocomponentdeploymentv1beta1.kb.io",
    ]
    assert restore == {
        "name": "mpodcheckpointrestore.kb.io",
        "clientConfig": {
            "service": {
                "namespace": "dynamo-system",
                "name": "dynamo-operator-webhook-service",
                "path": "/mutate-core-v1-pod-checkpoint-restore",
            }
        },
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
        ],
        "failurePolicy": "Ignore",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": 10,
    }
    # and the other webhooks keep their own failure policy
    assert {hook["failurePolicy"] for hook in others + validating["webhooks"]} == {"Fail"}


def test_the_pod_restore_failure_policy_is_the_flags_and_restricted_mode_selects_the_namespace() -> None:
    settings = WebhookSettings(secret_namespace="team-a-operator", pod_restore_failure_policy="Fail")

    (_, mutating), _ = configurations(settings, b"", url=None, namespaces=("team-a",), pod_restore=True)

    restore = mutating["webhooks"][-1]
    assert (restore["name"], restore["failurePolicy"]) == ("mpodcheckpointrestore.kb.io", "Fail")
    assert restore["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}


@pytest.mark.parametrize("gate", [True, False])
async def test_the_leader_registers_the_pod_restore_mutator_only_under_the_checkpoint_gate(
    gate: bool,
) -> None:
    # given a cluster serving the webhook configurations
    cluster = MemoryCluster(
        resources=(*DEFAULT_RESOURCES, MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION),
        clock=lambda: START,
        rng=random.Random(3),
        namespaces=(NS,),
    )
    wall = Wall()
    settings = WebhookSettings(address="127.0.0.1:0", secret_namespace=NS, register="service")
    gated = AdmissionSettings(operator_principal="op", checkpoint=CheckpointConfig(enabled=gate))
    key = MUTATING_WEBHOOK_CONFIGURATION.key(None, "dynamo-operator-mutating")

    # when the leader of replicas with the checkpoint gate on (or off) has registered the webhooks
    async with replica(cluster, wall, settings, gated) as leader, anyio.create_task_group() as tg:
        tg.start_soon(leader.lead)
        with anyio.fail_after(10):  # a guard against a hang, not a timing claim
            while True:
                try:
                    registered = await cluster.get(key)
                    break
                except NotFound:
                    await anyio.sleep(0.02)
        tg.cancel_scope.cancel()

    # then the pod mutator is in the mutating configuration exactly when the gate is on
    names = [hook["name"] for hook in registered["webhooks"]]
    assert ("mpodcheckpointrestore.kb.io" in names) is gate
