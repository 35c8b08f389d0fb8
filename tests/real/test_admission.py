"""The operator's webhooks on a real control plane: ``run --webhook-register url`` registers them with
its own certificates, and the real API server then defaults, validates and converts DGDs through them.

The registrations are cluster-wide, so each test removes them when it ends (else every later DGD write
of the run would call a webhook that is gone, and fail as ``failurePolicy: Fail`` says).
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from dgd.cluster.errors import NotFound
from dgd.cluster.resources import (
    CRD,
    MUTATING_WEBHOOK_CONFIGURATION,
    SECRET,
    VALIDATING_WEBHOOK_CONFIGURATION,
)
from dgd.daemon import certificates
from dgd.daemon.registration import CONVERTED_CRDS, WebhookSettings, conversion_patch
from dgd.domain.quantity import canonical_quantity
from tests.conftest import kubectl
from tests.e2e.eventually import eventually
from tests.e2e.operators import Operators
from tests.real.harness import EXAMPLES, RealCluster, manifest, run_flags, world, written_config
from tests.upstream import UPSTREAM, dgd_documents, load_documents

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600), pytest.mark.usefixtures("cluster_rbac")]

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATIONS = (
    (MUTATING_WEBHOOK_CONFIGURATION, "dynamo-operator-mutating"),
    (VALIDATING_WEBHOOK_CONFIGURATION, "dynamo-operator-validating"),
)


async def _unregister(real: RealCluster) -> None:
    """Remove the registrations, and point the CRDs' conversion back at the chart's Service."""
    for resource, name in CONFIGURATIONS:
        with suppress(NotFound):
            await real.kube.delete(resource.key(None, name))
    for crd in CONVERTED_CRDS:
        with suppress(NotFound):
            await real.kube.patch(CRD.key(None, crd), conversion_patch(WebhookSettings(), b"", url=None))


@asynccontextmanager
async def registered(
    real: RealCluster, daemons: Operators, tmp_path: Path, *more: str
) -> AsyncIterator[None]:
    """A daemon serving the webhooks on loopback and registering them by URL, with the world."""
    config = written_config(tmp_path)
    flags = ("--webhook-addr", "127.0.0.1:0", "--webhook-register", "url",
             "--webhook-secret", f"{real.namespace}/webhook-certs", *more)  # fmt: skip
    try:
        async with world(real, tmp_path):
            await daemons.start("admitting", flags=run_flags(config, *flags))

            async def ready() -> bool:
                # The leader writes the configurations first, then the CRDs' conversion.
                try:
                    key = VALIDATING_WEBHOOK_CONFIGURATION.key(None, CONFIGURATIONS[1][1])
                    hooks = await real.kube.get(key)
                except NotFound:
                    return False
                crd = await real.kube.get(CRD.key(None, CONVERTED_CRDS[0]))
                client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
                return "url" in client and all(h["clientConfig"].get("caBundle") for h in hooks["webhooks"])

            await eventually(ready, timeout=60, what="the webhooks registered")
            yield
    finally:
        await _unregister(real)


def _apply(real: RealCluster, document: dict[str, Any], *args: str) -> tuple[int, str]:
    body = copy.deepcopy(document)
    body["metadata"]["namespace"] = real.namespace
    applied = kubectl(real.plane, "apply", *args, "-f", "-", input=yaml.safe_dump(body).encode())
    return applied.returncode, (applied.stdout + applied.stderr).decode()


async def test_the_api_server_defaults_validates_and_exempts_through_the_operators_webhooks(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    agg = manifest(EXAMPLES / "vllm" / "deploy" / "agg.yaml", name="admitted")
    worker = next(c for c in agg["spec"]["components"] if c.get("type") == "worker")
    worker["scalingAdapter"] = {}
    # who may write what: a user, and a planner's ServiceAccount, both with RBAC to write DGDs here
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "writers", "namespace": real.namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "ServiceAccount", "name": "planner-serviceaccount", "namespace": real.namespace},
        ],
    }
    bound = kubectl(real.plane, "apply", "-f", "-", input=json.dumps(binding).encode())
    assert bound.returncode == 0, bound.stderr.decode()

    async with registered(real, daemons, tmp_path):
        # when a DGD that asks for a restart on create, with an order under a parallel strategy, is applied
        bad = copy.deepcopy(agg)
        bad["metadata"]["name"] = "refused"
        bad["spec"]["restart"] = {"id": "1", "strategy": {"type": "Parallel", "order": ["Frontend"]}}
        code, said = _apply(real, bad)
        # then the API server refuses it with both of upstream's messages, from our webhook
        assert code != 0
        assert 'The DynamoGraphDeployment "refused" is invalid' in said
        assert "spec.restart: spec.restart must be unset on create" in said
        assert "spec.restart.strategy.order: cannot be specified when strategy is parallel" in said

        # when a valid DGD is applied, client-side then server-side
        code, said = _apply(real, agg)
        assert code == 0, said
        code, said = _apply(real, agg, "--server-side")
        assert code == 0, said
        # then it was defaulted by our webhook on create, and the operator takes it to successful
        stored = await real.dgd("admitted")
        assert stored["metadata"]["annotations"]["nvidia.com/workload-provider"] == "grove"
        assert all(c.get("replicas") == 1 or c is not None for c in stored["spec"]["components"])
        await real.settle("admitted", timeout=120)

        # when alice changes the replicas of the adapter-scaled worker, she is refused
        index = next(i for i, c in enumerate(stored["spec"]["components"]) if c.get("type") == "worker")
        patch = json.dumps([{"op": "replace", "path": f"/spec/components/{index}/replicas", "value": 2}])
        refused = kubectl(real.plane, "patch", "dgd", "admitted", "-n", real.namespace, "--type=json",
                          "-p", patch, "--as=alice")  # fmt: skip
        assert refused.returncode != 0
        assert "cannot be modified directly when scaling adapter is enabled" in refused.stderr.decode()
        # and a planner's ServiceAccount may
        planner = f"system:serviceaccount:{real.namespace}:planner-serviceaccount"
        allowed = kubectl(real.plane, "patch", "dgd", "admitted", "-n", real.namespace, "--type=json",
                          "-p", patch, f"--as={planner}")  # fmt: skip
        assert allowed.returncode == 0, allowed.stderr.decode()


async def test_the_ca_bundle_the_operator_patches_in_survives_reapplying_the_crds(real: RealCluster) -> None:
    # given the CRDs' conversion with a CA bundle patched in, as the operator does in service mode
    now = datetime.datetime.now(datetime.UTC)
    bundle = certificates.issue(["dynamo-operator-webhook-service.dynamo-system.svc"], now=now).ca_cert
    try:
        for crd in CONVERTED_CRDS:
            await real.kube.patch(CRD.key(None, crd), conversion_patch(WebhookSettings(), bundle, url=None))

        # when the generated CRDs are applied again, server-side, as an upgrade would
        text = "\n---\n".join(
            p.read_text() for p in sorted((ROOT / "deploy" / "crds").glob("nvidia.com_*.yaml"))
        )
        applied = kubectl(
            real.plane, "apply", "--server-side", "--force-conflicts", "-f", "-", input=text.encode()
        )
        assert applied.returncode == 0, applied.stderr.decode()

        # then the bundle is still there
        dgd = await real.kube.get(CRD.key(None, CONVERTED_CRDS[0]))
        client = dgd["spec"]["conversion"]["webhook"]["clientConfig"]
        assert base64.b64decode(client["caBundle"]) == bundle
    finally:
        await _unregister(real)


async def test_with_the_webhook_down_dgd_writes_are_refused_as_failure_policy_fail_says(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    agg = manifest(EXAMPLES / "vllm" / "deploy" / "agg.yaml", name="while-down")
    async with registered(real, daemons, tmp_path):
        # when the operator stops (its registrations stay: another replica would serve them)
        daemons.stop_all()
        await anyio.sleep(0.5)
        code, said = _apply(real, agg)
        # then a DGD write is refused, saying the webhook could not be called
        assert code != 0
        assert 'failed calling webhook "mdynamographdeployment.kb.io"' in said


#: Upstream's v1alpha1 DGDs, by file and document index.
V1ALPHA1 = [
    (path, index)
    for path, index, document in dgd_documents()
    if document.get("apiVersion") == "nvidia.com/v1alpha1"
]


def _read_alpha(real: RealCluster, name: str) -> dict[str, Any]:
    read = kubectl(real.plane, "get", "dynamographdeployments.v1alpha1.nvidia.com", name,
                   "-n", real.namespace, "-o", "json")  # fmt: skip
    assert read.returncode == 0, read.stderr.decode()
    got: dict[str, Any] = json.loads(read.stdout)
    assert got["apiVersion"] == "nvidia.com/v1alpha1"
    return got


def _missing(applied: Any, read: Any, path: str = "") -> list[str]:
    """What of ``applied`` ``read`` does not hold (a quantity may read back canonical: 2048Mi as 2Gi)."""
    if isinstance(applied, dict) and isinstance(read, dict):
        return [p for key, value in applied.items() for p in _missing(value, read.get(key), f"{path}.{key}")]
    if isinstance(applied, list) and isinstance(read, list) and len(applied) == len(read):
        return [
            p
            for index, pair in enumerate(zip(applied, read, strict=True))
            for p in _missing(*pair, f"{path}[{index}]")
        ]
    if applied == read or (
        isinstance(applied, str) and isinstance(read, str) and _same_quantity(applied, read)
    ):
        return []
    return [f"{path}: applied {applied!r}, read {read!r}"]


def _same_quantity(a: str, b: str) -> bool:
    try:
        return canonical_quantity(a) == canonical_quantity(b)
    except ValueError:
        return False


@pytest.mark.parametrize(("path", "index"), V1ALPHA1, ids=lambda value: str(value).rsplit("/", 1)[-1])
async def test_a_v1alpha1_dgd_applies_through_the_conversion_webhook_and_reads_back_as_applied(
    real: RealCluster, daemons: Operators, tmp_path: Path, path: str, index: int
) -> None:
    documents = load_documents(UPSTREAM / path)
    document = copy.deepcopy(documents[index])
    name = document["metadata"]["name"]
    # given what the example asks a user to create first: the other documents of its file (the xpu
    # example's ResourceClaimTemplate) and the claim its README names (the recipe's model-cache)
    first = [d for i, d in enumerate(documents) if i != index and isinstance(d, dict)]
    claim = (UPSTREAM / path).parent / "model-cache.yaml"
    if claim.is_file():
        first += load_documents(claim)
    for needed in first:
        code, said = _apply(real, needed)
        assert code == 0, said
    async with registered(real, daemons, tmp_path):
        # when a v1alpha1 DGD is applied with kubectl client-side, then server-side (taking over the
        # client-side apply's fields: a pvcs entry without a size reads back with upstream's "0", so its
        # values differ from the manifest's; docs/decisions.md, "Parity features"), then server-side again
        for how in ((), ("--server-side", "--force-conflicts"), ("--server-side",)):
            code, said = _apply(real, document, *how)
            assert code == 0, f"{how}: {said}"
            # then it reads back as v1alpha1 with everything that was applied (and the defaults)
            assert _missing(document["spec"], _read_alpha(real, name)["spec"]) == [], how
        # and it is stored as v1beta1 with the mutating webhook's defaults
        stored = await real.dgd(name)
        assert stored["metadata"]["annotations"]["nvidia.com/workload-provider"] == "grove"
        # and it reaches successful (the GPU memory service, failover, the endpoint picker and a user's
        # DRA claims included)
        await real.settle(name, timeout=120)


async def test_a_certificate_renewal_and_a_ca_rotation_lose_no_request(
    real: RealCluster, daemons: Operators, tmp_path: Path
) -> None:
    agg = manifest(EXAMPLES / "vllm" / "deploy" / "agg.yaml", name="renewed")
    body = copy.deepcopy(agg)
    body["metadata"]["namespace"] = real.namespace
    text = yaml.safe_dump(body).encode()
    secret = SECRET.key(real.namespace, "webhook-certs")
    # given serving certificates valid for 30 s and a CA valid for 60 s, which the leader renews and
    # rotates at two thirds of that
    flags = ("--webhook-cert-validity", "30s", "--webhook-ca-validity", "60s")
    async with registered(real, daemons, tmp_path, *flags):
        first = (await real.kube.get(secret))["data"]
        served: set[str] = {first["tls.crt"]}
        authorities: set[str] = {first["ca.crt"]}
        failures: list[str] = []
        # when DGD writes go through the webhooks (server-side dry runs) for 55 s
        deadline = anyio.current_time() + 55
        while anyio.current_time() < deadline:
            tried = kubectl(real.plane, "create", "--dry-run=server", "-f", "-", input=text)
            if tried.returncode != 0:
                failures.append(tried.stderr.decode())
            data = (await real.kube.get(secret))["data"]
            served.add(data["tls.crt"])
            authorities.add(data["ca.crt"])
            await anyio.sleep(1)

        # and once the rotation is over, the webhooks trust the new CA alone
        async def settled() -> bool:
            data = (await real.kube.get(secret))["data"]
            if data["ca.crt"] == first["ca.crt"] or "ca-previous.crt" in data:
                return False
            hooks = await real.kube.get(VALIDATING_WEBHOOK_CONFIGURATION.key(None, CONFIGURATIONS[1][1]))
            return all(h["clientConfig"]["caBundle"] == data["ca.crt"] for h in hooks["webhooks"])

        await eventually(settled, timeout=30, what="the CA rotation over and registered")
    # then the certificate was renewed, the CA rotated, and no request failed meanwhile
    assert len(served) >= 2
    assert len(authorities) >= 2
    assert failures == []
