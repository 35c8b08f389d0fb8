"""What users install is accepted by a real API server: the generated CRDs and the Helm chart's
rendered manifests, with server-side apply (a dry run first, then for real where it does not disturb
the run's other tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import kubectl
from tests.real.controlplane import ControlPlane
from tests.unit.deploy.test_helm import render

ROOT = Path(__file__).resolve().parents[2]
CRDS = sorted((ROOT / "deploy" / "crds").glob("*.yaml"))


def server_side(plane: ControlPlane, documents: str, *, dry_run: bool) -> str:
    """``kubectl apply --server-side`` of ``documents`` (YAML); its output, failing on any refusal."""
    flags = ["--dry-run=server"] if dry_run else []
    applied = kubectl(
        plane, "apply", "--server-side", "--force-conflicts", *flags, "-f", "-", input=documents.encode()
    )
    assert applied.returncode == 0, applied.stderr.decode()
    return applied.stdout.decode()


def test_the_generated_crds_are_accepted_with_server_side_apply(control_plane: ControlPlane) -> None:
    # given every CRD make crds generates
    text = "\n---\n".join(path.read_text(encoding="utf-8") for path in CRDS)

    # when they are applied server-side, as a dry run, and then ours for real
    dry = server_side(control_plane, text, dry_run=True)
    ours = "\n---\n".join(
        path.read_text(encoding="utf-8") for path in CRDS if path.name.startswith("nvidia.com_")
    )
    real = server_side(control_plane, ours, dry_run=False)

    # then the API server accepted every one
    assert dry.count("serverside-applied") == len(CRDS)
    assert real.count("serverside-applied") == len([p for p in CRDS if p.name.startswith("nvidia.com_")])


@pytest.mark.parametrize(
    "values", [{}, {"namespaces": ["team-a", "team-b"]}], ids=["cluster-wide", "two-namespaces"]
)
def test_the_charts_rendered_manifests_are_accepted_with_server_side_dry_run(
    control_plane: ControlPlane, values: dict[str, Any]
) -> None:
    # given the objects helm template renders for the chart with these values
    documents = render(values)

    # when they are applied server-side as a dry run (their namespaces made first)
    namespaces = {d["metadata"]["namespace"] for d in documents if d["metadata"].get("namespace")}
    for namespace in sorted(namespaces):
        kubectl(control_plane, "create", "namespace", namespace)
    output = server_side(control_plane, yaml.safe_dump_all(documents), dry_run=True)

    # then every object was accepted
    assert output.count("serverside-applied") == len(documents)
