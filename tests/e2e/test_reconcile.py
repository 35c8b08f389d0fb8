"""The real daemon process reconciles DGDs through the HTTP facade, and survives a SIGKILL mid-reconcile."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from dgd.cluster.resources import NAMESPACE, SERVICE
from tests.e2e.eventually import eventually
from tests.e2e.harness import DGDS, NS, ServedCluster, agg, component_disagg
from tests.e2e.operators import Operators
from tests.e2e.recorder import Recorder

pytestmark = pytest.mark.anyio

#: What the operator creates for examples/agg.yaml on the Grove pathway: the PodCliqueSet, the
#: worker's scaling adapter, a Service per component, and the discovery ServiceAccount, Role, RoleBinding.
AGG_CHILDREN = Counter(
    {"PodCliqueSet": 1, "DynamoGraphDeploymentScalingAdapter": 1, "Service": 2}
    | {"ServiceAccount": 1, "Role": 1, "RoleBinding": 1}
)
#: What it creates for upstream's disaggregated vLLM graph on the Component pathway: a DCD per
#: component (the DCD controller makes their pods and Services) and the discovery RBAC.
DISAGG_CHILDREN = Counter({"DynamoComponentDeployment": 3, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1})
#: What the DCD controller makes of the disaggregated graph's three DCDs: a Deployment and a Service each.
DISAGG_DCD_CHILDREN = Counter({"Deployment": 3, "Service": 3})


async def test_the_daemon_takes_examples_on_both_pathways_to_successful(
    served: ServedCluster, operators: Operators
) -> None:
    # given a daemon running against the served cluster
    operator = await operators.start("only")

    # when the aggregated example (Grove) and upstream's disaggregated graph with Grove off (DCDs) are applied
    await served.apply(agg("demo-agg"))
    await served.apply(component_disagg("vllm-disagg"))

    # then both reach successful, each through its own pathway, reconciled by this daemon
    await eventually(
        lambda: served.converged("demo-agg", "vllm-disagg"), timeout=60, what="both DGDs are successful"
    )
    assert await served.children("demo-agg") == AGG_CHILDREN
    assert await served.children("vllm-disagg") == DISAGG_CHILDREN
    assert await served.holder() == "only"
    assert await served.reporters("demo-agg") == await served.reporters("vllm-disagg") == {"only"}
    assert await operator.dgd_reconciles() >= 2


async def test_a_daemon_killed_mid_reconcile_restarts_and_converges_without_duplicate_children(
    served: ServedCluster, operators: Operators, recorder: Recorder
) -> None:
    # given a daemon working on six freshly applied DGDs, three per pathway
    first = await operators.start("first")
    aggs = [f"agg-{index}" for index in range(3)]
    disaggs = [f"disagg-{index}" for index in range(3)]
    for name in aggs:
        await served.apply(agg(name))
    for name in disaggs:
        await served.apply(component_disagg(name))
    per_disagg = sum(DISAGG_CHILDREN.values()) + sum(DISAGG_DCD_CHILDREN.values())
    expected = sum(AGG_CHILDREN.values()) * len(aggs) + per_disagg * len(disaggs)

    # when it is SIGKILLed once it has created about half of the children, then a new daemon is started
    await recorder.wait_created(expected // 2, timeout=60)
    first.kill(signal.SIGKILL)
    assert await first.exit_code(timeout=10) == -signal.SIGKILL
    created_before_the_kill = recorder.created
    await operators.start("second")

    # then it was killed mid-reconcile, and every DGD converges with exactly its children, each
    # created once: nothing was deleted or created again under the same name
    assert expected // 2 <= created_before_the_kill < expected
    await eventually(
        lambda: served.converged(*aggs, *disaggs),
        timeout=60,
        what="every DGD is successful after the restart",
    )
    for name in aggs:
        assert await served.children(name) == AGG_CHILDREN, name
    for name in disaggs:
        assert await served.children(name) == DISAGG_CHILDREN, name
    assert recorder.recreated() == {}
    assert recorder.deleted == []
    assert recorder.created == expected + 2  # and the namespace's planner ServiceAccount and RoleBinding
    assert await served.holder() == "second"


async def test_a_daemon_restricted_to_two_namespaces_reconciles_only_there(
    served: ServedCluster, operators: Operators
) -> None:
    # given namespaces team-b and team-c besides default, with examples/agg.yaml applied in all three
    for namespace in ("team-b", "team-c"):
        await served.observer.create(
            NAMESPACE.as_raw(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
    for namespace in (NS, "team-b", "team-c"):
        manifest = agg("demo")
        manifest["metadata"]["namespace"] = namespace
        await served.apply(manifest)

    # when a daemon runs restricted to default and team-b
    await operators.start("restricted", flags=("--namespace", NS, "--namespace", "team-b"))

    # then the DGDs of both reach successful, and the one in team-c is never touched
    async def state(namespace: str) -> str | None:
        dgd = await served.observer.get(DGDS.key(namespace, "demo"))
        return (dgd.get("status") or {}).get("state")

    async def both_successful() -> bool:
        return await state(NS) == await state("team-b") == "successful"

    await eventually(both_successful, timeout=60, what="the DGDs in default and team-b are successful")
    untouched = await served.observer.get(DGDS.key("team-c", "demo"))
    assert "status" not in untouched and not untouched["metadata"].get("finalizers")
    children = await served.observer.list(SERVICE.as_raw(), namespace="team-c")
    assert children.items == []
