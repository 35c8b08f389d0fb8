"""Go's encoding/json, reproduced: our encoder against Go's own output and upstream's literal hash.

``data/gojson_oracle.jsonl`` holds Go's ``json.Marshal`` (k8s.io/api v0.36.5) of the pod templates
and Service specs rendered from every upstream example graph on both pathways, plus corner values
(``hack/gotypes/record_oracle.py`` records it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import msgspec
import pytest

from dgd.domain.gojson.encode import encode, plain, string
from dgd.domain.gojson.last_applied import TYPED_KINDS, last_applied_hash, sort_keys

ORACLE = Path(__file__).parent / "data" / "gojson_oracle.jsonl"
ROOTS = {
    "PodTemplateSpec": "struct:api/core/v1.PodTemplateSpec",
    "ServiceSpec": "struct:api/core/v1.ServiceSpec",
}
RECORDED = [json.loads(line) for line in ORACLE.read_text(encoding="utf-8").splitlines()]
CASES = [case for case in RECORDED if not case.get("unstructured")]
UNSTRUCTURED = [case for case in RECORDED if case.get("unstructured")]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['type']}-{i}" for i, c in enumerate(CASES)])
def test_encoding_a_value_gives_the_bytes_go_writes_for_it(case: dict[str, object]) -> None:
    # given a value and Go's json.Marshal of it decoded into its k8s.io/api type
    value, expected = case["value"], case["go"]

    # when our encoder writes it
    written = encode(value, ROOTS[str(case["type"])])

    # then the bytes are Go's
    assert written == expected


@pytest.mark.parametrize("case", UNSTRUCTURED, ids=[f"{c['type']}-{i}" for i, c in enumerate(UNSTRUCTURED)])
def test_a_typed_round_trip_gives_what_gos_unstructured_converter_gives(case: dict[str, object]) -> None:
    # given an object of a kind upstream hashes from its typed Go value, and Go's json.Marshal of
    # runtime.DefaultUnstructuredConverter.ToUnstructured of it
    kind = str(case["type"])

    # when we decode it into its Go type and read it back as plain JSON
    converted = json.loads(encode(case["value"], "struct:" + TYPED_KINDS[kind]))

    # then it is Go's, byte for byte once written (map keys sorted, as Go writes a map)
    assert plain(converted) == case["go"]


def test_sort_keys_orders_object_lists_by_name_else_by_first_key_and_keeps_ties_in_place() -> None:
    # Upstream's SortKeys rule (controller_common GetResourceHash), checked on constructed values: no
    # upstream test pins a last-applied hash literal.
    named = [{"name": "b", "v": 1}, {"name": "a", "v": 2}, {"name": "b", "v": 0}]
    unnamed = [{"port": 2}, {"containerPort": 1}, {"port": 1}]
    scalars = ["b", "a"]

    # when the rule sorts them
    sorted_named, sorted_unnamed, kept = sort_keys(named), sort_keys(unnamed), sort_keys(scalars)

    # then named objects sort by name (stable), others by their first key (stable), scalars stay put
    assert sorted_named == [{"name": "a", "v": 2}, {"name": "b", "v": 1}, {"name": "b", "v": 0}]
    assert sorted_unnamed == [{"containerPort": 1}, {"port": 2}, {"port": 1}]
    assert kept == ["b", "a"]


def test_a_dcds_last_applied_hash_ignores_value_struct_artefacts_but_not_content() -> None:
    # given a DCD spec, and the same with the empty objects a DCD's MarshalJSON drops
    base = {
        "kind": "DynamoComponentDeployment",
        "spec": {"name": "w", "podTemplate": {"spec": {"containers": [{"name": "main", "image": "i:1"}]}}},
    }
    artefacts = json.loads(json.dumps(base))
    artefacts["spec"]["podTemplate"]["metadata"] = {}
    artefacts["spec"]["podTemplate"]["spec"]["containers"][0]["resources"] = {}
    changed = json.loads(json.dumps(base))
    changed["spec"]["podTemplate"]["spec"]["containers"][0]["image"] = "i:2"

    # when their last-applied hashes are computed
    hashes = [last_applied_hash(doc) for doc in (base, artefacts, changed)]

    # then the artefacts do not count, the image does, and the hash is a full SHA-256
    assert hashes[0] == hashes[1] != hashes[2]
    assert len(hashes[0]) == 64


def test_the_oracle_covers_rendered_graphs_and_the_encoder_corners() -> None:
    # The recording holds more than the hand-written corners: rendered pod templates of both pathways.
    assert len(CASES) > 50
    assert {case["type"] for case in UNSTRUCTURED} >= {
        "Service",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Secret",
    }
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


# Go 1.26's json.Marshal of each float64 (a throwaway Go program printed them).
GO_FLOATS = [
    (2.5e-5, "0.000025"), (1e-7, "1e-7"), (1.5e300, "1.5e+300"), (123.456, "123.456"),
    (1e20, "100000000000000000000"), (1e21, "1e+21"), (5e-324, "5e-324"), (-0.5, "-0.5"),
    (1e-6, "0.000001"), (0.0, "0"), (-0.0, "-0"), (-1e-10, "-1e-10"), (1.234e-5, "0.00001234"),
    (2.0, "2"), (1e16 + 2, "10000000000000002"), (0.1, "0.1"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (9.999999e-7, "9.999999e-7"),
]  # fmt: skip


@pytest.mark.parametrize(("number", "go"), GO_FLOATS, ids=[go for _, go in GO_FLOATS])
def test_floats_are_written_as_go_writes_a_float64(number: float, go: str) -> None:
    # when a float is written alone, in a map and in a list of objects sorted for a hash
    alone, in_map, hashed = plain(number), plain({"b": number, "a": "<&>"}), sort_keys([{"n": number}])

    # then it is Go's text everywhere, and strings keep Go's HTML-safe escapes
    assert alone == go
    assert in_map == f'{{"a":"\\u003c\\u0026\\u003e","b":{go}}}'
    assert msgspec.json.encode(hashed) == f'[{{"n":{go}}}]'.encode()
