"""The conversion webhook's one entry point convert, which picks the conversion by kind and
desired version.
"""

from __future__ import annotations

from typing import Any

import pytest

from dgd.domain.conversion import ConversionError, convert
from dgd.domain.conversion.dcd import dcd_to_v1alpha1, dcd_to_v1beta1
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.domain.conversion.dgdsa import dgdsa_to_v1alpha1, dgdsa_to_v1beta1
from dgd.domain.conversion.view import dgd_to_v1alpha1
from tests.unit.domain.conversion_fixtures import (
    ALPHA,
    BETA,
    _stored_example_1,
)

# The webhook's entry point.


@pytest.mark.parametrize(
    ("document", "to", "converter"),
    [
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": ALPHA, "metadata": {"name": "g"}},
            BETA,
            dgd_to_v1beta1,
        ),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": BETA, "metadata": {"name": "g"}},
            ALPHA,
            dgd_to_v1alpha1,
        ),
        (
            {"kind": "DynamoComponentDeployment", "apiVersion": ALPHA, "metadata": {"name": "d"}},
            BETA,
            dcd_to_v1beta1,
        ),
        (
            {"kind": "DynamoComponentDeployment", "apiVersion": BETA, "metadata": {"name": "d"}},
            ALPHA,
            dcd_to_v1alpha1,
        ),
        (
            {
                "kind": "DynamoGraphDeploymentScalingAdapter",
                "apiVersion": ALPHA,
                "spec": {"dgdRef": {"serviceName": "W"}},
            },
            BETA,
            dgdsa_to_v1beta1,
        ),
        (
            {
                "kind": "DynamoGraphDeploymentScalingAdapter",
                "apiVersion": BETA,
                "spec": {"dgdRef": {"componentName": "W"}},
            },
            ALPHA,
            dgdsa_to_v1alpha1,
        ),
    ],
)
def test_convert_picks_the_conversion_by_kind_and_desired_version(
    document: dict[str, Any], to: str, converter: Any
) -> None:
    # when the webhook asks for the other version
    converted = convert(document, to)

    # then the result is that kind's conversion, at the desired version
    assert converted == converter(document)
    assert converted["apiVersion"] == to


def test_convert_to_the_same_version_returns_an_unchanged_copy() -> None:
    # given a stored v1beta1 DGD
    stored = _stored_example_1()

    # when the desired version is its own
    converted = convert(stored, BETA)

    # then it is an equal copy, not the input itself
    assert converted == stored
    assert converted is not stored
    converted["metadata"]["annotations"].clear()
    assert stored["metadata"]["annotations"]


@pytest.mark.parametrize(
    ("document", "to", "path", "names"),
    [
        (
            {"kind": "DynamoGraphDeploymentRequest", "apiVersion": ALPHA},
            BETA,
            "kind",
            ["DynamoGraphDeploymentRequest", "DynamoComponentDeployment"],
        ),
        ({"apiVersion": ALPHA}, BETA, "kind", ["None", "DynamoGraphDeploymentScalingAdapter"]),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": "nvidia.com/v2"},
            BETA,
            "apiVersion",
            ["nvidia.com/v2", ALPHA, BETA],
        ),
        (
            {"kind": "DynamoGraphDeployment", "apiVersion": ALPHA},
            "v1beta1",
            "apiVersion",
            ["'v1beta1'", ALPHA, BETA],
        ),
    ],
)
def test_convert_refuses_an_unknown_kind_or_version_and_says_what_is_allowed(
    document: dict[str, Any], to: str, path: str, names: list[str]
) -> None:
    # when the webhook asks for something no conversion serves
    with pytest.raises(ConversionError) as raised:
        convert(document, to)

    # then the error names the field, the bad value and what is allowed
    assert raised.value.path == path
    for name in names:
        assert name in raised.value.message
