"""Pod templates have Kubernetes' own schema on a real API server: the committed schema is what the
pinned release serves, ``kubectl explain`` walks into containers, and ``validate``, the simulated
cluster and the real API server refuse the same typos and bad quantities."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from dgd.cluster.errors import Invalid
from dgd.cluster.resources import DGD
from dgd.domain.admission.documents import admit_document
from dgd.sim.cluster import SimulatedCluster
from dgd.sim.world.settings import WorldSettings
from tests.conftest import kubectl, unavailable
from tests.real.controlplane import ControlPlane
from tests.real.harness import RealCluster
from tests.real.pod_template_schema import TARGET, fetch_openapi, render, structural_pod_template
from tests.unit.sim.test_schema import CORPUS, POD_TEMPLATE_CASES


def test_the_committed_pod_template_schema_is_the_one_the_pinned_server_serves(
    control_plane: ControlPlane,
) -> None:
    # given the running kube-apiserver's OpenAPI v3 for the core group
    binary = control_plane.binaries.kubectl
    if binary is None:
        unavailable("no kubectl: build it with `make kube`")
    assert binary is not None
    openapi = fetch_openapi(str(binary), str(control_plane.kubeconfig))

    # when the pod template schema is regenerated from it
    regenerated = render(structural_pod_template(openapi))

    # then it is the committed file (else: python -m tests.real.pod_template_schema, then make crds)
    assert regenerated == TARGET.read_text(encoding="utf-8")


def test_kubectl_explain_walks_into_a_components_pod_template_containers(control_plane: ControlPlane) -> None:
    # when kubectl explains a container's image below a DGD component's pod template
    explained = kubectl(control_plane, "explain", "dgd.spec.components.podTemplate.spec.containers.image")

    # then it answers with Kubernetes' own description of the field
    assert explained.returncode == 0, explained.stderr.decode()
    text = explained.stdout.decode()
    assert "FIELD: image <string>" in text
    assert "Container image name." in text


def _server_path(path: str) -> str:
    """Our path as the API server spells it: a map key after a dot (``limits.nvidia.com/gpu``)."""
    return re.sub(r"\[([^\]0-9][^\]]*)\]", r".\1", path)


async def _simulated_refusal(document: dict[str, Any]) -> Invalid:
    async with SimulatedCluster(WorldSettings()) as sim:
        with pytest.raises(Invalid) as refused:
            await sim.cluster.create(DGD.as_raw(), {**document, "metadata": {**document["metadata"]}})
    return refused.value


@pytest.mark.anyio
@pytest.mark.parametrize("case", POD_TEMPLATE_CASES)
async def test_validate_the_simulated_cluster_and_the_api_server_refuse_the_same_pod_template(
    real: RealCluster, case: str
) -> None:
    # given a DGD whose pod template breaks Kubernetes' PodTemplateSpec schema
    document: dict[str, Any] = yaml.safe_load((CORPUS / f"{case}.yaml").read_text(encoding="utf-8"))
    document["metadata"]["namespace"] = real.namespace

    # when validate checks it, the simulated cluster and the real API server (strict dry run) get it
    (reported,) = admit_document(document).errors
    simulated = await _simulated_refusal(document)
    served = kubectl(
        real.plane, "create", "--dry-run=server", "--validate=strict", "-f", "-",
        input=yaml.safe_dump(document).encode(),
    )  # fmt: skip

    # then all three refuse it at the same field: validate and the simulation in the same words
    assert [(cause.field, cause.message) for cause in simulated.causes] == [(reported.path, reported.message)]
    assert served.returncode != 0
    refusal = served.stderr.decode()
    assert _server_path(reported.path) in refusal, refusal
    # and the value the real server refuses is the one validate names
    bad = reported.message.split()[0].strip('"') if "quantity" in reported.message else None
    assert bad is None or f'"{bad}"' in refusal, refusal
