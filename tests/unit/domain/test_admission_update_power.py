"""Admission of DGD updates, §4.5 rule 3 for a component's GPU power annotation and the counts it pins, its
runtime version and its main image.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.domain.admission_update_cases import (
    POWER,
    WORKER,
    _document,
    _messages,
    _update,
    _worker_main,
)
from tests.unit.domain.dgd_cases import runtime_image


def _power(document: dict[str, Any], watts: str) -> dict[str, Any]:
    template = document["spec"]["components"][1]["podTemplate"]
    template["metadata"] = {"annotations": {POWER: watts}}
    return document


@pytest.mark.parametrize(
    ("before", "after", "shown"), [(None, "300", '"300" is not allowed (was null)'), ("300", "350", None)]
)
def test_power_annotation_cannot_be_added_or_changed(
    before: str | None, after: str, shown: str | None
) -> None:
    """§4.5 rule 3: the power annotation cannot be added, removed or changed."""
    # given a worker whose power annotation is added or changed
    old = _document() if before is None else _power(_document(), before)
    new = _power(_document(), after)

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused as immutable
    message = shown or '"350" is not allowed (was "300")'
    assert _messages(verdict) == [
        f"{WORKER}.podTemplate.metadata.annotations[{POWER}]: {message}: field is immutable"
    ]


def test_power_annotation_cannot_be_removed() -> None:
    """§4.5 rule 3: removing the power annotation is refused too."""
    # given a worker whose power annotation is removed
    old, new = _power(_document(), "300"), _document()

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f'{WORKER}.podTemplate.metadata.annotations[{POWER}]: null is not allowed (was "300"): '
        "field is immutable"
    ]


def test_gpu_count_is_immutable_while_the_power_annotation_is_set() -> None:
    """§4.5 rule 3: with the power annotation, the main GPU count (limit, else request) is fixed."""
    # given a power-managed worker whose GPU limit moves from 1 to a request of 2
    old, new = _power(_document(), "300"), _power(_document(), "300")
    _worker_main(new)["resources"] = {"requests": {"nvidia.com/gpu": "2"}}

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.podTemplate.spec.containers[0].resources: 2 is not allowed (was 1): GPU count: field is "
        f'immutable while annotation "{POWER}" is set'
    ]


def test_node_count_is_immutable_while_the_power_annotation_is_set() -> None:
    """§4.5 rule 3: with the power annotation, multinode.nodeCount is fixed."""
    # given a power-managed multinode worker that grows from two nodes to three
    old = _power(_document(multinode={"nodeCount": 2}), "300")
    new = _power(_document(multinode={"nodeCount": 3}), "300")

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused
    assert _messages(verdict) == [
        f"{WORKER}.multinode.nodeCount: 3 is not allowed (was 2): field is immutable while annotation "
        f'"{POWER}" is set'
    ]


def test_gpu_count_may_change_without_the_power_annotation() -> None:
    """§4.5 rule 3: the GPU count is free when power-aware planning is off."""
    # given a worker whose GPU limit changes, without the power annotation
    old, new = _document(), _document()
    _worker_main(new)["resources"] = {"limits": {"nvidia.com/gpu": "2"}}

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed
    assert verdict.errors == []


@pytest.mark.parametrize(
    ("old_tag", "new_tag", "override", "warned"),
    [
        ("1.5.0", "latest", None, True),  # a newly invalid pair
        ("1.5.0", "latest", "1.5.0", False),  # made valid by the override
        ("latest", "nightly", None, True),  # a changed invalid pair is newly invalid
        ("1.5.0", "1.6.0", None, False),  # still valid
    ],
)
def test_runtime_version_is_ratcheted(old_tag: str, new_tag: str, override: str | None, warned: bool) -> None:
    """§4.5 rule 3: a newly invalid (image, override) pair is reported; we warn (docs/decisions.md)."""
    # given a worker whose image tag (and maybe override) changes
    old, new = _document(), _document() if override is None else _document(runtimeVersionOverride=override)
    _worker_main(old)["image"] = runtime_image(old_tag)
    _worker_main(new)["image"] = runtime_image(new_tag)

    # when the update is admitted
    verdict = _update(old, new)

    # then it is allowed, with a warning exactly when the new pair is newly invalid
    assert verdict.errors == []
    expected = [
        f"{WORKER}.runtimeVersionOverride: is required when the main container image "
        f'"{runtime_image(new_tag)}" has no semantic-version tag (upstream admission refuses this change)'
    ]
    assert [str(w) for w in verdict.warnings] == (expected if warned else [])


def test_main_image_cannot_be_removed_once_set() -> None:
    """§4.5 rule 3: the image cannot be removed once set (an error: no pod could run, docs/decisions.md)."""
    # given a worker whose main image is removed
    old, new = _document(), _document()
    del _worker_main(new)["image"]

    # when the update is admitted
    verdict = _update(old, new)

    # then it is refused at the field
    assert [str(e) for e in verdict.errors] == [
        f"{WORKER}.podTemplate.spec.containers[0].image: is required: the main container must specify a "
        "non-empty image"
    ]
    assert verdict.warnings == []
