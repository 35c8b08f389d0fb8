"""Record Go's own ``json.Marshal`` of the pod templates and Service specs we render, for the unit
tests of ``dgd.domain.gojson`` (run from the repository root; needs Go and the k8s.io modules in the
module cache, as ``hack/kube`` does):

    PYTHONPATH=. DGD_UPSTREAM_DIR=../shared/upstream .venv/bin/python hack/gotypes/record_oracle.py

Inputs: the pod templates of every DCD and PodCliqueSet clique rendered from the upstream example
graphs on both pathways, every Service spec, and hand-written values that reach the corners of Go's
encoder (escapes, quantities, empty lists and objects, int-or-string ports). Output:
``tests/unit/domain/data/gojson_oracle.jsonl``, one ``{"type", "value", "go"}`` line per input.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import msgspec

from dgd.domain.gates import Gates
from dgd.domain.render.dcd_children import render_dcd_children
from dgd.domain.render.offline import prepare, render
from dgd.domain.render.shared_objects import discovery_rbac, mpi_secret, planner_rbac, wait_leader_config_map
from dgd.messages.config import OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from tests.upstream import DYNAMO, load_documents

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "unit" / "domain" / "data" / "gojson_oracle.jsonl"
SOURCES = [
    *sorted((DYNAMO / "examples" / "backends").rglob("*.yaml")),
    *sorted(
        (DYNAMO / "deploy" / "operator" / "internal" / "controller" / "testdata" / "dgd").rglob("input.yaml")
    ),
]
CONFIG = msgspec.convert({"checkpoint": {"enabled": True}}, OperatorConfig)
CORNERS: list[dict[str, Any]] = [
    {"type": "PodTemplateSpec", "value": {}},
    {"type": "PodTemplateSpec", "value": {"metadata": {}, "spec": {"containers": []}}},
    {
        "type": "PodTemplateSpec",
        "value": {
            "spec": {
                "containers": [
                    {
                        "name": "m",
                        "args": [
                            "a<b>&c",
                            'quote"back\\slash',
                            "tab\there\nnew",
                            "\u2028\u2029",
                            "é ü 中",
                            "\x01\x1f\x7f",
                            "\b\f",
                        ],
                    }
                ]
            }
        },
    },
    {
        "type": "PodTemplateSpec",
        "value": {
            "spec": {
                "containers": [
                    {
                        "name": "m",
                        "resources": {
                            "limits": {
                                "cpu": "1000m",
                                "memory": "1024Mi",
                                "nvidia.com/gpu": 1,
                                "x": "0.5",
                                "y": "1e3",
                                "z": "1.5Gi",
                            },
                            "requests": {"cpu": 0.25, "memory": "2048", "ephemeral-storage": "10G"},
                        },
                    }
                ]
            }
        },
    },
    {
        "type": "PodTemplateSpec",
        "value": {
            "spec": {
                "volumes": [
                    {"name": "shm", "emptyDir": {}},
                    {"name": "s", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
                    {"name": "c", "configMap": {"name": "cm", "items": [], "defaultMode": 420}},
                ],
                "containers": [
                    {
                        "name": "m",
                        "ports": [{"containerPort": 9090, "name": "system", "protocol": "TCP"}],
                        "livenessProbe": {"httpGet": {"path": "/live", "port": "system"}, "periodSeconds": 5},
                        "readinessProbe": {"tcpSocket": {"port": 8000}},
                        "startupProbe": {"exec": {"command": []}},
                        "env": [
                            {"name": "A", "value": ""},
                            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        ],
                        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}, "privileged": False},
                    }
                ],
                "terminationGracePeriodSeconds": 0,
                "hostNetwork": False,
                "nodeSelector": {},
                "tolerations": [{"key": "k", "operator": "Exists"}],
            }
        },
    },
    {
        "type": "ServiceSpec",
        "value": {
            "ports": [{"port": 8000, "targetPort": "http"}, {"port": 1, "targetPort": 2}],
            "selector": {"b": "2", "a": "1"},
            "clusterIP": "None",
            "type": "ClusterIP",
            "publishNotReadyAddresses": True,
        },
    },
]


UNSTRUCTURED_KINDS = ("Service", "ServiceAccount", "ConfigMap", "Secret", "Role", "RoleBinding", "Deployment")
UNSTRUCTURED_CORNERS: list[dict[str, Any]] = [
    {"type": kind, "value": value, "unstructured": True}
    for kind, value in [
        ("Secret", mpi_secret("mpi", "ns", {"private.key": "YWJj", "public.key": "ZA=="}, "Opaque")),
        ("Secret", {"kind": "Secret", "metadata": {"name": "s"}}),
        ("ConfigMap", {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"b": "2", "a": "<&>"}}),
        ("Role", {"kind": "Role", "rules": [{"verbs": ["get"], "resources": ["pods"], "apiGroups": [""]}]}),
        *(
            ("RoleBinding" if o["kind"] == "RoleBinding" else "ServiceAccount", o)
            for o in planner_rbac("ns", "cr")
        ),
        ("Service", {"kind": "Service", "spec": {"ports": [{"port": 80}]}}),
    ]
]


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj.get("kind") == "DynamoComponentDeployment":
        template = (obj.get("spec") or {}).get("podTemplate")
        return [template] if template else []
    if obj.get("kind") == "PodCliqueSet":
        cliques = obj["spec"]["template"]["cliques"]
        return [{"spec": clique["spec"]["podSpec"]} for clique in cliques]
    return []


def _dcd_children(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the DCD controller renders for the DCDs among ``objects`` (LWS gate off: Deployments)."""
    children: list[dict[str, Any]] = []
    for obj in objects:
        if obj.get("kind") == "DynamoComponentDeployment":
            dcd = msgspec.convert(obj, DynamoComponentDeployment)
            children += [c.body for c in render_dcd_children(dcd, CONFIG, gates=Gates()).children]
    return children


