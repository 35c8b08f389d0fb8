"""Webhook defaults applied in memory before rendering, and the names rendering builds (supplement §3-§4)."""

from __future__ import annotations

from typing import Any

import msgspec

from dgd.domain.admission.defaulting import default_in_memory
from dgd.domain.naming import service_name, shorten, worker_dcd_name
from dgd.domain.worker_hash import runtime_version, worker_hash
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment


def _dgd(annotations: dict[str, str] | None = None) -> DynamoGraphDeployment:
    document: dict[str, Any] = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": "g", "annotations": annotations or {}},
        "spec": {"components": [{"name": "w", "type": "worker"}]},
    }
    return msgspec.convert(document, DynamoGraphDeployment)


def test_dgd_without_origin_version_counts_as_created_by_upstream_1_4() -> None:
    # given a DGD the webhook never saw
    defaulted = default_in_memory(_dgd(), grove_enabled=True)

    # then it gets the compatible release's origin version, the Grove provider, replicas and minAvailable
    annotations = defaulted.metadata.annotations or {}
    assert annotations["nvidia.com/dynamo-operator-origin-version"] == "1.4.0"
    assert annotations["nvidia.com/workload-provider"] == "grove"
    component = (defaulted.spec.components or [])[0]
    assert (component.replicas, component.min_available) == (1, 1)


def test_recorded_provider_and_origin_version_are_kept() -> None:
    # given a DGD created on the Component pathway by an older operator
    dgd = _dgd(
        {"nvidia.com/workload-provider": "component", "nvidia.com/dynamo-operator-origin-version": "0.9.0"}
    )

    # when defaulted in memory with Grove available
    defaulted = default_in_memory(dgd, grove_enabled=True)

    # then nothing recorded changes, and the Component pathway gets no minAvailable
    annotations = defaulted.metadata.annotations or {}
    assert annotations["nvidia.com/workload-provider"] == "component"
    assert annotations["nvidia.com/dynamo-operator-origin-version"] == "0.9.0"
    assert (defaulted.spec.components or [])[0].min_available is None


def test_in_memory_defaults_never_touch_the_input() -> None:
    dgd = _dgd()
    default_in_memory(dgd, grove_enabled=True)
    assert dgd.metadata.annotations == {}


def test_shortened_names_are_stable_distinct_and_valid() -> None:
    # given two long names that differ only at the end
    first, second = "a" * 70 + "-x", "a" * 70 + "-y"

    # then both are cut to 63 with different hash suffixes, and short names are untouched
    assert len(shorten(first)) == len(shorten(second)) == 63
    assert shorten(first) != shorten(second)
    assert shorten(first) == shorten(first)
    assert shorten("short") == "short"
    assert not shorten("a" * 53 + ".b" * 10).split("-")[0].endswith(".")


def test_worker_dcd_name_keeps_its_hash_and_service_names_are_normalized() -> None:
    assert worker_dcd_name("g", "Decode", "0123abcd") == "g-decode-0123abcd"
    assert worker_dcd_name("g" * 60, "decode", "0123abcd").endswith("-0123abcd")
    assert service_name("my.graph", "Frontend") == "my-graph-frontend"


def test_runtime_version_comes_from_the_override_else_a_semver_image_tag() -> None:
    def component(image: str, override: str | None = None) -> ComponentSpec:
        template = {"spec": {"containers": [{"name": "main", "image": image}]}}
        fields = {"runtimeVersionOverride": override} if override else {}
        return msgspec.convert({"name": "w", "podTemplate": template, **fields}, ComponentSpec)

    assert runtime_version(component("r:1.5.0-rc1")) == (1, 5, 0)
    assert runtime_version(component("registry:5000/r:v2.0.1")) == (2, 0, 1)
    assert runtime_version(component("r:my-tag")) is None
    assert runtime_version(component("r:my-tag", "1.6.0")) == (1, 6, 0)


def test_runtime_version_override_enters_the_worker_hash_only_from_1_5_0() -> None:
    def hashed(override: str) -> str:
        dgd = default_in_memory(_dgd(), grove_enabled=True)
        component = msgspec.structs.replace(
            (dgd.spec.components or [])[0],
            runtime_version_override=override,
            pod_template={"spec": {"containers": [{"name": "main", "image": "r:my-tag"}]}},
        )
        spec = msgspec.structs.replace(dgd.spec, components=[component])
        meta = msgspec.structs.replace(dgd.metadata, namespace="ns")
        return worker_hash(msgspec.structs.replace(dgd, spec=spec, metadata=meta))

    # below the threshold the override is not part of the hash; from it on, every version is
    assert hashed("1.0.0") == hashed("1.1.0")
    assert hashed("1.5.0") != hashed("1.6.0")
    assert hashed("1.4.0") != hashed("1.5.0")
