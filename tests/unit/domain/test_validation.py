"""What admission of DGD documents does beyond reporting one error: collecting every error, defaulting,
warnings and junk input.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from dgd.domain.admission.defaulting import ORIGIN_VERSION, WORKLOAD_PROVIDER
from dgd.domain.admission.documents import admit_document
from dgd.domain.admission.errors import FieldError
from dgd.domain.admission.validation import admit
from dgd.domain.conversion.dgd import dgd_to_v1beta1
from dgd.messages.dgd import API_VERSION
from tests.unit.domain.dgd_cases import runtime_image, small_dgd


def test_every_independent_mistake_is_reported_at_once() -> None:
    # given a DGD with three unrelated mistakes: an annotation, a component field and a spec field
    document = small_dgd(
        annotations={"nvidia.com/grove-update-strategy": "Sometimes"}, replicas=2, minAvailable=3
    )
    document["spec"]["restart"] = {"id": "now"}

    # when it is admitted
    verdict = admit(document)

    # then all three are reported, in document order, and no DGD is produced
    assert [error.path for error in verdict.errors] == [
        "metadata.annotations[nvidia.com/grove-update-strategy]",
        "spec.components[1].minAvailable",
        "spec.restart",
    ]
    assert verdict.dgd is None


def test_every_schema_mistake_is_reported_at_once() -> None:
    # given a DGD with three schema mistakes in different places
    document = small_dgd(type="wroker", replicas=-1)
    document["spec"]["backendFramework"] = "tensorrt"

    # when it is admitted
    verdict = admit(document)

    # then each one has its own error
    assert verdict.errors == [
        FieldError("spec.backendFramework", '"tensorrt" is not one of sglang, vllm, trtllm'),
        FieldError(
            "spec.components[1].type",
            '"wroker" is not one of frontend, worker, prefill, decode, planner, epp',
        ),
        FieldError("spec.components[1].replicas", "-1 is too small: must be at least 0"),
    ]


def test_grove_dgd_is_defaulted_in_memory_with_replicas_min_available_and_provider() -> None:
    # given a DGD that leaves replicas and minAvailable unset, on an operator with Grove
    document = small_dgd()
    original = copy.deepcopy(document)

    # when it is admitted
    verdict = admit(document, grove_enabled=True)

    # then the admitted DGD carries upstream's defaults, and the input document is untouched
    assert verdict.dgd is not None
    assert [(c.replicas, c.min_available) for c in verdict.dgd.spec.components or []] == [(1, 1), (1, 1)]
    assert (verdict.dgd.metadata.annotations or {})[WORKLOAD_PROVIDER] == "grove"
    assert document == original


def test_component_pathway_dgd_gets_replicas_but_no_min_available() -> None:
    # given a DGD that opts out of Grove
    document = small_dgd(annotations={"nvidia.com/enable-grove": "false"})

    # when it is admitted
    verdict = admit(document, grove_enabled=True)

    # then replicas default to 1, minAvailable stays unset and the provider is "component"
    assert verdict.dgd is not None
    assert [(c.replicas, c.min_available) for c in verdict.dgd.spec.components or []] == [
        (1, None),
        (1, None),
    ]
    assert (verdict.dgd.metadata.annotations or {})[WORKLOAD_PROVIDER] == "component"


def test_user_supplied_provider_annotation_is_replaced_on_create() -> None:
    # given a DGD whose author wrote the controller-owned provider annotation, on an operator without Grove
    document = small_dgd(annotations={WORKLOAD_PROVIDER: "grove"})

    # when it is admitted
    verdict = admit(document, grove_enabled=False)

    # then the provider is the one the operator selects
    assert verdict.dgd is not None
    assert (verdict.dgd.metadata.annotations or {})[WORKLOAD_PROVIDER] == "component"


def test_origin_version_is_set_from_the_operator_when_absent() -> None:
    # when a DGD without an origin version is admitted by operator 1.5.0
    verdict = admit(small_dgd(), operator_version="1.5.0")

    # then the origin version is the operator's
    assert verdict.dgd is not None
    assert (verdict.dgd.metadata.annotations or {})[ORIGIN_VERSION] == "1.5.0"


def test_origin_version_present_on_create_is_kept() -> None:
    # given a DGD that already records an origin version (for example after a v1alpha1 round trip)
    document = small_dgd(annotations={ORIGIN_VERSION: "1.4.0"})

    # when operator 1.5.0 admits it
    verdict = admit(document, operator_version="1.5.0")

    # then the recorded origin version is kept
    assert verdict.dgd is not None
    assert (verdict.dgd.metadata.annotations or {})[ORIGIN_VERSION] == "1.4.0"


#: Worker main containers upstream admission refuses on create, and the warning each one gets instead.
REFUSED_ON_CREATE: dict[str, tuple[Callable[[dict[str, Any]], object], FieldError]] = {
    # an image tag that is not a semantic version, and no runtimeVersionOverride: the field and the image
    "image-without-semver-tag": (
        lambda container: container.update(image=runtime_image("my-tag")),
        FieldError(
            "spec.components[1].runtimeVersionOverride",
            f'is required when the main container image "{runtime_image("my-tag")}" has no '
            "semantic-version tag (upstream admission refuses this on create)",
        ),
    ),
}

#: Worker main containers no pod could run from: refused, naming the field and what it needs.
WITHOUT_AN_IMAGE: dict[str, tuple[Callable[[dict[str, Any]], object], FieldError]] = {
    # the only container not named main
    "no-main-container": (
        lambda container: container.update(name="engine"),
        FieldError(
            "spec.components[1].podTemplate.spec.containers",
            'is required: a container named "main" with a non-empty image (no pod runs without one)',
        ),
    ),
    # a main container without an image, or with an empty one: at the image field
    "main-container-without-image": (
        lambda container: container.pop("image"),
        FieldError(
            "spec.components[1].podTemplate.spec.containers[0].image",
            "is required: the main container must specify a non-empty image",
        ),
    ),
    "main-container-with-an-empty-image": (
        lambda container: container.update(image=""),
        FieldError(
            "spec.components[1].podTemplate.spec.containers[0].image",
            '"" is not allowed: the main container must specify a non-empty image',
        ),
    ),
}


@pytest.mark.parametrize("case", WITHOUT_AN_IMAGE)
def test_a_worker_whose_main_container_has_no_image_is_refused(case: str) -> None:
    # given a worker with no main container image, which the API server would never run a pod of
    change, error = WITHOUT_AN_IMAGE[case]
    document = small_dgd()
    change(document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0])

    # when it is admitted
    verdict = admit(document)

    # then it is refused at the field, and no DGD is produced
    assert verdict.errors == [error]
    assert verdict.dgd is None


@pytest.mark.parametrize("case", REFUSED_ON_CREATE)
def test_a_worker_container_upstream_refuses_on_create_is_admitted_with_a_warning_not_an_error(
    case: str,
) -> None:
    # given a worker whose main container upstream admission would refuse on create
    change, warning = REFUSED_ON_CREATE[case]
    document = small_dgd()
    change(document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0])

    # when it is admitted
    verdict = admit(document)

    # then it is admitted, with a warning that names the field and says upstream would refuse it
    assert verdict.errors == []
    assert verdict.dgd is not None
    assert verdict.warnings == [warning]


def test_placeholder_namespace_is_a_warning_and_a_bad_namespace_an_error() -> None:
    # given one DGD with a template placeholder for its namespace and one with an invalid name
    placeholder, invalid = small_dgd(), small_dgd()
    placeholder["metadata"]["namespace"] = "<your-namespace>"
    invalid["metadata"]["namespace"] = "Team_A"

    # when both are admitted
    kept, refused = admit(placeholder), admit(invalid)

    # then the placeholder is only a warning, the invalid name an error
    assert kept.errors == []
    assert kept.warnings == [
        FieldError(
            "metadata.namespace",
            '"<your-namespace>" looks like a template placeholder: replace it with a namespace name '
            "before applying",
        )
    ]
    assert refused.errors == [FieldError("metadata.namespace", '"Team_A" is not a valid namespace name')]


def test_runtime_version_override_silences_the_image_tag_warning() -> None:
    # given the same worker with an explicit runtime version
    document = small_dgd(runtimeVersionOverride="1.5.0")
    document["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["image"] = runtime_image(
        "my-tag"
    )

    # when it is admitted
    verdict = admit(document)

    # then there is nothing to warn about
    assert verdict.errors == []
    assert verdict.warnings == []


@pytest.mark.parametrize(
    "junk",
    [
        None,
        [],
        [{"kind": "DynamoGraphDeployment"}],
        "kind: DynamoGraphDeployment",
        5,
        {},
        {"spec": 5},
        {"apiVersion": API_VERSION, "kind": "DynamoGraphDeployment", "metadata": "demo", "spec": {}},
        {
            "apiVersion": API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {},
            "spec": {"components": 5},
        },
        {
            "apiVersion": API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": {},
            "spec": {"components": [7]},
        },
    ],
    ids=repr,
)
def test_admit_reports_junk_as_errors_and_never_raises(junk: Any) -> None:
    # when something that is not a DGD is admitted
    verdict = admit(junk)

    # then it is refused with errors, not an exception
    assert verdict.errors != []
    assert verdict.dgd is None


def test_null_document_is_reported_like_any_other_non_object() -> None:
    # when an empty (null) document is admitted
    verdict = admit(None)

    # then the error reads like the one for a list or a string
    assert verdict.errors == [FieldError("", "null is not an object")]


def test_legacy_v1alpha1_component_type_converts_to_a_generic_component_with_a_warning() -> None:
    # given a v1alpha1 DGD whose worker uses the componentType "main" of older releases
    document = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "legacy"},
        "spec": {
            "services": {
                "Worker": {
                    "componentType": "main",
                    "extraPodSpec": {"mainContainer": {"image": runtime_image()}},
                }
            }
        },
    }

    # when it is admitted and converted
    verdict = admit_document(document)
    converted = dgd_to_v1beta1(document)

    # then it is valid with a warning at its v1alpha1 path, and the value survives in the annotation
    assert verdict.outcome == "valid"
    assert [str(w) for w in verdict.warnings] == [
        'spec.services[Worker].componentType: "main" is a legacy component type with no v1beta1 value: the '
        "component is converted without a type (a generic component) and the value is kept in the "
        "nvidia.com/dgd-spec annotation"
    ]
    assert "type" not in converted["spec"]["components"][0]
    assert '"componentType":"main"' in converted["metadata"]["annotations"]["nvidia.com/dgd-spec"]