def _cases() -> list[dict[str, Any]]:
    cases = [*CORNERS, *UNSTRUCTURED_CORNERS]
    for path in SOURCES:
        for document in load_documents(path):
            if not isinstance(document, dict) or document.get("kind") != "DynamoGraphDeployment":
                continue
            for component in (False, True):
                raw = json.loads(json.dumps(document))
                if component:
                    raw.setdefault("metadata", {}).setdefault("annotations", {})[
                        "nvidia.com/enable-grove"
                    ] = "false"
                try:
                    dgd = prepare(raw, namespace="oracle", config=CONFIG)
                    objects = render(dgd, config=CONFIG)
                except Exception as error:  # a graph this release refuses has nothing to record
                    print(f"skip {path.name} ({'component' if component else 'grove'}): {error}")
                    continue
                for obj in objects:
                    cases.extend({"type": "PodTemplateSpec", "value": t} for t in _pod_templates(obj))
                    if obj.get("kind") == "Service":
                        cases.append({"type": "ServiceSpec", "value": obj["spec"]})
                for obj in [
                    *objects,
                    *discovery_rbac(dgd),
                    wait_leader_config_map(dgd),
                    *_dcd_children(objects),
                ]:
                    if obj.get("kind") in UNSTRUCTURED_KINDS:
                        cases.append({"type": obj["kind"], "value": obj, "unstructured": True})
    unique = {json.dumps(case, sort_keys=True): case for case in cases}
    return list(unique.values())


def _go(cases: list[dict[str, Any]], *flags: str) -> list[str]:
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"}
    lines = "".join(json.dumps({"type": c["type"], "value": c["value"]}) + "\n" for c in cases)
    result = subprocess.run(
        ["go", "run", ".", "-encode", *flags],
        cwd=Path(__file__).parent,
        input=lines.encode(),
        capture_output=True,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(result.stderr.decode())
    outputs = result.stdout.decode("utf-8").split("\n")[: len(cases)]
    assert len(outputs) == len(cases), result.stderr.decode()
    return outputs


def main() -> None:
    everything = _cases()
    typed = [case for case in everything if not case.get("unstructured")]
    unstructured = [case for case in everything if case.get("unstructured")]
    outputs = _go(typed) + _go(unstructured, "-unstructured")
    with OUT.open("w", encoding="utf-8") as out:
        for case, go in zip(typed + unstructured, outputs, strict=True):
            out.write(json.dumps({**case, "go": go}) + "\n")
    print(f"{len(outputs)} cases recorded in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
