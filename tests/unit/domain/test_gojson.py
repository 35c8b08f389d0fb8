"""Go's encoding/json, reproduced: our encoder against Go's own output and upstream's literal hash.

``data/gojson_oracle.jsonl`` holds Go's ``json.Marshal`` (k8s.io/api v0.36.5) of the pod templates
and Service specs rendered from every upstream example graph on both pathways, plus corner values
(``hack/gotypes/record_oracle.py`` records it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from dgd.domain.gojson.encode import encode, string

ORACLE = Path(__file__).parent / "data" / "gojson_oracle.jsonl"
ROOTS = {
    "PodTemplateSpec": "struct:api/core/v1.PodTemplateSpec",
    "ServiceSpec": "struct:api/core/v1.ServiceSpec",
}
CASES = [json.loads(line) for line in ORACLE.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['type']}-{i}" for i, c in enumerate(CASES)])
def test_encoding_a_value_gives_the_bytes_go_writes_for_it(case: dict[str, object]) -> None:
    # given a value and Go's json.Marshal of it decoded into its k8s.io/api type
    value, expected = case["value"], case["go"]

    # when our encoder writes it
    written = encode(value, ROOTS[str(case["type"])])

    # then the bytes are Go's
    assert written == expected


def test_the_oracle_covers_rendered_graphs_and_the_encoder_corners() -> None:
    # The recording holds more than the hand-written corners: rendered pod templates of both pathways.
    assert len(CASES) > 50
    assert any('"resources":{}' in str(case["go"]) for case in CASES)
    assert any("\\u003c" in str(case["go"]) for case in CASES)


def test_pod_template_encoding_reproduces_upstreams_golden_worker_hash() -> None:
    # given the DGD of upstream's TestComputeDGDWorkersSpecHashDeterministic (api/v1beta1/
    # worker_hash_test.go, golden "2bc34b39"): one worker, main container image worker:latest, env FOO=bar.
    # That test pins an earlier form of the hash (a versioned input around the component's pod
    # template); its only Kubernetes-typed part is the PodTemplateSpec, which is what this checks.
    template = {
        "spec": {
            "containers": [
                {"name": "main", "image": "worker:latest", "env": [{"name": "FOO", "value": "bar"}]}
            ]
        }
    }
    pod_template = encode(template, "ptr:struct:api/core/v1.PodTemplateSpec")

    # when the input is laid out as that version's Go structs are ({version, workers: {name: {podTemplate}}})
    data = (
        '{"version":'
        + string("dgd-worker-rollout-v2")
        + ',"workers":{"worker":{"podTemplate":'
        + pod_template
        + "}}}"
    )

    # then its SHA-256 starts with upstream's literal
    assert hashlib.sha256(data.encode()).hexdigest()[:8] == "2bc34b39"
