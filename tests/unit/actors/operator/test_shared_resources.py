"""The shared-resources child: what must exist before a DGD's pods, and what it does when it cannot."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from dgd.cluster.resources import CLUSTER_ROLE, PVC, SECRET
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from tests.unit.actors.operator.harness import NS, manifest, running_operator

pytestmark = pytest.mark.anyio


def multinode() -> dict[str, Any]:
    document = manifest()
    document["spec"]["components"][1]["multinode"] = {"nodeCount": 2}
    return document


async def test_a_missing_planner_cluster_role_fails_the_reconcile_until_it_exists() -> None:
    async with running_operator(cluster_role=False) as op:
        # given a cluster whose planner ClusterRole was never installed
        # when a DGD is applied
        await op.apply(manifest())

        # then it fails, saying what to install, and no workload was created
        dgd = await op.dgd()
        assert dgd.status is not None and dgd.status.conditions is not None
        assert dgd.status.conditions[0].message == (
            'failed to ensure planner RBAC: cluster role "dynamo-operator-planner" does not exist: '
            "ensure it is created by Helm before deploying components"
        )
        assert await op.events() == []

        # when the ClusterRole is installed, then the retry converges
        role = {"metadata": {"name": "dynamo-operator-planner"}, "apiVersion": "rbac.authorization.k8s.io/v1"}
        await op.cluster.create(CLUSTER_ROLE, {**role, "kind": "ClusterRole"})
        await op.advance(2.0)
        assert (await op.dgd()).status.state == "pending"  # type: ignore[union-attr]


async def test_a_multinode_graph_gets_the_wait_leader_script_and_an_mpi_key_generated_once() -> None:
    async with running_operator(mpi_secret=False) as op:
        # given a cluster without the MPI SSH key Secret
        # when a multinode graph is applied
        await op.apply(multinode())

        # then a key pair was generated in the operator's namespace and replicated into the DGD's
        source = await op.cluster.get(SECRET.key("dynamo-system", "mpi-run-ssh-secret"))
        replica = await op.cluster.get(SECRET.key(NS, "mpi-run-ssh-secret"))
        assert base64.b64decode(source["data"]["private.key.pub"]) == b"ssh-rsa fake\n"
        assert replica["data"] == source["data"]
        assert replica["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "dynamo-operator"}
        assert "ownerReferences" not in replica["metadata"]
        # and the wait-for-leader ConfigMap is there, with their events in order
        reasons = [e[2] for e in await op.events()]
        assert reasons[5:8] == [
            "Created ConfigMap team-a/demo-wait-leader-script",
            "Created Secret dynamo-system/mpi-run-ssh-secret",
            "Created Secret team-a/mpi-run-ssh-secret",
        ]


async def test_legacy_claims_marked_create_are_created_and_owned_by_the_dgd() -> None:
    async with running_operator() as op:
        # given a v1alpha1 DGD with a top-level claim to create
        alpha = {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "demo", "namespace": NS},
            "spec": {
                "backendFramework": "vllm",
                "pvcs": [
                    {
                        "name": "model-cache",
                        "create": True,
                        "size": "50Gi",
                        "volumeAccessMode": "ReadWriteMany",
                    }
                ],
                "services": {
                    "Frontend": {
                        "componentType": "frontend",
                        "extraPodSpec": {
                            "mainContainer": {"image": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.5.0"}
                        },
                    }
                },
            },
        }

        # when it is applied (converted, as the API server's conversion webhook would)
        dgd = await op.apply(dgd_to_v1beta1(alpha))

        # then the claim exists, as asked, owned by the DGD
        claim = await op.cluster.get(PVC.key(NS, "model-cache"))
        assert claim["spec"] == {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "50Gi"}},
            "volumeMode": "Filesystem",
        }
        assert [o["uid"] for o in claim["metadata"]["ownerReferences"]] == [dgd.metadata.uid]
