"""The endpoint picker's shared resources (dgd-domain §7 rows 1 and 6): its RBAC, ConfigMap, InferencePool
and Istio DestinationRule, as the shared-resources child ensures them on both pathways."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.actors.machinery.owners import owner_reference
from dgd.cluster.errors import NotFound, ServerError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.resources import CLUSTER_ROLE, CONFIG_MAP, DESTINATION_RULE, INFERENCE_POOL, ROLE_BINDING
from dgd.domain.gates import Gates
from dgd.messages.config import IstioConfig, NamespaceConfig, OperatorConfig, RBACConfig, ServiceMeshConfig
from tests.unit.actors.operator.harness import NS, manifest, running_operator
from tests.unit.manifests import EPP_INLINE

pytestmark = pytest.mark.anyio

EPP = EPP_INLINE
EPP_ROLE = "dynamo-operator-epp"
ISTIO = ServiceMeshConfig(provider="istio", istio=IstioConfig())


def with_epp(*, grove: bool = True) -> dict[str, Any]:
    document = manifest()
    document["spec"]["components"].append(EPP)
    document["metadata"]["annotations"] = {} if grove else {"nvidia.com/enable-grove": "false"}
    return document


async def epp_cluster_role(cluster: MemoryCluster) -> None:
    """The EPP ClusterRole the chart installs."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": EPP_ROLE},
    }
    await cluster.create(CLUSTER_ROLE, role)


def message(dgd: Any) -> str:
    assert dgd.status is not None and dgd.status.conditions is not None
    return str(dgd.status.conditions[0].message)


@pytest.mark.parametrize("grove", [True, False], ids=["grove", "component"])
async def test_a_graph_with_an_endpoint_picker_gets_its_rbac_config_map_and_pool_owned_by_it(
    grove: bool,
) -> None:
    async with running_operator(before=epp_cluster_role, gates=Gates(grove=grove)) as op:
        # given a cluster with the EPP ClusterRole; when a graph with an endpoint picker is applied
        dgd = await op.apply(with_epp(grove=grove))

        # then the EPP's ServiceAccount is bound to its ClusterRole in the namespace, owned by no DGD
        binding = await op.cluster.get(ROLE_BINDING.key(NS, "epp-serviceaccount-binding"))
        assert binding["roleRef"]["name"] == EPP_ROLE
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "epp-serviceaccount", "namespace": NS}
        ]
        assert "ownerReferences" not in binding["metadata"]
        # and its ConfigMap and pool exist, controlled by the DGD
        config_map = await op.cluster.get(CONFIG_MAP.key(NS, "demo-epp-config"))
        pool = await op.cluster.get(INFERENCE_POOL.key(NS, "demo-pool"))
        for child in (config_map, pool):
            (owner,) = child["metadata"]["ownerReferences"]
            assert (owner["uid"], owner["controller"]) == (dgd.metadata.uid, True)
        assert pool["spec"]["endpointPickerRef"]["name"] == "demo-epp"
        assert "kind: EndpointPickerConfig" in config_map["data"]["epp-config-dynamo.yaml"]
        # and, with no service mesh, no DestinationRule; the events follow §7's order: RBAC first,
        # then the EPP's objects, then the workload
        reasons = [e[2] for e in await op.events()]
        order = [
            "Created RoleBinding team-a/epp-serviceaccount-binding",
            "Created ConfigMap team-a/demo-epp-config",
            "Created InferencePool team-a/demo-pool",
            "Created PodCliqueSet team-a/demo"
            if grove
            else "Created DynamoComponentDeployment team-a/demo-epp",
        ]
        assert [reasons.index(r) for r in order] == sorted(reasons.index(r) for r in order)
        assert not [r for r in reasons if "DestinationRule" in r]


async def test_a_missing_epp_cluster_role_fails_the_reconcile_naming_it() -> None:
    async with running_operator() as op:
        # given a cluster with the planner ClusterRole but not the EPP's
        # when a graph with an endpoint picker is applied
        await op.apply(with_epp())

        # then it fails saying what to install, before any EPP object is made
        assert message(await op.dgd()) == (
            f'failed to ensure EPP RBAC: cluster role "{EPP_ROLE}" does not exist: '
            "ensure it is created by Helm before deploying components"
        )
        assert "create InferencePool" not in op.writes


async def test_an_epp_cluster_role_name_left_empty_fails_the_reconcile_with_upstreams_message() -> None:
    # given an operator whose configuration names no EPP ClusterRole (start-up validation bypassed)
    config = OperatorConfig(rbac=RBACConfig(epp_cluster_role_name=""))
    async with running_operator(config=config) as op:
        # when a graph with an endpoint picker is applied
        await op.apply(with_epp())

        # then it fails with upstream's runtime message (supplement §2.4)
        assert message(await op.dgd()) == (
            "EPP ClusterRole name is required in cluster-wide mode when EPP service is present"
        )


