"""The JSON patch a mutating webhook answers: only what changed, at escaped paths."""

from __future__ import annotations

from dgd.domain.admission.json_patch import apply, diff, pointer


def test_keys_are_escaped_as_rfc_6901_says() -> None:
    assert pointer("metadata", "annotations", "nvidia.com/a~b") == "/metadata/annotations/nvidia.com~1a~0b"
    assert pointer("spec", "components", 3) == "/spec/components/3"


def test_only_what_changed_is_in_the_patch() -> None:
    before = {
        "metadata": {"name": "g"},
        "spec": {"components": [{"name": "a"}, {"name": "b", "replicas": 2}]},
    }
    after = {
        "metadata": {"name": "g", "annotations": {"k/v": "1"}},
        "spec": {"components": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 3}]},
    }

    assert diff(before, after) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"k/v": "1"}},
        {"op": "add", "path": "/spec/components/0/replicas", "value": 1},
        {"op": "replace", "path": "/spec/components/1/replicas", "value": 3},
    ]


def test_removals_a_list_of_another_length_and_a_changed_type() -> None:
    before = {"a": 1, "b": [1, 2], "c": 1, "d": True}
    after = {"b": [1, 2, 3], "c": 1.0, "d": True}

    assert diff(before, after) == [
        {"op": "remove", "path": "/a"},
        {"op": "replace", "path": "/b", "value": [1, 2, 3]},
        {"op": "replace", "path": "/c", "value": 1.0},
    ]
    assert diff(after, after) == []


def test_a_patch_applied_gives_what_it_was_made_from() -> None:
    before = {"metadata": {"name": "g"}, "spec": {"a/b": [1, {"c": 2}], "gone": True}}
    after = {"metadata": {"name": "g", "annotations": {"x~y": "1"}}, "spec": {"a/b": [1, {"c": 3, "d": [4]}]}}

    assert apply(before, diff(before, after)) == after
    assert before["spec"]["gone"] is True  # the input is left as it was
    assert apply([1, 2], [{"op": "add", "path": "/-", "value": 3}, {"op": "remove", "path": "/0"}]) == [2, 3]
