"""JSON merge patch: the RFC 7386 examples, and diff as apply's inverse."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgd.cluster import merge_patch

# RFC 7386, Appendix A: (target, patch, result).
RFC_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC_EXAMPLES)
def test_apply_follows_the_rfc_examples(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy((target, patch))

    result = merge_patch.apply(target, patch)

    assert result == expected
    assert (target, patch) == before  # neither argument is modified


def test_diff_of_equal_objects_is_empty() -> None:
    assert merge_patch.diff({"a": {"b": [1]}}, {"a": {"b": [1]}}) == {}


def test_diff_names_only_what_changed() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1, "image": "x"}}
    modified = {"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 3, "image": "x"}}

    assert merge_patch.diff(original, modified) == {
        "metadata": {"labels": {"b": None}},
        "spec": {"replicas": 3},
    }


# JSON without nulls: diff cannot express "set to null" in a merge patch (null means delete).
json_values = st.recursive(
    st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=2), json_values, max_size=4)


@given(json_objects, json_objects)
def test_applying_the_diff_turns_original_into_modified(
    original: dict[str, Any], modified: dict[str, Any]
) -> None:
    assert merge_patch.apply(original, merge_patch.diff(original, modified)) == modified
