"""``dgd-operator render --dcd``: after a Component-pathway DGD's DCDs, what the DCD controller creates."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dgd.cli import main
from tests.upstream import DYNAMO

AGG = DYNAMO / "examples" / "backends" / "vllm" / "deploy" / "agg.yaml"


def test_render_dcd_prints_each_dcds_children_after_the_dcds(capsys: pytest.CaptureFixture[str]) -> None:
    # given upstream's aggregated vLLM example on the Component pathway
    # when it is rendered with --dcd
    code = main(["render", "--dcd", "--pathway", "component", "-n", "demo", str(AGG)])
    captured = capsys.readouterr()

    # then the DCDs come first, then each one's Deployment and Service, named after it
    assert code == 0, captured.err
    documents = list(yaml.safe_load_all(captured.out))
    kinds = [doc["kind"] for doc in documents]
    dcds = [doc["metadata"]["name"] for doc in documents if doc["kind"] == "DynamoComponentDeployment"]
    assert kinds[: len(dcds)] == ["DynamoComponentDeployment"] * len(dcds)
    deployments = [doc for doc in documents if doc["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in deployments] == dcds
    # and the pods run as the parent DGD's discovery account, as the DCD's owner reference says
    accounts = {d["spec"]["template"]["spec"]["serviceAccountName"] for d in deployments}
    assert accounts == {"vllm-agg-k8s-service-discovery"}


def test_render_dcd_renders_dcd_documents_and_reports_a_refused_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a standalone frontend DCD and a checkpointed one with failover
    good = {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoComponentDeployment",
            "metadata": {"name": "web"}, "spec": {"type": "frontend"}}  # fmt: skip
    experimental = {"checkpoint": {"enabled": True}, "failover": {}}
    bad = {**good, "metadata": {"name": "bad"}, "spec": {"type": "worker", "experimental": experimental}}
    path = tmp_path / "dcds.yaml"
    path.write_text(yaml.safe_dump_all([good]), encoding="utf-8")
    refused = tmp_path / "bad.yaml"
    refused.write_text(yaml.safe_dump_all([bad]), encoding="utf-8")

    # when each is rendered with --dcd
    ok = main(["render", "--dcd", "-n", "demo", str(path)])
    out = capsys.readouterr().out
    failed = main(["render", "--dcd", "-n", "demo", str(refused)])
    err = capsys.readouterr().err

    # then the frontend's Deployment and Service are printed; the refused one says why and prints nothing
    assert ok == 0
    assert [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)] == [
        ("Deployment", "web"),
        ("Service", "web"),
    ]
    assert failed == 1
    assert "Snapshot with active/passive failover is temporarily unsupported" in err
