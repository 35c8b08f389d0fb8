"""``sim apply`` of the issue-20 parity features: a KV-transfer policy resolved through a
ClusterTopologyBinding stored first, and a frontend exposed through an Istio VirtualService."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dgd.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "parity"


def _fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    return loaded


def _apply(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["sim", "apply", *argv, "--until-ready", "--timeout", "600"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_grove_dgd_with_a_cluster_topology_kv_policy_reaches_successful(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the binding and then the Grove fixture's DGD in one file (default namespace)
    fixture = _fixture("kv_transfer_grove.yaml")
    dgd = fixture["dgd"]
    dgd["metadata"].pop("namespace")
    path = tmp_path / "kv.yaml"
    path.write_text(yaml.safe_dump_all([fixture["binding"], dgd]), encoding="utf-8")

    # when the simulation applies it until ready
    code, shown = _apply(capsys, str(path))

    # then the DGD converges
    assert code == 0, shown
    assert "state: successful" in shown


def test_a_kv_policy_naming_no_stored_binding_is_refused_by_the_simulated_webhook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the Grove fixture's DGD alone: no ClusterTopologyBinding "gb200" in the cluster
    dgd = _fixture("kv_transfer_grove.yaml")["dgd"]
    dgd["metadata"].pop("namespace")
    path = tmp_path / "kv.yaml"
    path.write_text(yaml.safe_dump(dgd), encoding="utf-8")

    # when the simulation applies it
    code, shown = _apply(capsys, str(path))

    # then the in-process validating webhook refuses the create, naming the field (§4.4 item 13)
    assert code == 1
    assert "references a ClusterTopologyBinding resource that was not found" in shown
    assert "spec.experimental.kvTransferPolicy.clusterTopologyName" in shown


def test_a_frontend_exposed_through_a_virtual_service_reaches_successful(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given the VirtualService fixture: a gateway in the operator config and a frontend DGD
    fixture = _fixture("virtual_service.yaml")
    dgd = fixture["dgd"]
    dgd["metadata"] = {"name": "edge"}
    path, config = tmp_path / "dgd.yaml", tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(dgd), encoding="utf-8")
    config.write_text(yaml.safe_dump(fixture["config"]), encoding="utf-8")

    # when the simulation applies it with that configuration
    code, shown = _apply(capsys, str(path), "--config", str(config))

    # then it converges, having created the VirtualService
    assert code == 0, shown
    assert "state: successful" in shown
    assert "Created VirtualService default/edge-frontend" in shown
