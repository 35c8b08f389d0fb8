"""DCDs as the tests of the DCD controller's rendering give them: plain manifests, converted once."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.gates import Gates
from dgd.domain.render.dcd_children import NOTHING_LIVE, DCDChildren, render_dcd_children
from dgd.domain.render.dcd_workload_type import Legacy
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment

MAIN = {"name": "main", "image": "registry.example/dynamo:1.4.0", "command": ["python3"], "args": ["-m", "x"]}


def dcd(
    name: str = "d",
    *,
    type: str = "frontend",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
    pod_labels: dict[str, str] | None = None,
    owner: str | None = "g",
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> DynamoComponentDeployment:
    """A DCD ``name`` in namespace ``ns``, Dynamo namespace ``ns-g``, owned by DGD ``owner``."""
    template: dict[str, Any] = {"spec": {"containers": containers if containers is not None else [MAIN]}}
    metadata: dict[str, Any] = {}
    if pod_annotations:
        metadata["annotations"] = pod_annotations
    if pod_labels:
        metadata["labels"] = pod_labels
    if metadata:
        template["metadata"] = metadata
    manifest: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoComponentDeployment",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "uid-d",
            "labels": {"nvidia.com/dynamo-namespace": "ns-g", **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {"name": name.replace(".", "-"), "type": type, "podTemplate": template, **spec},
    }
    if owner is not None:
        manifest["metadata"]["ownerReferences"] = [
            {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment", "name": owner, "uid": "u"}
        ]
    return msgspec.convert(manifest, DynamoComponentDeployment)


def children(
    component: DynamoComponentDeployment,
    config: OperatorConfig | None = None,
    *,
    gates: Gates | None = None,
    live: Legacy = NOTHING_LIVE,
    **kwargs: Any,
) -> DCDChildren:
    return render_dcd_children(
        component, config or OperatorConfig(), gates=gates or Gates(), live=live, **kwargs
    )


def of_kind(rendered: DCDChildren, kind: str) -> list[dict[str, Any]]:
    return [c.body for c in rendered.children if c.body["kind"] == kind]


def removed(rendered: DCDChildren) -> set[tuple[str, str]]:
    return {(r.kind, r.name) for r in rendered.removals}