async def test_in_restricted_mode_the_operator_makes_no_epp_identity() -> None:
    # given an operator restricted to the graph's namespace (the chart makes the EPP's identity there)
    config = OperatorConfig(namespace=NamespaceConfig(restricted=NS))
    async with running_operator(config=config) as op:
        # when a graph with an endpoint picker is applied
        await op.apply(with_epp())

        # then its pool exists but no EPP RoleBinding was written
        assert (await op.cluster.get(INFERENCE_POOL.key(NS, "demo-pool")))["metadata"]["name"] == "demo-pool"
        assert not [e for e in await op.events() if "epp-serviceaccount" in e[2]]


async def test_with_the_istio_gate_on_the_destination_rule_is_made_for_the_epp_service() -> None:
    config = OperatorConfig(service_mesh=ISTIO)
    async with running_operator(
        before=epp_cluster_role, config=config, gates=Gates(grove=True, istio=True)
    ) as op:
        # given the Istio mesh on; when a graph with an endpoint picker is applied
        dgd = await op.apply(with_epp())

        # then a DestinationRule named like the EPP Service tells the mesh to use the EPP's TLS
        rule = await op.cluster.get(DESTINATION_RULE.key(NS, "demo-epp"))
        assert rule["spec"] == {
            "host": "demo-epp.team-a.svc.cluster.local",
            "trafficPolicy": {"tls": {"mode": "SIMPLE", "insecureSkipVerify": True}},
        }
        assert rule["metadata"]["ownerReferences"][0]["uid"] == dgd.metadata.uid


async def test_with_the_istio_gate_off_only_a_destination_rule_the_graph_controls_is_deleted() -> None:
    async with running_operator(before=epp_cluster_role) as op:
        # given a graph with an endpoint picker, the mesh off
        dgd = await op.apply(with_epp())
        assert (await op.dgd()).status.state == "pending"  # type: ignore[union-attr]
        # and a DestinationRule it controls (left from when the mesh was on), then one of someone else's
        reference = owner_reference(dgd)
        rule = {
            "apiVersion": "networking.istio.io/v1beta1",
            "kind": "DestinationRule",
            "metadata": {"name": "demo-epp", "namespace": NS, "ownerReferences": [reference]},
            "spec": {"host": "demo-epp"},
        }
        await op.cluster.create(DESTINATION_RULE, rule)

        # when the graph reconciles
        op.nudge()
        await op.settle()

        # then the rule is gone, with an event saying why
        with pytest.raises(NotFound):
            await op.cluster.get(DESTINATION_RULE.key(NS, "demo-epp"))
        assert ("Normal", "DeleteDestinationRule") in {(e[0], e[1]) for e in await op.events()}

        # when someone else's rule of that name appears and the graph reconciles again
        await op.cluster.create(DESTINATION_RULE, {**rule, "metadata": {"name": "demo-epp", "namespace": NS}})
        op.nudge()
        await op.settle()

        # then it is left alone
        assert (await op.cluster.get(DESTINATION_RULE.key(NS, "demo-epp")))["spec"] == {"host": "demo-epp"}


async def test_a_failing_pool_write_fails_the_reconcile_naming_the_epp_step_and_retries() -> None:
    async with running_operator(before=epp_cluster_role) as op:
        # given the InferencePool's creation refused once by the API server
        failing = op.operator_client.faults.fail(
            ServerError("etcd is unavailable"), verb="create", resource=INFERENCE_POOL, times=1
        )

        # when a graph with an endpoint picker is applied
        await op.apply(with_epp())

        # then the reconcile failed naming the EPP step, and no workload was written before it
        assert failing.fired == 1
        assert message(await op.dgd()).startswith("failed to reconcile EPP resources: ")
        assert "create PodCliqueSet" not in op.writes

        # when the retry comes, then the pool and the workload are made
        await op.advance(2.0)
        assert (await op.cluster.get(INFERENCE_POOL.key(NS, "demo-pool")))["metadata"]["name"] == "demo-pool"
        assert op.writes["create PodCliqueSet"] == 1


async def test_with_the_istio_gate_on_an_edited_destination_rule_is_put_back_when_its_watch_reports_it() -> (
    None
):
    config = OperatorConfig(service_mesh=ISTIO)
    async with running_operator(
        before=epp_cluster_role, config=config, gates=Gates(grove=True, istio=True)
    ) as op:
        # given a graph with an endpoint picker in the mesh, its DestinationRule made
        await op.apply(with_epp())
        key = DESTINATION_RULE.key(NS, "demo-epp")
        host = (await op.cluster.get(key))["spec"]["host"]

        # when someone points the rule elsewhere (and nothing else happens to the graph)
        await op.cluster.patch(key, {"spec": {"host": "elsewhere"}})
        await op.settle()

        # then the operator, nudged by the rule's watch (dgd-domain §16), puts it back
        assert (await op.cluster.get(key))["spec"]["host"] == host
