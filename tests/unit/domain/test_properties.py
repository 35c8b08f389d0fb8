"""Properties of admission and of the DGD model over generated valid documents (``tests.strategies``).

A valid document is admitted, survives the model unchanged, and breaking any one field of it is
reported at exactly that field and nowhere else.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgd.domain.admission.validation import admit
from dgd.messages.base import QUANTITY_PATTERN
from dgd.messages.component import BACKEND_FRAMEWORKS, COMPONENT_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment
from tests.strategies import Document, component_names, valid_dgds

Mutated = tuple[Document, str]
#: A mutation breaks one field of a valid document: (document, component index) -> (broken, path).
Mutation = Callable[[Document, int], st.SearchStrategy[Mutated]]

COMPONENT_FIELDS = {field.encode_name for field in msgspec.structs.fields(ComponentSpec)}
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_ 0123456789.\n", max_size=12)


def _component_field(document: Document, index: int, field: str, value: Any) -> Mutated:
    broken = copy.deepcopy(document)
    broken["spec"]["components"][index][field] = value
    return broken, f"spec.components[{index}].{field}"


def _bad_type(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    words = st.sampled_from(["Worker", "wroker", "router", ""]) | _WORDS
    return words.filter(lambda w: w not in COMPONENT_TYPES).map(
        lambda w: _component_field(document, index, "type", w)
    )


def _bad_name(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    names = st.builds(lambda a, c, b: a + c + b, component_names, st.sampled_from("_."), component_names)
    return names.map(lambda n: _component_field(document, index, "name", n))


def _negative_replicas(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    return st.integers(-(2**31), -1).map(lambda r: _component_field(document, index, "replicas", r))


def _string_replicas(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    strings = st.sampled_from(["1", "one", "", "2Gi"]) | _WORDS
    return strings.map(lambda r: _component_field(document, index, "replicas", r))


def _single_node_count(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    def mutate(count: int) -> Mutated:
        broken = copy.deepcopy(document)
        component = broken["spec"]["components"][index]
        component["multinode"] = {**component.get("multinode", {}), "nodeCount": count}
        return broken, f"spec.components[{index}].multinode.nodeCount"

    return st.sampled_from([0, 1]).map(mutate)


def _bad_shared_memory(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    # fullmatch: a JSON-schema `$` matches only at the very end (see the trailing-newline test).
    sizes = st.sampled_from(["8 Gi", "8GiB", "lots", "-", "1.2.3", "Gi"]) | _WORDS
    return sizes.filter(lambda s: re.fullmatch(QUANTITY_PATTERN, s) is None).map(
        lambda s: _component_field(document, index, "sharedMemorySize", s)
    )


def _bad_runtime_version(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    versions = st.sampled_from(["01.2.3", "1.2", "v1.2.3", "1.2.3-rc1", "10000.0.0", "1.02.3"])
    return versions.map(lambda v: _component_field(document, index, "runtimeVersionOverride", v))


def _bad_backend(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    def mutate(backend: str) -> Mutated:
        broken = copy.deepcopy(document)
        broken["spec"]["backendFramework"] = backend
        return broken, "spec.backendFramework"

    words = st.sampled_from(["VLLM", "tensorrt", "mocker", ""]) | _WORDS
    return words.filter(lambda w: w not in BACKEND_FRAMEWORKS).map(mutate)


def _unknown_field(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    keys = st.sampled_from(["replica", "nodeCount", "backendFramework", "image", "kind"]) | st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=12
    )
    values = st.sampled_from([1, "x", True, {}, []])
    return st.tuples(keys.filter(lambda k: k not in COMPONENT_FIELDS), values).map(
        lambda kv: _component_field(document, index, *kv)
    )


def _min_available_above_replicas(document: Document, index: int) -> st.SearchStrategy[Mutated]:
    def mutate(excess: int) -> Mutated:
        # replicas >= 1 (an EPP has exactly 1), minAvailable above it
        broken = copy.deepcopy(document)
        component = broken["spec"]["components"][index]
        component["replicas"] = component.get("replicas") or 1
        component["minAvailable"] = component["replicas"] + excess
        return broken, f"spec.components[{index}].minAvailable"

    return st.integers(1, 5).map(mutate)


MUTATIONS: dict[str, Mutation] = {
    "type-not-in-enum": _bad_type,
    "name-with-underscore-or-dot": _bad_name,
    "replicas-negative": _negative_replicas,
    "replicas-a-string": _string_replicas,
    "multinode-node-count-below-2": _single_node_count,
    "shared-memory-size-not-a-quantity": _bad_shared_memory,
    "runtime-version-override-not-major-minor-patch": _bad_runtime_version,
    "backend-framework-not-in-enum": _bad_backend,
    "unknown-component-field": _unknown_field,
    "min-available-above-replicas": _min_available_above_replicas,
}


@settings(max_examples=150, deadline=None)
@given(valid_dgds())
def test_generated_dgd_is_admitted_without_errors(document: Document) -> None:
    # given a generated valid DGD
    # when it is admitted as a create
    verdict = admit(document)
    # then there are no errors and the defaulted DGD is returned
    assert verdict.errors == []
    assert verdict.dgd is not None


@settings(max_examples=150, deadline=None)
@given(valid_dgds())
def test_generated_dgd_round_trips_through_the_struct_unchanged(document: Document) -> None:
    # given a generated valid DGD
    # when it is converted to the model and back to plain values
    result = msgspec.to_builtins(msgspec.convert(document, DynamoGraphDeployment))
    # then it is the same document
    assert result == document


@pytest.mark.parametrize("mutation", list(MUTATIONS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_single_invalid_field_is_reported_at_its_path_and_nowhere_else(
    mutation: str, data: st.DataObject
) -> None:
    # given a valid DGD with one field of one component (or of the spec) broken
    document = data.draw(valid_dgds(), label="document")
    index = data.draw(st.integers(0, len(document["spec"]["components"]) - 1), label="index")
    broken, path = data.draw(MUTATIONS[mutation](document, index), label="broken")
    # when it is admitted
    verdict = admit(broken)
    # then exactly that path has errors
    assert path in [e.path for e in verdict.errors], verdict.errors
    assert {e.path for e in verdict.errors} == {path}, verdict.errors
    assert verdict.dgd is None


@pytest.mark.parametrize(
    ("field", "path"),
    [
        ("name", "spec.components[0].name"),
        ("sharedMemorySize", "spec.components[0].sharedMemorySize"),
        ("runtimeVersionOverride", "spec.components[0].runtimeVersionOverride"),
        ("metadata.name", "metadata.name"),
    ],
)
def test_value_with_a_trailing_newline_is_refused_at_its_path(field: str, path: str) -> None:
    # given the simplest valid DGD with a trailing newline added to one patterned value
    document: Document = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "graph"},
        "spec": {
            "components": [
                {
                    "name": "Frontend",
                    "type": "frontend",
                    "sharedMemorySize": "8Gi",
                    "runtimeVersionOverride": "1.2.3",
                    "podTemplate": {"spec": {"containers": [{"name": "main", "image": "img:1.2.3"}]}},
                }
            ]
        },
    }
    owner = document["metadata"] if field == "metadata.name" else document["spec"]["components"][0]
    key = field.rsplit(".", 1)[-1]
    owner[key] += "\n"
    # when it is admitted
    verdict = admit(document)
    # then it is refused there (a JSON-schema `$`, unlike Python's, does not match before a final newline)
    assert [e.path for e in verdict.errors] == [path], verdict.errors
