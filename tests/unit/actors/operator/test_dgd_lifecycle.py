"""The DGD actor's outer reconcile: provider, refusals, deletion, crashes, and children it no longer wants."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec
import pytest

from dgd.actors.tree import DGDS
from dgd.cluster.errors import Forbidden, NotFound
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import DCD, DGD, PCLQ, PCS, ROLE, SERVICE, SERVICE_ACCOUNT
from dgd.domain.gates import Gates
from dgd.messages.dgd import DynamoGraphDeployment
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio

R = TypeVar("R")


async def ready_reason(op: object, name: str = "demo") -> tuple[str, str, str, str]:
    dgd = await op.dgd(name)  # type: ignore[attr-defined]
    assert dgd.status is not None and dgd.status.conditions is not None
    ready = dgd.status.conditions[0]
    return dgd.status.state, ready.status, ready.reason, ready.message


async def test_an_unsupported_provider_value_fails_terminally_without_other_writes() -> None:
    async with running_operator() as op:
        # given a DGD whose provider annotation names a provider that does not exist
        op.writes.clear()
        await op.apply(manifest(annotations={"nvidia.com/workload-provider": "lws"}))

        # when time passes (no retry is due for a terminal failure)
        await op.advance(600)

        # then it failed with unsupported_workload_provider, once, and nothing else was written
        assert await ready_reason(op) == (
            "failed",
            "False",
            "unsupported_workload_provider",
            'unsupported workload provider "lws" in annotation nvidia.com/workload-provider: it must '
            'be "grove" '
            'or "component"; the provider cannot change after creation, so recreate the DGD to '
            "choose another",
        )
        assert dict(op.writes) == {"patch DynamoGraphDeployment/status": 1}


async def test_a_dgd_that_opts_out_of_grove_is_on_the_component_pathway() -> None:
    async with running_operator() as op:
        # given a DGD that opts out of Grove at creation
        await op.apply(manifest(annotations={"nvidia.com/enable-grove": "false"}))

        # then its provider is recorded as component: it gets one DCD per component and no PodCliqueSet
        dgd = await op.dgd()
        assert (dgd.metadata.annotations or {})["nvidia.com/workload-provider"] == "component"
        dcds = (await op.cluster.list(DCD, namespace=NS)).items
        assert sorted(d.spec.name or "" for d in dcds) == sorted(c.name for c in dgd.spec.components or [])
        assert (await op.cluster.list(PCS, namespace=NS)).items == []


async def test_a_grove_dgd_fails_terminally_when_the_grove_gate_is_off() -> None:
    async with running_operator(gates=Gates(grove=False)) as op:
        # given an operator without Grove, and a DGD created for Grove
        await op.apply(manifest(annotations={"nvidia.com/workload-provider": "grove"}))

        # then the Grove program refuses it terminally
        assert await ready_reason(op) == (
            "failed",
            "False",
            "selected_workload_provider_unavailable",
            'selected workload provider "grove" is unavailable because Grove is disabled',
        )


async def test_the_gpu_memory_service_fails_the_shared_resources_while_dra_is_off() -> None:
    async with running_operator() as op:
        # given an operator without DRA, and a DGD whose worker asks for the GPU memory service
        document = manifest()
        document["spec"]["components"][1]["experimental"] = {"gpuMemoryService": {}}
        op.writes.clear()

        # when it is applied
        await op.apply(document)

        # then it failed naming the component and what DRA it needs (dgd-domain §7 row 4), before any
        # GPU-using child was written
        state, status, reason, message = await ready_reason(op)
        assert (state, status, reason) == ("failed", "False", "failed_to_reconcile_the_resources")
        assert message == (
            'failed to reconcile GMS ResourceClaimTemplates: component "Worker" uses the GPU memory '
            "service or inter-pod failover, which requires DRA (resource.k8s.io/v1, Kubernetes >= 1.34): "
            "the operator has DRA disabled (dra.enabled, or the API is not served)"
        )
        assert "create PodCliqueSet" not in op.writes


async def test_deleting_a_dgd_runs_its_finalizer_and_garbage_collection_removes_its_children() -> None:
    async with running_operator() as op:
        # given a successful DGD with its children
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()

        # when the user deletes it
        await op.cluster.delete(DGD.key(NS, "demo"))
        await op.settle()

        # then the finalizer was removed, the DGD is gone, and so is everything it controlled
        with pytest.raises(NotFound):
            await op.dgd()
        assert (await op.cluster.list(PCS, namespace=NS)).items == []
        assert (await op.cluster.list(PCLQ, namespace=NS)).items == []
        assert (await op.cluster.list(SERVICE, namespace=NS)).items == []
        assert (await op.cluster.list(ROLE, namespace=NS)).items == []
        # but the namespace's planner ServiceAccount stays: no DGD owns it
        accounts = [
            a["metadata"]["name"] for a in (await op.cluster.list(SERVICE_ACCOUNT, namespace=NS)).items
        ]
        assert accounts == ["planner-serviceaccount"]
        # and its actor was stopped
        assert op.system.lookup(f"{DGDS}/{NS}/demo") is None


class CrashOnce(ClusterProxy):
    """The operator's client, but the first ``verb`` of ``kind`` raises a bug (not an API error) in
    whichever actor sends it: that actor crashes."""

    def __init__(self, verb: str, kind: str) -> None:
        self.verb, self.kind, self.crashed = verb, kind, False

    def __call__(self, inner: Cluster) -> Cluster:
        ClusterProxy.__init__(self, inner)
        return self

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        if not self.crashed and (call.verb, call.resource.kind) == (self.verb, self.kind):
            self.crashed = True
            raise RuntimeError("a bug in the step that writes this")
        return await send()


async def test_a_crashed_child_fails_one_reconcile_and_the_retry_converges() -> None:
    # given a new DGD whose shared-resources child crashes on its first write of a Role
    crash = CrashOnce("create", "Role")
    async with running_operator(proxy=crash) as op:
        await op.apply(manifest())

        # then that reconcile failed, and the status says so in words (no actor path: issue 17)
        assert crash.crashed
        assert await ready_reason(op) == (
            "failed",
            "False",
            "failed_to_reconcile_the_resources",
            "an internal step of the operator did not complete; it is retried",
        )

        # when the child's restart and the retry's backoff have passed, and Grove did its part
        await op.advance(2.0)
        await op.grove_accepts()
        await op.grove_realizes()

        # then the DGD converged, the Role written by the restarted child
        assert (await ready_reason(op))[:3] == ("successful", "True", "all_resources_are_ready")
        assert (await op.cluster.list(ROLE, namespace=NS)).items


async def test_a_dgds_children_run_only_while_a_reconcile_needs_them() -> None:
    async with running_operator() as op:
        # given a successful DGD on Grove
        await op.apply(manifest())
        await op.grove_accepts()
        await op.grove_realizes()
        assert (await ready_reason(op))[0] == "successful"
        # then, its reconciles done, its actor holds no children (they start again when asked for)
        assert not op.system.lookup(f"{DGDS}/{NS}/demo/shared-resources")
        assert op.system.lookup(f"{DGDS}/{NS}/demo") is not None
        # and a later change is reconciled as before
        await op.cluster.patch(DGD.key(NS, "demo"), {"metadata": {"labels": {"team": "a"}}})
        op.nudge()
        await op.settle()
        assert (await ready_reason(op))[0] == "successful"


async def test_the_services_of_a_removed_component_are_deleted() -> None:
    async with running_operator() as op:
        # given a DGD with a frontend and a worker, each with its Service
        await op.apply(manifest())
        assert sorted(
            s["metadata"]["name"] for s in (await op.cluster.list(SERVICE, namespace=NS)).items
        ) == [
            "demo-frontend",
            "demo-worker",
        ]

        # when the worker is removed from the spec (no admission webhook stopped it)
        dgd = await op.dgd()
        spec = msgspec.structs.replace(
            dgd.spec, components=[c for c in dgd.spec.components or [] if c.name != "Worker"]
        )
        await op.cluster.replace(DGD, msgspec.structs.replace(dgd, spec=spec))
        await op.settle()

        # then its Service is deleted, with an event saying why
        services = [s["metadata"]["name"] for s in (await op.cluster.list(SERVICE, namespace=NS)).items]
        assert services == ["demo-frontend"]
        assert (await op.events())[-1] == (
            "Normal",
            "DeleteService",
            "Deleted Service team-a/demo-worker: the DGD no longer renders it",
        )
        cliques = [c.name for c in (await op.pcs()).spec.template.cliques]
        assert cliques == ["frontend"]


async def test_a_drifted_label_the_operator_sets_is_repaired_and_other_labels_are_left_alone() -> None:
    async with running_operator() as op:
        # given a DGD whose worker Service carries the discovery labels
        await op.apply(manifest())
        key = SERVICE.key(NS, "demo-worker")
        service = await op.cluster.get(key)

        # when someone changes one of those labels and adds one of their own
        labels = {
            **service["metadata"]["labels"],
            "nvidia.com/dynamo-discovery-backend": "etcd",
            "team": "infra",
        }
        await op.cluster.patch(key, {"metadata": {"labels": labels}})
        await op.settle()

        # then the operator's label is back and theirs is kept
        repaired = (await op.cluster.get(key))["metadata"]["labels"]
        assert repaired["nvidia.com/dynamo-discovery-backend"] == "kubernetes"
        assert repaired["team"] == "infra"
        assert (await op.events())[-1] == (
            "Normal",
            "UpdateService",
            "Updated Service team-a/demo-worker (repaired labels)",
        )


async def test_a_dgd_without_provider_annotation_adopts_the_provider_of_the_children_it_controls() -> None:
    # given a DGD that opted out of Grove but already controls a PodCliqueSet (a Go-operator leftover)
    async def before(cluster: MemoryCluster) -> None:
        document = manifest(annotations={"nvidia.com/enable-grove": "false"})
        dgd = await cluster.create(DGD, msgspec.convert(document, DynamoGraphDeployment))
        owner = {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "name": "demo",
            "uid": dgd.metadata.uid,
            "controller": True,
        }
        await cluster.create(
            PCS.as_raw(),
            {
                "apiVersion": "grove.io/v1alpha1",
                "kind": "PodCliqueSet",
                "metadata": {"name": "demo", "namespace": NS, "ownerReferences": [owner]},
                "spec": {"replicas": 1, "template": {"cliques": []}},
            },
        )

    # when the operator starts
    async with running_operator(before=before) as op:
        # then the provider is adopted from the PodCliqueSet, not chosen from the annotation
        dgd = await op.dgd()
        assert (dgd.metadata.annotations or {})["nvidia.com/workload-provider"] == "grove"
        assert [c.name for c in (await op.pcs()).spec.template.cliques] == ["frontend", "worker"]


async def test_a_refused_child_write_records_a_warning_fails_the_reconcile_and_the_retry_converges() -> None:
    async with running_operator() as op:
        # given an API server that refuses the first PodCliqueSet create
        rule = op.operator_client.faults.fail(
            Forbidden("quota exceeded"), verb="create", resource=PCS, times=1
        )

        # when a DGD is applied
        await op.apply(manifest())

        # then the reconcile failed with the wrapped reason, and the refusal has its Warning
        assert rule.fired == 1
        assert await ready_reason(op) == (
            "failed",
            "False",
            "failed_to_reconcile_the_resources",
            "failed to reconcile Grove workloads: failed to reconcile the Grove PodCliqueSet: "
            "Forbidden (403): quota exceeded",
        )
        assert (await op.events())[-1] == (
            "Warning",
            "CreatePodCliqueSet",
            "Failed to create PodCliqueSet team-a/demo: Forbidden (403): quota exceeded",
        )

        # when the retry's backoff has passed, then the PodCliqueSet exists and the DGD waits for Grove
        await op.advance(1.0)
        assert (await ready_reason(op))[:3] == ("pending", "False", "some_resources_are_not_ready")
        assert (await op.pcs()).metadata.name == "demo"
