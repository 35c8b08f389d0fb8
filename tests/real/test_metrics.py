"""Secure metrics checked by the real API server: the daemon, running as its ServiceAccount with exactly
``deploy/``'s cluster-wide RBAC, serves ``/metrics`` over HTTPS only to a ServiceAccount bound to the
``metrics-reader`` ClusterRole; another ServiceAccount's token is refused (403), no token is refused (401).

Tokens come from the TokenRequest API (``kubectl create token``); the API server authenticates them and
authorizes with RBAC (never AlwaysAllow), so the TokenReviews and SubjectAccessReviews the daemon asks are
answered as a production cluster answers them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import kubectl
from tests.e2e.operators import Operators
from tests.real.harness import LEASE_NS, RealCluster
from tests.real.test_rbac import service_account_kubeconfig
from tests.unit.deploy.generator import generate

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300), pytest.mark.usefixtures("cluster_rbac")]


def token(real: RealCluster, account: str) -> str:
    """A token of ``account`` in the test's namespace, from the TokenRequest API."""
    made = kubectl(real.plane, "create", "token", account, "-n", real.namespace, "--duration", "1h")
    assert made.returncode == 0, made.stderr.decode()
    return made.stdout.decode().strip()


@pytest.fixture
def scrapers(real: RealCluster) -> Iterator[tuple[str, str]]:
    """Two ServiceAccounts' tokens: the first bound to the installation's metrics-reader ClusterRole
    (the binding is removed after the test), the second bound to nothing."""
    for account in ("scraper", "stranger"):
        made = kubectl(real.plane, "create", "serviceaccount", account, "-n", real.namespace)
        assert made.returncode == 0, made.stderr.decode()
    binding = f"{real.namespace}-metrics-reader"
    reader = generate.CLUSTER_WIDE.metrics_reader_cluster_role_name
    bound = kubectl(
        real.plane, "create", "clusterrolebinding", binding, "--clusterrole", reader,
        "--serviceaccount", f"{real.namespace}:scraper",
    )  # fmt: skip
    assert bound.returncode == 0, bound.stderr.decode()
    try:
        yield token(real, "scraper"), token(real, "stranger")
    finally:
        kubectl(real.plane, "delete", "clusterrolebinding", binding, "--ignore-not-found")


async def scrape(port: int, bearer: str | None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}/metrics", headers=headers, ssl=False) as response,
    ):
        return response.status, await response.text()


async def test_the_daemon_serves_metrics_only_to_a_service_account_bound_to_the_reader_role(
    real: RealCluster, daemons: Operators, tmp_path: Path, scrapers: tuple[str, str]
) -> None:
    # given the daemon running as the operator's ServiceAccount, its metrics secure (the default)
    kubeconfig = service_account_kubeconfig(real, tmp_path, generate.RELEASE, LEASE_NS)
    operator = await daemons.start("secure", flags=["--kubeconfig", str(kubeconfig), "--metrics-secure"])
    reader, stranger = scrapers

    # when a request without a token, the stranger's and the reader's scrape /metrics
    anonymous, _ = await scrape(operator.metrics_port, None)
    refused, why = await scrape(operator.metrics_port, stranger)
    served, page = await scrape(operator.metrics_port, reader)

    # then only the reader is served: the others are unauthenticated and forbidden
    assert anonymous == 401
    assert refused == 403 and f"system:serviceaccount:{real.namespace}:stranger" in why
    assert served == 200, operator.tail()
    # and the page is the operator's, in which the API server refused none of its requests (the
    # reviews among them)
    samples = [s for family in text_string_to_metric_families(page) for s in family.samples]
    requests = [s for s in samples if s.name == "rest_client_requests_total"]
    assert {s.labels["method"] for s in requests} >= {"GET", "POST"}
    assert [s for s in requests if s.labels["code"] == "403"] == []
