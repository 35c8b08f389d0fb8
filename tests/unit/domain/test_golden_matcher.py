"""The golden matcher (``tests.golden``) honours upstream's placeholder semantics (supplement §6.2)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.golden import glob_to_regex, load_expected, match, match_documents


def _expected(text: str) -> Any:
    (document,) = load_expected(text)
    return document


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ("a: {$strict: false, b: 1}", {"a": {"b": 1, "c": 2}}, True),
        ("a: {$strict: false, b: {c: 1}}", {"a": {"b": {"c": 1, "d": 2}}}, False),
        ("a: {b: 1}", {"a": {"b": 1, "c": 2}}, False),
        ("a: {$$strict: 1}", {"a": {"$strict": 1}}, True),
        ("a: $ignore", {"a": "anything"}, True),
        ("a: $ignore", {"a": {"x": 1}}, False),
        ("a: $exists", {}, False),
        ("a: {$ignore: true}", {"a": {"x": 1}}, True),
        ("a: {$ignore: true}", {"a": "x"}, False),
        ("a: $notexists", {}, True),
        ("a: {$notexists: true}", {"a": 1}, False),
        ("a: $glob:x-*-y", {"a": "x-abc-y"}, True),
        ("a: $glob:x-*-y", {"a": "x-a/c-y"}, False),
        ("a: $glob:[a-c]?", {"a": "bz"}, True),
        ("a: $pattern:1\\.4\\..*", {"a": "1.4.0"}, True),
        ("a: $pattern:1\\.4", {"a": "1.4.0"}, False),
        ("a: $pattern:.*", {"a": 5}, False),
        ("a: $var:h", {"a": "abcd1234"}, True),
        ("a: $var:h", {"a": "other"}, False),
        ('a: "8000"', {"a": 8000}, False),
        ("a: 8000", {"a": 8000}, True),
        ("a: 1", {"a": 1.0}, False),
        ("a: true", {"a": "true"}, False),
        ("a: n", {"a": "n"}, True),
        ("a: yes", {"a": "yes"}, True),
        ("a: [1, 2]", {"a": [1, 2, 3]}, False),
        ("a: [{b: 1}]", {"a": [{"b": 1}]}, True),
    ],
)
def test_expected_yaml_matches_actual_values_as_upstream_defines(
    expected: str, actual: Any, ok: bool
) -> None:
    # given an expected document and an actual object, when matched, then it matches exactly when it should
    assert (match(_expected(expected), actual, {"h": "abcd1234"}) == []) is ok


def test_unknown_variable_is_fatal() -> None:
    with pytest.raises(KeyError, match="nope"):
        match(_expected("a: $var:nope"), {"a": "x"}, {})


def test_malformed_glob_is_an_error() -> None:
    with pytest.raises(ValueError, match="bad glob"):
        glob_to_regex("a[")


def test_documents_are_matched_one_to_one_per_kind_and_extras_fail() -> None:
    # given two expected ConfigMaps told apart by name glob
    expected = load_expected(
        "kind: C\napiVersion: v1\nmetadata: {name: $glob:a-*}\n---\n"
        "kind: C\napiVersion: v1\nmetadata: {name: b}\n"
    )
    a = {"kind": "C", "apiVersion": "v1", "metadata": {"name": "a-1"}}
    b = {"kind": "C", "apiVersion": "v1", "metadata": {"name": "b"}}
    other_kind = {"kind": "D", "apiVersion": "v1"}

    # then the right set matches in any order, a missing one or an extra one of that kind fails
    assert match_documents(expected, [b, other_kind, a], {}) == []
    assert match_documents(expected, [a], {}) != []
    extra = {"kind": "C", "apiVersion": "v1", "metadata": {"name": "c"}}
    assert match_documents(expected, [a, b, extra], {}) == ["1 unexpected C object(s)"]
