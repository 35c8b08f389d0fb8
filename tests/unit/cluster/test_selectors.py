"""Label selector parsing, canonical form and matching."""

from __future__ import annotations

import pytest

from dgd.cluster.errors import Invalid
from dgd.cluster.memory.selectors import EVERYTHING, from_label_selector, parse


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("b=2,a=1", "a=1,b=2"),
        ("a==1", "a=1"),
        (" a != 1 ", "a!=1"),
        ("env in (prod, dev)", "env in (dev,prod)"),
        ("env notin (qa)", "env notin (qa)"),
        ("app.kubernetes.io/name", "app.kubernetes.io/name"),
        ("!nvidia.com/dynamo-component", "!nvidia.com/dynamo-component"),
        ("replicas>2", "replicas>2"),
        ("a=", "a="),
    ],
)
def test_parse_gives_the_canonical_form(text: str, canonical: str) -> None:
    assert str(parse(text)) == canonical


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("a=1", {"a": "1"}, True),
        ("a=1", {}, False),
        ("a!=1", {}, True),
        ("a notin (1)", {}, True),
        ("a in (1,2)", {"a": "2"}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": ""}, False),
        ("a>2", {"a": "3"}, True),
        ("a>2", {"a": "x"}, False),
        ("a<2", {}, False),
        ("a=", {"a": ""}, True),
        ("a in ()", {"a": "x"}, False),
        ("a notin ()", {}, True),
    ],
)
def test_requirements_match_as_the_api_server_does(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse(text).matches(labels) is matches


@pytest.mark.parametrize("text", ["a in 1", "a in (1", "=1", "a=1 b", "a=1,,b=2", "a>x", "A/b=1", "!", "a=@"])
def test_malformed_selectors_are_a_bad_request(text: str) -> None:
    with pytest.raises(Invalid) as raised:
        parse(text)

    assert raised.value.bad_request and raised.value.to_status()["code"] == 400


def test_blank_selector_matches_everything() -> None:
    assert parse(None) is EVERYTHING and parse("  ") is EVERYTHING
    assert EVERYTHING.matches(None)


def test_label_selector_object_becomes_the_same_selector() -> None:
    selector = from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["web", "edge"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    )

    assert str(selector) == "app=web,!canary,tier in (edge,web)"  # sorted by key
    assert selector.matches({"app": "web", "tier": "edge"})
    assert not selector.matches({"app": "web", "tier": "edge", "canary": "1"})


def test_label_selector_with_an_unknown_operator_is_invalid() -> None:
    with pytest.raises(Invalid):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]})
