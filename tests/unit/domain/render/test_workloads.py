"""One render pipeline: the operator's programs and ``dgd-operator render`` give the same objects.

The operator's side is driven as a program drives it on the first reconcile of a new DGD: the DGD
as admission created it, defaulted in memory, rendered by ``dgd.domain.render.workloads`` with
nothing observed (no PodCliqueSet or DCD yet, no checkpoint resolved, no restart, no rollout) and
the worker-hash plan of a DGD that records none. The other side is the ``render`` command's output.
Both run with one configuration whose gates are explicit, as the operator's effective one is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
import yaml

from dgd.cli import main
from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.pod_merge import JSON
from dgd.domain.preflight import MULTINODE_FIELD, unsupported
from dgd.domain.render.dcd import render_dcds, worker_workload_annotations, workload_annotations
from dgd.domain.render.errors import RenderError
from dgd.domain.render.offline import InvalidInput, prepare
from dgd.domain.render.pcs import graph_discovery_backend
from dgd.domain.render.stable_resources import render_stable_resources
from dgd.domain.render.workloads import dcd_names, desired_dcds, desired_pod_clique_set
from dgd.domain.worker_generation import plan_unmanaged
from dgd.domain.worker_hash import PLACEHOLDER, worker_hash
from dgd.messages.component import WORKER_TYPES
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment
from tests.upstream import dgd_documents

NAMESPACE = "demo"
CONFIG_YAML = "orchestrators:\n  grove:\n    enabled: true\n  lws:\n    enabled: true\n"
CONFIG = msgspec.convert(yaml.safe_load(CONFIG_YAML), OperatorConfig)
Pathway = Literal["grove", "component"]
#: The kinds a workload program writes itself (the endpoint picker's objects are shared resources).
PROGRAM_KINDS = ("PodCliqueSet", "DynamoComponentDeployment", "Service", "Ingress", "VirtualService")
UPSTREAM = list(dgd_documents())
IDS = [f"{path}#{index}" for path, index, _ in UPSTREAM]


def _first_reconcile(document: dict[str, Any], pathway: Pathway) -> list[JSON] | None:
    """What a program syncs on the first reconcile of ``document`` created on ``pathway`` (``None``:
    admission refuses it, or the program fails before writing a workload)."""
    try:
        created = prepare(document, namespace=NAMESPACE, config=CONFIG, pathway=pathway)
    except InvalidInput:
        return None
    dgd = default_in_memory(created, grove_enabled=pathway == "grove")
    # The program's refusals; on the Component pathway the missing multinode orchestrator is its step 3.
    if [p for p in unsupported(dgd, CONFIG) if pathway == "grove" or not p.path.endswith(MULTINODE_FIELD)]:
        return None
    try:
        return _grove(created, dgd) if pathway == "grove" else _component(dgd)
    except RenderError:
        return None


def _grove(created: DynamoGraphDeployment, dgd: DynamoGraphDeployment) -> list[JSON]:
    desired_hash = worker_hash(dgd)
    plan = plan_unmanaged(dict(created.metadata.annotations or {}), desired_hash, running=False)
    pcs = desired_pod_clique_set(
        dgd,
        config=CONFIG,
        existing=None,
        checkpoints={},
        worker_generation_changed=plan.changed,
        restart_at={},
        topology_domains=(),
        claim_templates={},
        desired_hash=desired_hash,
    )
    stable = render_stable_resources(
        dgd, config=CONFIG, discovery_backend=graph_discovery_backend(dgd, CONFIG)
    )
    return [pcs, *stable]


def _component(dgd: DynamoGraphDeployment) -> list[JSON]:
    return desired_dcds(
        dgd, worker_hash=worker_hash(dgd), checkpoints={}, replicas={}, restart_at={}, live={}
    )


def _render_command(
    tmp_path: Path, document: dict[str, Any], pathway: Pathway, capsys: pytest.CaptureFixture[str]
) -> list[JSON] | None:
    """The objects ``dgd-operator render`` prints for ``document`` (``None``: it refuses it)."""
    manifest, config = tmp_path / "dgd.yaml", tmp_path / "config.yaml"
    manifest.write_text(yaml.safe_dump(document), encoding="utf-8")
    config.write_text(CONFIG_YAML, encoding="utf-8")
    code = main(["render", str(manifest), "-n", NAMESPACE, "--pathway", pathway, "--config", str(config)])
    out = capsys.readouterr().out
    if code != 0:
        return None
    return [doc for doc in yaml.safe_load_all(out) if doc["kind"] in PROGRAM_KINDS]


@pytest.mark.parametrize("pathway", ["grove", "component"])
@pytest.mark.parametrize(("path", "index", "document"), UPSTREAM, ids=IDS)
def test_the_operator_and_the_render_command_give_the_same_objects_for_every_upstream_dgd(
    path: str,
    index: int,
    document: dict[str, Any],
    pathway: Pathway,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # given an upstream DGD created on a pathway

    # when its first reconcile renders it, and when `dgd-operator render` prints it
    operator = _first_reconcile(document, pathway)
    printed = _render_command(tmp_path, document, pathway, capsys)

    # then both give the same objects, or both refuse it
    assert printed == operator


@pytest.mark.parametrize(("path", "index", "document"), UPSTREAM, ids=IDS)
def test_worker_workload_annotations_are_those_of_the_rendered_worker_dcds(
    path: str, index: int, document: dict[str, Any]
) -> None:
    # given an upstream DGD the Component pathway can render
    try:
        created = prepare(document, namespace=NAMESPACE, config=CONFIG, pathway="component")
        dgd = default_in_memory(created, grove_enabled=False)
        dcds = render_dcds(dgd, worker_hash=PLACEHOLDER)
    except (InvalidInput, RenderError):
        pytest.skip("not rendered on the Component pathway")

    # when the rollout asks for each worker's workload annotations without rendering DCDs
    annotations = worker_workload_annotations(dgd)

    # then they are those of each worker DCD, and there is one entry per worker component
    workers = {c.name for c in dgd.spec.components or [] if c.type in WORKER_TYPES}
    assert annotations == {
        dcd.spec.name: workload_annotations(dcd) for dcd in dcds if dcd.spec.name in workers
    }


def test_dcd_names_are_the_names_of_the_desired_dcds() -> None:
    # given an upstream DGD with several components on the Component pathway
    _, _, document = next(u for u in UPSTREAM if len(_first_reconcile(u[2], "component") or []) > 1)
    dgd = default_in_memory(
        prepare(document, namespace=NAMESPACE, config=CONFIG, pathway="component"), grove_enabled=False
    )

    # when the names are asked before rendering, and the DCDs are rendered
    names = dcd_names(dgd, "abcd1234")
    bodies = desired_dcds(dgd, worker_hash="abcd1234", checkpoints={})

    # then they are the rendered DCDs' names, in order
    assert names == [body["metadata"]["name"] for body in bodies]


def test_a_live_dcd_keeps_its_backend_framework() -> None:
    # given a DCD of an upstream DGD that exists with another backend framework
    _, _, document = next(u for u in UPSTREAM if _first_reconcile(u[2], "component"))
    dgd = default_in_memory(
        prepare(document, namespace=NAMESPACE, config=CONFIG, pathway="component"), grove_enabled=False
    )
    first = desired_dcds(dgd, worker_hash="abcd1234", checkpoints={})[0]
    other = "sglang" if first["spec"].get("backendFramework") != "sglang" else "vllm"
    live = msgspec.convert(
        {**first, "spec": {**first["spec"], "backendFramework": other}}, DynamoComponentDeployment
    )

    # when the DCDs are rendered against it
    bodies = desired_dcds(dgd, worker_hash="abcd1234", checkpoints={}, live={first["metadata"]["name"]: live})

    # then that DCD keeps the framework it was created with, and nothing else changes
    assert bodies[0]["spec"]["backendFramework"] == other
    assert {**bodies[0], "spec": {**bodies[0]["spec"], "backendFramework": None}} == {
        **first,
        "spec": {**first["spec"], "backendFramework": None},
    }
