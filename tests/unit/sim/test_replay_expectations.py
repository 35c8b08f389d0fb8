"""What an ``expect`` record checks, on an object's JSON: paths, states and conditions."""

from __future__ import annotations

from typing import Any

import pytest

from dgd.messages.trace import Expect, ObjectRef
from dgd.sim.expectations import Outcome, describe, evaluate, lookup, parse_path

DGD = ObjectRef("nvidia.com/v1beta1", "DynamoGraphDeployment", "demo", "default")
OBJECT: dict[str, Any] = {
    "metadata": {"name": "demo", "annotations": {"nvidia.com/dynamo-worker-hash": "abc"}},
    "spec": {"components": [{"name": "Frontend", "replicas": 1}, {"name": "Worker", "replicas": 3}]},
    "status": {
        "state": "pending",
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "pods_not_ready", "message": "Worker: 1/3 ready"}
        ],
    },
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("$.status.state", "pending"),
        ("$.spec.components[1].replicas", 3),
        ("$.spec.components[-1].name", "Worker"),
        ("$.spec.components[name=Worker].replicas", 3),
        ("$.status.conditions[type=Ready].reason", "pods_not_ready"),
        ('$.metadata.annotations["nvidia.com/dynamo-worker-hash"]', "abc"),
        ("$.spec.components[7].replicas", None),
        ("$.status.rollingUpdate.phase", None),
        ("$", OBJECT),
    ],
)
def test_a_path_finds_its_value_or_none(path: str, value: Any) -> None:
    assert lookup(OBJECT, parse_path(path)) == value


def test_a_path_that_cannot_be_read_says_where_it_stops() -> None:
    with pytest.raises(ValueError, match=r"cannot read '\$\.spec\[x' from '\[x'"):
        parse_path("$.spec[x")
    with pytest.raises(ValueError, match="a path starts with"):
        parse_path("status.state")


def test_a_path_expectation_holds_when_the_value_equals_and_shows_what_it_saw() -> None:
    holds = Expect(target=DGD, path="$.spec.components[name=Worker].replicas", equals=3)
    fails = Expect(target=DGD, path="$.spec.components[name=Worker].replicas", equals=5)
    assert evaluate(holds, OBJECT) == Outcome(True, "$.spec.components[name=Worker].replicas is 3")
    assert evaluate(fails, OBJECT) == Outcome(False, "$.spec.components[name=Worker].replicas is 3")


def test_equals_omitted_expects_the_field_absent() -> None:
    assert evaluate(Expect(target=DGD, path="$.status.rollingUpdate"), OBJECT).ok
    assert not evaluate(Expect(target=DGD, path="$.status.state"), OBJECT).ok


def test_state_and_condition_expectations_read_the_status() -> None:
    waiting = Expect(target=DGD, state="pending", condition="Ready", status="False", reason="pods_not_ready")
    outcome = evaluate(waiting, OBJECT)
    assert outcome == Outcome(
        True, "state pending, condition Ready=False (pods_not_ready: Worker: 1/3 ready)"
    )
    assert not evaluate(Expect(target=DGD, condition="Ready", status="True"), OBJECT).ok
    assert not evaluate(Expect(target=DGD, condition="Ready", status="False", reason="other"), OBJECT).ok
    missing = evaluate(Expect(target=DGD, condition="TopologyLevelsAvailable", status="True"), OBJECT)
    assert missing == Outcome(False, "no condition TopologyLevelsAvailable")


def test_an_expectation_about_an_object_that_does_not_exist_fails() -> None:
    assert evaluate(Expect(target=DGD, state="successful"), None) == Outcome(
        False, "the object does not exist"
    )


def test_an_expectation_is_described_in_words() -> None:
    expect = Expect(
        target=DGD, path="$.spec.replicas", equals=2, state="successful", condition="Ready", status="True"
    )
    assert describe(expect) == "$.spec.replicas == 2, state successful, condition Ready=True"
