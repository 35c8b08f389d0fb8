"""RBAC proven by the real authorizer: the daemon runs as its ServiceAccount, with exactly ``deploy/``'s
rules, and reconciles graphs on both pathways with no request refused.

The ServiceAccount's token comes from the TokenRequest API (``kubectl create token``), in a kubeconfig
of its own; the API server authorizes with RBAC (never AlwaysAllow). Cluster-wide, the committed
``deploy/rbac/cluster-wide.yaml`` is applied as users apply it; namespace-restricted, the generator of
``deploy/`` renders the Roles for the test's namespace (the committed file's namespace is the chart's).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import kubectl
from tests.e2e.operators import Operators
from tests.real.harness import LEASE_NS, UPSTREAM_EXAMPLES, RealCluster, manifest, world
from tests.unit.deploy.generator import generate
from tests.upstream import DYNAMO

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
GAIE_AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "gaie" / "agg.yaml"


def service_account_kubeconfig(real: RealCluster, directory: Path, account: str, namespace: str) -> Path:
    """A kubeconfig that authenticates as ``namespace/account`` with a token from the TokenRequest API."""
    token = kubectl(real.plane, "create", "token", account, "-n", namespace, "--duration", "1h")
    assert token.returncode == 0, token.stderr.decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "real",
                "cluster": {"server": real.plane.server, "certificate-authority": str(real.plane.ca_cert)},
            }
        ],
        "users": [{"name": account, "user": {"token": token.stdout.decode().strip()}}],
        "contexts": [{"name": account, "context": {"cluster": "real", "user": account}}],
        "current-context": account,
    }
    path = directory / f"{account}.kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def apply(real: RealCluster, documents: list[dict[str, object]]) -> None:
    applied = kubectl(
        real.plane,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        input=yaml.safe_dump_all(documents).encode(),
    )
    assert applied.returncode == 0, applied.stderr.decode()


async def refused(operator: object) -> float:
    """Requests the API server answered 403, from the daemon's own metrics."""
    samples = await operator.metrics()  # type: ignore[attr-defined]
    return sum(
        value for key, value in samples.items() if key.startswith("rest_client_requests_total{code=403")
    )


@pytest.mark.parametrize("restricted", [False, True], ids=["cluster-wide", "namespace-restricted"])
async def test_the_daemon_as_its_service_account_reconciles_both_pathways_with_no_request_refused(
    real: RealCluster, daemons: Operators, tmp_path: Path, restricted: bool
) -> None:
    # given the RBAC of deploy/ applied, for every namespace or only the test's
    install = generate.Install(watch=(real.namespace,)) if restricted else generate.CLUSTER_WIDE
    if restricted:
        apply(real, install.rbac())
    else:
        applied = kubectl(
            real.plane, "apply", "--server-side", "-f", str(ROOT / "deploy" / "rbac" / "cluster-wide.yaml")
        )
        assert applied.returncode == 0, applied.stderr.decode()
    kubeconfig = service_account_kubeconfig(real, tmp_path, install.release, LEASE_NS)

    # when the daemon runs with the ServiceAccount's token, and graphs of both pathways are applied
    # No DCD controller: `sim world` plays one on this tier (as ``harness.run_flags`` says).
    flags = ["--kubeconfig", str(kubeconfig), "--no-dcd-controller"]
    if restricted:
        flags += ["--namespace", real.namespace]
    async with world(real, tmp_path):
        operator = await daemons.start("sa", flags=flags)
        await real.apply(manifest(UPSTREAM_EXAMPLES[0], name="grove-agg"))
        await real.apply(manifest(UPSTREAM_EXAMPLES[1], name="component-disagg", component=True))
        # and a graph with an endpoint picker (its RBAC bound cluster-wide, its pool, the mesh off)
        await real.apply(manifest(GAIE_AGG, name="grove-epp"))

        # then all reach successful, and the API server refused none of the daemon's requests
        await real.settle("grove-agg", "component-disagg", "grove-epp", timeout=120)
        assert await refused(operator) == 0, operator.tail()
