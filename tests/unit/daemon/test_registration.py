"""The leader's registration against an API server that serves the registration kinds (the memory server
given ``REGISTRATION_RESOURCES``, the CRDs installed): the configurations are created, then replaced
when the CA changes; each converted CRD's conversion points at the Service with the CA; a
namespace-restricted operator leaves the CRDs alone; and the operator learns who it is."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import (
    CRD,
    DEFAULT_RESOURCES,
    MUTATING_WEBHOOK_CONFIGURATION,
    REGISTRATION_RESOURCES,
    SELF_SUBJECT_REVIEW,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from dgd.daemon.registration import CONVERTED_CRDS, WebhookSettings, operator_principal, register
from dgd.domain.crds import all_crds

pytestmark = pytest.mark.anyio

OPERATOR = "system:serviceaccount:ops:team-ops"
SETTINGS = WebhookSettings(
    secret_namespace="ops",
    register="service",
    service_namespace="ops",
    service_name="team-ops-webhook-service",
    configuration_prefix="team-ops",
)
FIRST_CA, SECOND_CA = b"-----BEGIN CERTIFICATE-----\nfirst\n", b"-----BEGIN CERTIFICATE-----\nsecond\n"


async def cluster_with_crds() -> MemoryCluster:
    cluster = MemoryCluster(
        resources=(*DEFAULT_RESOURCES, *REGISTRATION_RESOURCES), rng=random.Random(7), user=OPERATOR
    )
    for crd in all_crds():
        await cluster.create(CRD, crd)
    return cluster


async def bundles(cluster: MemoryCluster, prefix: str) -> dict[str, Any]:
    """Each configuration's caBundles (decoded), and its resourceVersion."""
    found = {}
    for resource, role in (
        (MUTATING_WEBHOOK_CONFIGURATION, "mutating"),
        (VALIDATING_WEBHOOK_CONFIGURATION, "validating"),
    ):
        configuration = await cluster.get(resource.key(None, f"{prefix}-{role}"))
        found[resource.kind] = (
            {base64.b64decode(hook["clientConfig"]["caBundle"]) for hook in configuration["webhooks"]},
            configuration["metadata"]["resourceVersion"],
        )
    return found


async def test_the_configurations_are_created_then_replaced_when_the_ca_changes() -> None:
    # given an API server with no configuration yet
    cluster = await cluster_with_crds()

    # when the leader registers with one CA, then with another (the CA Secret was replaced)
    await register(cluster, SETTINGS, FIRST_CA, url=None, namespaces=())
    first = await bundles(cluster, "team-ops")
    await register(cluster, SETTINGS, SECOND_CA, url=None, namespaces=())
    second = await bundles(cluster, "team-ops")

    # then both configurations, named after the prefix, first carried the first CA, then the second
    assert {kind: cas for kind, (cas, _) in first.items()} == {
        "MutatingWebhookConfiguration": {FIRST_CA},
        "ValidatingWebhookConfiguration": {FIRST_CA},
    }
    assert {kind: cas for kind, (cas, _) in second.items()} == {
        "MutatingWebhookConfiguration": {SECOND_CA},
        "ValidatingWebhookConfiguration": {SECOND_CA},
    }
    # and each was replaced in place, not made twice
    assert all(first[kind][1] != second[kind][1] for kind in first)
    assert len((await cluster.list(MUTATING_WEBHOOK_CONFIGURATION)).items) == 1


async def test_each_converted_crds_conversion_points_at_the_service_with_the_ca() -> None:
    # given the CRDs as deploy/crds installs them (conversion at upstream's Service, no CA)
    cluster = await cluster_with_crds()

    # when a cluster-wide leader registers
    await register(cluster, SETTINGS, FIRST_CA, url=None, namespaces=())

    # then the three converted CRDs call this release's Service at /convert, trusting the CA
    for name in CONVERTED_CRDS:
        crd = await cluster.get(CRD.key(None, name))
        client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client["service"] == {
            "namespace": "ops",
            "name": "team-ops-webhook-service",
            "path": "/convert",
        }
        assert base64.b64decode(client["caBundle"]) == FIRST_CA and "url" not in client


async def test_a_namespace_restricted_leader_registers_its_own_configurations_and_leaves_the_crds() -> None:
    # given the CRDs installed
    cluster = await cluster_with_crds()
    before = {name: await cluster.get(CRD.key(None, name)) for name in CONVERTED_CRDS}

    # when a leader restricted to team-a registers
    await register(cluster, SETTINGS, FIRST_CA, url=None, namespaces=("team-a",))

    # then its configurations carry the release namespace after their names, and no CRD changed
    names = {c["metadata"]["name"] for c in (await cluster.list(MUTATING_WEBHOOK_CONFIGURATION)).items}
    assert names == {"team-ops-mutating-ops"}
    assert {name: await cluster.get(CRD.key(None, name)) for name in CONVERTED_CRDS} == before


async def test_the_operators_principal_is_the_user_the_api_server_authenticated() -> None:
    # given an API server that authenticates this client as the operator's ServiceAccount
    cluster = await cluster_with_crds()

    # when the operator asks who it is
    principal = await operator_principal(cluster)

    # then it is that ServiceAccount, and the review was answered without being stored
    assert principal == OPERATOR
    assert (await cluster.list(SELF_SUBJECT_REVIEW)).items == []


async def test_without_the_review_kind_no_principal_is_known() -> None:
    # given an API server that does not serve SelfSubjectReviews
    cluster = MemoryCluster(rng=random.Random(7), user=OPERATOR)

    # when the operator asks who it is, then no one is (and the operator goes on)
    assert await operator_principal(cluster) is None
