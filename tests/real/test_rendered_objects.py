"""Everything the operator renders for upstream's graphs is what the real API server stores: every
object of every upstream DGD, on each pathway that takes it, is created as a server-side dry run with
strict field validation, so a field the real schema (ours, Grove's, Istio's, the InferencePool's, core
Kubernetes') does not have fails here instead of being dropped in a user's cluster. The same for what
``dgd-operator convert`` writes of upstream's v1alpha1 DGDs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.manifests import dump_manifests
from dgd.domain.render.errors import RenderError
from dgd.domain.render.offline import InvalidInput, Pathway, prepare, render, render_dcd_objects
from dgd.messages.config import CheckpointConfig, OperatorConfig
from dgd.messages.dgd import API_VERSION_V1ALPHA1
from tests.conftest import kubectl
from tests.real.harness import RealCluster
from tests.unit.domain.test_manifests import GO_NOT_STRINGS, PLAIN
from tests.upstream import UPSTREAM, dgd_documents, load_documents

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

DOCUMENTS = list(dgd_documents())
ALPHA = [(file, index, doc) for file, index, doc in DOCUMENTS if doc["apiVersion"] == API_VERSION_V1ALPHA1]
PATHWAYS: tuple[Pathway, ...] = ("grove", "component")
#: As the tier's daemons run: checkpoints on, for upstream's snapshot-restore example.
CONFIG = OperatorConfig(checkpoint=CheckpointConfig(enabled=True))


def bindings(file: str) -> dict[str, Any]:
    """The ClusterTopologyBindings beside a DGD in its file, by name (``dgd-operator render`` takes them)."""
    return {
        doc["metadata"]["name"]: doc
        for doc in load_documents(UPSTREAM / file)
        if isinstance(doc, dict) and doc.get("kind") == "ClusterTopologyBinding"
    }


@pytest.mark.parametrize(("file", "index", "document"), DOCUMENTS, ids=[f"{f}#{i}" for f, i, _ in DOCUMENTS])
async def test_every_rendered_object_passes_strict_validation_on_the_real_server(
    real: RealCluster, file: str, index: int, document: dict[str, Any]
) -> None:
    # given the objects of an upstream DGD on each pathway that renders it (one may refuse: GMS
    # across pods needs Grove, for example; that refusal is tested elsewhere)
    rendered, refused = [], []
    for pathway in PATHWAYS:
        try:
            dgd = prepare(document, namespace=real.namespace, config=CONFIG, pathway=pathway)
            rendered += render(dgd, config=CONFIG, bindings=bindings(file))
        except (InvalidInput, RenderError) as refusal:
            refused.append(f"{pathway}: {refusal}")
    assert rendered, f"no pathway renders {file}#{index}: {refused}"

    # when they are created as a dry run with strict field validation
    # then the server takes every object with no field unknown to it
    strictly_accepted(real, rendered)


@pytest.mark.parametrize(("file", "index", "document"), ALPHA, ids=[f"{f}#{i}" for f, i, _ in ALPHA])
async def test_every_converted_v1alpha1_dgd_passes_strict_validation_on_the_real_server(
    real: RealCluster, file: str, index: int, document: dict[str, Any]
) -> None:
    # given what `dgd-operator convert` writes of an upstream v1alpha1 DGD
    converted = dgd_to_v1beta1(document)

    # when it is created as a dry run with strict field validation
    # then the server takes it with no field unknown to it
    strictly_accepted(real, [converted])


async def test_strings_go_reads_as_other_types_reach_the_server_as_written(real: RealCluster) -> None:
    # given a ConfigMap whose values are the strings Go's YAML would read as booleans or numbers unquoted
    data = {f"k{index}": text for index, text in enumerate([*GO_NOT_STRINGS, *PLAIN])}
    document = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "strings"}, "data": data}

    # when it is written as the CLI writes manifests and created by kubectl as a dry run
    created = kubectl(
        real.plane, "create", "--dry-run=server", "-o", "json", "-n", real.namespace, "-f", "-",
        input=dump_manifests([document]).encode(),
    )  # fmt: skip

    # then the server holds every value as the same string
    assert created.returncode == 0, created.stderr.decode()
    assert json.loads(created.stdout)["data"] == data


def strictly_accepted(real: RealCluster, documents: list[Any]) -> None:
    """``documents``, written as the CLI writes them, pass ``kubectl create --dry-run=server
    --validate=strict`` in the test's namespace without an error or a warning."""
    created = kubectl(
        real.plane,
        "create",
        "--dry-run=server",
        "--validate=strict",
        "-n",
        real.namespace,
        "-f",
        "-",
        input=dump_manifests(documents).encode(),
    )
    assert created.returncode == 0, created.stderr.decode()
    assert b"Warning" not in created.stderr, created.stderr.decode()


@pytest.mark.parametrize(("file", "index", "document"), DOCUMENTS, ids=[f"{f}#{i}" for f, i, _ in DOCUMENTS])
async def test_every_dcd_child_passes_strict_validation_on_the_real_server(
    real: RealCluster, file: str, index: int, document: dict[str, Any]
) -> None:
    # given what the DCD controller renders for each DCD of an upstream DGD on the Component pathway
    # (the LeaderWorkerSet gate on, as on this tier; a DGD or DCD the operator refuses has no children)
    try:
        dgd = prepare(document, namespace=real.namespace, config=CONFIG, pathway="component")
        dcds = [o for o in render(dgd, config=CONFIG) if o["kind"] == "DynamoComponentDeployment"]
    except (InvalidInput, RenderError) as refusal:
        pytest.skip(f"the Component pathway refuses {file}#{index}: {refusal}")
    children = []
    for dcd in dcds:
        try:
            children += render_dcd_objects(dcd, config=CONFIG, owner=dgd)
        except RenderError as refusal:
            print(f"{dcd['metadata']['name']} refused: {refusal}")
    assert children or not dcds, f"no DCD of {file}#{index} renders"

    # when they are created as a dry run with strict field validation
    # then the server takes every Deployment, LeaderWorkerSet, Service and Ingress with no unknown field
    strictly_accepted(real, children)
