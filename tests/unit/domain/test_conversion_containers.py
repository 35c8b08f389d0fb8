"""v1alpha1 → v1beta1 DGD conversion of a component's pod template: the frontend sidecar, the main
container's env and mounts, the compilation cache and resources (supplement §1).
"""

from __future__ import annotations

from dgd.domain.conversion.dgd import dgd_to_v1beta1
from tests.unit.domain.conversion_fixtures import (
    _components,
    _containers,
    _dgd,
    _preserved,
)


def test_frontend_sidecar_becomes_the_last_container_and_is_named_on_the_component() -> None:
    # given a service with a user container and a frontend sidecar
    document = _dgd(
        {
            "Epp": {
                "componentType": "epp",
                "extraPodSpec": {
                    "mainContainer": {"image": "epp:1"},
                    "containers": [{"name": "helper", "image": "helper:1"}],
                },
                "frontendSidecar": {
                    "image": "frontend:1",
                    "args": ["-m", "dynamo.frontend"],
                    "envFromSecret": "hf-token",
                    "envs": [{"name": "MODE", "value": "direct"}],
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then main, the user container and the sidecar appear in that order
    epp = _components(converted)["Epp"]
    assert epp["frontendSidecar"] == "sidecar-frontend"
    assert _containers(epp) == [
        {"name": "main", "image": "epp:1"},
        {"name": "helper", "image": "helper:1"},
        {
            "name": "sidecar-frontend",
            "image": "frontend:1",
            "args": ["-m", "dynamo.frontend"],
            "env": [{"name": "MODE", "value": "direct"}],
            "envFrom": [{"secretRef": {"name": "hf-token"}}],
        },
    ]
    assert "frontendSidecar" in _preserved(converted)["services"]["Epp"]


def test_a_user_container_named_like_the_frontend_sidecar_is_not_duplicated() -> None:
    # given an extraPodSpec that already declares the sidecar container
    document = _dgd(
        {
            "Epp": {
                "componentType": "epp",
                "extraPodSpec": {"containers": [{"name": "sidecar-frontend", "image": "mine:1"}]},
                "frontendSidecar": {"image": "frontend:1"},
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the user's container is kept once and the whole extraPodSpec is preserved
    containers = _containers(_components(converted)["Epp"])
    assert containers == [{"name": "main"}, {"name": "sidecar-frontend", "image": "mine:1"}]
    assert _preserved(converted)["services"]["Epp"]["extraPodSpec"] == {
        "containers": [{"name": "sidecar-frontend", "image": "mine:1", "resources": {}}]
    }


def test_main_container_env_wins_in_place_over_dedicated_envs() -> None:
    # given dedicated envs and mainContainer envs sharing a name
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "envs": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "extraPodSpec": {
                    "mainContainer": {
                        "image": "w:1",
                        "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                        "startupProbe": {"tcpSocket": {"port": 8000}},
                    }
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then B keeps its position with the mainContainer value, C follows, startupProbe is kept
    main = _containers(_components(converted)["Worker"])[0]
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "3"},
        {"name": "C", "value": "4"},
    ]
    assert main["startupProbe"] == {"tcpSocket": {"port": 8000}}
    assert _preserved(converted)["services"]["Worker"] == {
        "envs": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "extraPodSpec": {
            "mainContainer": {
                "name": "",
                "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}],
                "resources": {},
            }
        },
    }


def test_main_container_values_win_field_by_field_and_its_mounts_come_first() -> None:
    # given dedicated resources, probe and mount, overlaid by mainContainer values
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
                "livenessProbe": {"httpGet": {"path": "/live", "port": 9090}, "periodSeconds": 10},
                "volumeMounts": [{"name": "data", "mountPoint": "/data"}],
                "extraPodSpec": {
                    "mainContainer": {
                        "resources": {"limits": {"cpu": "4000m"}},
                        "livenessProbe": {"periodSeconds": 5},
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                    }
                },
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then maps and probes merge key by key, quantities are canonical, mainContainer mounts lead
    main = _containers(_components(converted)["Worker"])[0]
    assert main["resources"] == {"limits": {"cpu": "4", "memory": "4Gi"}}
    assert main["livenessProbe"] == {"httpGet": {"path": "/live", "port": 9090}, "periodSeconds": 5}
    assert main["volumeMounts"] == [
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "data", "mountPath": "/data"},
    ]


def test_compilation_cache_comes_from_the_first_flagged_mount_and_several_flags_are_preserved() -> None:
    # given two cache-flagged mounts around a data mount
    mounts = [
        {"name": "cache-a", "mountPoint": "/cache/a", "useAsCompilationCache": True},
        {"name": "data", "mountPoint": "/data"},
        {"name": "cache-b", "useAsCompilationCache": True},
    ]
    document = _dgd({"Worker": {"componentType": "worker", "volumeMounts": mounts}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the first flagged mount is the cache, every mount is on main, the flat list is preserved
    worker = _components(converted)["Worker"]
    assert worker["compilationCache"] == {"pvcName": "cache-a", "mountPath": "/cache/a"}
    assert _containers(worker)[0]["volumeMounts"] == [
        {"name": "cache-a", "mountPath": "/cache/a"},
        {"name": "data", "mountPath": "/data"},
        {"name": "cache-b", "mountPath": ""},
    ]
    assert _preserved(converted)["services"]["Worker"]["volumeMounts"] == mounts


def test_a_component_with_only_a_cache_mount_gets_no_pod_template() -> None:
    # given a service whose only pod content is one cache mount without a mount point
    document = _dgd(
        {
            "Worker": {
                "componentType": "worker",
                "volumeMounts": [{"name": "c", "useAsCompilationCache": True}],
            }
        }
    )

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the cache has no path and there is no template and no payload
    worker = _components(converted)["Worker"]
    assert worker["compilationCache"] == {"pvcName": "c"}
    assert "podTemplate" not in worker
    assert "annotations" not in converted["metadata"]


def test_unparseable_resource_quantities_are_dropped_and_the_resources_preserved() -> None:
    # given resources with a bad cpu value, a custom GPU type and a non-canonical memory spelling
    resources = {
        "limits": {"cpu": "lots", "memory": "2048Mi", "gpu": "2", "gpuType": "gpu.intel.com/xe"},
        "requests": {"custom": {"example.com/fpga": "1"}},
        "claims": [{"name": "gpus"}],
    }
    document = _dgd({"Worker": {"componentType": "worker", "resources": resources}})

    # when converted
    converted = dgd_to_v1beta1(document)

    # then the bad value is gone, values are canonical, the GPU type is the key, claims are copied
    main = _containers(_components(converted)["Worker"])[0]
    assert main["resources"] == {
        "limits": {"memory": "2Gi", "gpu.intel.com/xe": "2"},
        "requests": {"example.com/fpga": "1"},
        "claims": [{"name": "gpus"}],
    }
    assert _preserved(converted)["services"]["Worker"] == {"resources": resources}
