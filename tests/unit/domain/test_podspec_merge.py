"""How the user's pod template meets the operator's defaults (podspec §3, §5, §8, §10)."""

from __future__ import annotations

import pytest

from dgd.domain.admission.config import load_config
from dgd.domain.render.errors import RenderError
from dgd.messages.config import InfrastructureConfig, OperatorConfig
from tests.unit.domain.podspec_cases import component, env_names, render


def test_frontend_user_args_alone_keep_the_default_command() -> None:
    # given a frontend whose main container sets only args
    spec = component("frontend", args=["-m", "dynamo.frontend", "--http-port", "8080"])

    # when it is rendered
    main = render(spec)["containers"][0]

    # then command and args are replaced independently
    assert main["command"] == ["python3"]
    assert main["args"] == ["-m", "dynamo.frontend", "--http-port", "8080"]


def test_frontend_user_command_alone_keeps_the_default_args() -> None:
    # given a frontend whose main container sets only a command
    main = render(component("frontend", command=["python"]))["containers"][0]

    # then the default args stay
    assert (main["command"], main["args"]) == (["python"], ["-m", "dynamo.frontend"])


def test_user_lists_replace_default_lists_wholesale_and_zero_scalars_never_override() -> None:
    # given user ports and a zero termination grace period
    spec = component(
        "worker",
        main={"ports": [{"name": "custom", "containerPort": 1234}]},
        pod={"terminationGracePeriodSeconds": 0, "nodeSelector": {"gpu": "a100"}},
    )

    # when it is rendered
    pod = render(spec)

    # then the ports are the user's only, 60 s stays, and other pod fields come through
    assert pod["containers"][0]["ports"] == [{"name": "custom", "containerPort": 1234}]
    assert pod["terminationGracePeriodSeconds"] == 60
    assert pod["nodeSelector"] == {"gpu": "a100"}


def test_user_env_overrides_defaults_by_name_and_the_result_is_byte_sorted() -> None:
    # given user env that overrides one default and adds names around it
    env = [{"name": "a_lower", "value": "1"}, {"name": "DYN_SYSTEM_PORT", "value": "9999"}, {"name": "ZED"}]
    main = render(component("worker", main={"env": env}))["containers"][0]

    # then the user's entry wins and the whole list is in byte order (upper-case before '_' and lower-case)
    values = {e["name"]: e.get("value") for e in main["env"]}
    assert values["DYN_SYSTEM_PORT"] == "9999"
    names = env_names(main)
    assert names == sorted(names, key=lambda n: n.encode())
    assert names[-1] == "a_lower"
    assert "ZED" in names


def test_user_probe_replaces_the_default_probe_whole() -> None:
    # given a user readiness probe with only an exec handler
    probe = {"exec": {"command": ["true"]}}
    main = render(component("worker", main={"readinessProbe": probe}))["containers"][0]

    # then it is not merged with the default HTTP probe
    assert main["readinessProbe"] == probe
    assert main["livenessProbe"]["httpGet"] == {"path": "/live", "port": "system"}


def test_any_user_security_context_suppresses_the_default_fs_group() -> None:
    # given an empty user securityContext
    pod = render(component("worker", pod={"securityContext": {}}))

    # then it is kept as is
    assert pod["securityContext"] == {}


def test_user_service_account_wins_over_planner_default_and_discovery_account() -> None:
    # given a planner with its own service account
    pod = render(component("planner", pod={"serviceAccountName": "mine"}))

    # then that account is used
    assert pod["serviceAccountName"] == "mine"


def test_planner_keeps_its_service_account_over_the_discovery_account() -> None:
    # given a planner without a service account
    pod = render(component("planner"))

    # then the planner account is set, not the discovery one
    assert pod["serviceAccountName"] == "planner-serviceaccount"


def test_etcd_discovery_drops_discovery_env_and_service_account() -> None:
    # given a component whose pod template asks for etcd discovery
    spec = component("worker", annotations={"nvidia.com/dynamo-discovery-backend": "etcd"})

    # when it is rendered
    pod = render(spec)

    # then there is no discovery env and no discovery service account
    assert "DYN_DISCOVERY_BACKEND" not in env_names(pod["containers"][0])
    assert "serviceAccountName" not in pod


def test_container_discovery_mode_adds_container_identity_env() -> None:
    # given the container discovery mode
    spec = component("worker", annotations={"nvidia.com/dynamo-kube-discovery-mode": "container"})

    # when it is rendered
    env = {e["name"]: e.get("value") for e in render(spec)["containers"][0]["env"]}

    # then the container announces itself
    assert env["CONTAINER_NAME"] == "main"
    assert env["DYN_KUBE_DISCOVERY_MODE"] == "container"


@pytest.mark.parametrize(
    ("size", "expected"),
    [(None, "8Gi"), ("1024Mi", "1Gi"), ("512Mi", "512Mi"), ("2000M", "2G"), (2**31, "2147483648")],
)
def test_shared_memory_is_the_last_volume_in_canonical_form(size: object, expected: str) -> None:
    # given a component with a user volume and the given shared memory size
    fields = {} if size is None else {"sharedMemorySize": size}
    spec = component(
        "worker",
        main={
            "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "old", "mountPath": "/dev/shm"}]
        },
        pod={"volumes": [{"name": "data", "emptyDir": {}}, {"name": "shared-memory", "emptyDir": {}}]},
        **fields,
    )

    # when it is rendered
    pod = render(spec)

    # then /dev/shm is the operator's tmpfs, last among mounts and volumes
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "data", "mountPath": "/data"},
        {"name": "shared-memory", "mountPath": "/dev/shm"},
    ]
    assert pod["volumes"] == [
        {"name": "data", "emptyDir": {}},
        {"name": "shared-memory", "emptyDir": {"medium": "Memory", "sizeLimit": expected}},
    ]


def test_zero_shared_memory_means_no_tmpfs() -> None:
    # given sharedMemorySize 0
    pod = render(component("worker", sharedMemorySize="0"))

    # then there is neither volume nor mount
    assert "volumes" not in pod
    assert "volumeMounts" not in pod["containers"][0]


def test_volumes_follow_main_mount_order_and_missing_ones_become_claims() -> None:
    # given mounts of a declared volume, an undeclared one, and a volume nobody mounts
    spec = component(
        "worker",
        sharedMemorySize="0",
        main={"volumeMounts": [{"name": "b", "mountPath": "/b"}, {"name": "models", "mountPath": "/m"}]},
        pod={"volumes": [{"name": "unused", "emptyDir": {}}, {"name": "b", "emptyDir": {}}]},
    )

    # when it is rendered
    volumes = render(spec)["volumes"]

    # then mounted volumes come first, in mount order, an undeclared one as its claim, then the rest
    assert volumes == [
        {"name": "b", "emptyDir": {}},
        {"name": "models", "persistentVolumeClaim": {"claimName": "models"}},
        {"name": "unused", "emptyDir": {}},
    ]


def test_vllm_compilation_cache_defaults_its_path_and_declares_its_claim() -> None:
    # given a vLLM worker with a compilation cache and no mount path
    spec = component("worker", compilationCache={"pvcName": "cache"})

    # when it is rendered
    pod = render(spec, backend="vllm")

    # then the claim is mounted at vLLM's cache path before /dev/shm, and no env names a user path
    main = pod["containers"][0]
    assert main["volumeMounts"][0] == {"name": "cache", "mountPath": "/root/.cache/vllm"}
    assert pod["volumes"][0] == {"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}}
    assert "VLLM_CACHE_ROOT" not in env_names(main)


def test_vllm_compilation_cache_with_a_path_exports_it_last() -> None:
    # given a vLLM worker with a compilation cache mount path
    spec = component("worker", compilationCache={"pvcName": "cache", "mountPath": "/cache"})

    # when it is rendered
    main = render(spec, backend="vllm")["containers"][0]

    # then VLLM_CACHE_ROOT is appended after the sorted env
    assert main["env"][-1] == {"name": "VLLM_CACHE_ROOT", "value": "/cache"}


def test_compilation_cache_without_path_is_refused_for_backends_without_a_default() -> None:
    # given an SGLang worker with a compilation cache and no mount path
    spec = component("worker", compilationCache={"pvcName": "cache"})

    # when it is rendered, then the error names the missing field
    with pytest.raises(RenderError, match=r"compilationCache\.mountPath: is required"):
        render(spec, backend="sglang")


def test_mount_without_path_is_refused() -> None:
    # given a main-container mount with no mountPath
    spec = component("worker", main={"volumeMounts": [{"name": "data"}]})

    # when it is rendered, then the error names the mount
    with pytest.raises(RenderError, match=r"volumeMounts\[0\]: name and mountPath are required"):
        render(spec)


def test_fractional_gpu_count_is_refused_where_it_is_needed() -> None:
    # given a multinode vLLM worker asking for half a GPU
    spec = component(
        "worker",
        command=["python3", "-m", "dynamo.vllm"],
        nodes=2,
        main={"resources": {"limits": {"nvidia.com/gpu": "500m"}}},
    )

    # when its leader is rendered, then the GPU count is refused with the resource named
    with pytest.raises(RenderError, match=r"nvidia\.com/gpu\]: '500m' is not a whole number of GPUs"):
        render(spec, role="leader", backend="vllm")


def test_infrastructure_env_is_injected_under_user_env() -> None:
    # given an operator config with NATS and etcd addresses, and a user override of NATS
    config = OperatorConfig(
        infrastructure=InfrastructureConfig(nats_address="nats://n:4222", etcd_address="e:2379")
    )
    spec = component("worker", main={"env": [{"name": "NATS_SERVER", "value": "mine"}]})

    # when it is rendered
    env = {e["name"]: e.get("value") for e in render(spec, config=config)["containers"][0]["env"]}

    # then both are present and the user's value wins
    assert env["NATS_SERVER"] == "mine"
    assert env["ETCD_ENDPOINTS"] == "e:2379"


def test_sidecars_follow_main_in_template_order() -> None:
    # given two sidecars around the main container in the template
    spec = component("worker", sidecars=[{"name": "z", "image": "z"}, {"name": "a", "image": "a"}])

    # when it is rendered
    names = [c["name"] for c in render(spec)["containers"]]

    # then main comes first, sidecars keep their order and get no operator defaults
    assert names == ["main", "z", "a"]


def test_frontend_sidecar_gets_frontend_defaults_and_the_main_mounts() -> None:
    # given a worker with a sidecar named as its frontend sidecar
    spec = component(
        "worker",
        sharedMemorySize="0",
        main={"volumeMounts": [{"name": "models", "mountPath": "/models"}]},
        sidecars=[{"name": "fe", "image": "fe:1"}],
        frontendSidecar="fe",
    )

    # when it is rendered
    sidecar = render(spec)["containers"][1]

    # then it runs the frontend with the frontend env, ports, probes and the models mount
    assert sidecar["name"] == "fe"
    assert sidecar["command"] == ["python3"]
    assert sidecar["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert {"name": "DYN_COMPONENT", "value": "frontend"} in sidecar["env"]
    assert sidecar["volumeMounts"] == [{"name": "models", "mountPath": "/models"}]


def test_image_pull_secrets_are_discovered_per_registry_unless_disabled() -> None:
    # given secrets known for one registry and a main image from it
    secrets = {"nvcr.io": ["b", "a"]}
    spec = component("worker", pod={"imagePullSecrets": [{"name": "mine"}]})

    # when it is rendered with and without discovery disabled
    found = render(spec, pull_secrets=secrets)["imagePullSecrets"]
    disabled = component("worker", annotations={"nvidia.com/disable-image-pull-secret-discovery": "true"})

    # then the user's come first, then the registry's sorted; disabled pods get none
    assert found == [{"name": "mine"}, {"name": "a"}, {"name": "b"}]
    assert "imagePullSecrets" not in render(disabled, pull_secrets=secrets)


def test_epp_pod_reads_its_config_map_and_gets_its_own_account() -> None:
    # given an EPP component referring to a ConfigMap key
    spec = component("epp", eppConfig={"configMapRef": {"name": "cfg", "key": "k.yaml"}})

    # when it is rendered
    pod = render(spec)

    # then the config volume maps that key to the fixed file name
    assert pod["serviceAccountName"] == "epp-serviceaccount"
    assert pod["terminationGracePeriodSeconds"] == 130
    assert pod["volumes"][:2] == [
        {
            "name": "epp-config",
            "configMap": {"name": "cfg", "items": [{"key": "k.yaml", "path": "epp-config-dynamo.yaml"}]},
        },
        {"name": "hf-cache", "emptyDir": {}},
    ]


def test_loaded_config_with_infrastructure_reaches_the_pod() -> None:
    # given a YAML operator config with a Prometheus endpoint
    config = load_config("infrastructure:\n  prometheusEndpoint: http://prom:9090\n")

    # when a frontend is rendered with it
    env = {
        e["name"]: e.get("value")
        for e in render(component("frontend"), config=config)["containers"][0]["env"]
    }

    # then the endpoint is in the env
    assert env["PROMETHEUS_ENDPOINT"] == "http://prom:9090"
