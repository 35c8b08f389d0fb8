"""What a worker's pod holds beyond its main container's rules: the documented env literals, init containers,
the MPI SSH secret, and the Ray head of elastic EP (podspec §4, §7).
"""

from __future__ import annotations

from tests.unit.domain.podspec_cases import (
    ORIGIN_1_4,
    TP2,
    TRTLLM,
    VLLM,
    component,
    env_names,
    render,
)


def test_worker_env_values_are_the_documented_literals() -> None:
    # given a decode worker carrying a worker-hash label
    spec = component("decode", labels={"nvidia.com/dynamo-worker-hash": "0123abcd"})

    # when it is rendered
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in render(spec)["containers"][0]["env"]}

    # then every value is the literal text upstream writes, the hash suffix included
    assert env == {
        "DYN_COMPONENT": "decode",
        "DYN_DISCOVERY_BACKEND": "kubernetes",
        "DYN_FORWARDPASS_METRIC_PORT": "20380",
        "DYN_HEALTH_CHECK_ENABLED": "false",
        "DYN_NAMESPACE": "ns-graph",
        "DYN_NAMESPACE_WORKER_SUFFIX": "0123abcd",
        "DYN_PARENT_DGD_K8S_NAME": "graph",
        "DYN_PARENT_DGD_K8S_NAMESPACE": "ns",
        "DYN_SYSTEM_ENABLED": "true",
        "DYN_SYSTEM_PORT": "9090",
        "DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS": '["generate"]',
        "NIXL_TELEMETRY_ENABLE": "n",
        "NIXL_TELEMETRY_EXPORTER": "prometheus",
        "NIXL_TELEMETRY_PROMETHEUS_PORT": "19090",
        "POD_NAME": {"fieldRef": {"fieldPath": "metadata.name"}},
        "POD_NAMESPACE": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        "POD_UID": {"fieldRef": {"fieldPath": "metadata.uid"}},
    }


def test_mp_worker_waits_for_the_leader_in_an_init_container() -> None:
    # given a 2-node vLLM worker that launches with the mp backend
    spec = component("worker", command=VLLM, args=TP2, gpus=1, nodes=2, annotations=ORIGIN_1_4)

    # when its worker role is rendered on Grove
    pod = render(spec, role="worker", backend="vllm")

    # then an init container waits for the leader's master port, with the script ConfigMap mounted
    assert pod["initContainers"] == [
        {
            "name": "wait-for-leader-mp",
            "image": "nvcr.io/nvidia/ai-dynamo/runtime:1.4.0",
            "command": [
                "sh",
                "-c",
                'export LEADER_HOST="${GROVE_PCSG_NAME}-${GROVE_PCSG_INDEX}-engine-ldr-0.'
                '${GROVE_HEADLESS_SERVICE}" LEADER_PORT="29500" && exec python3 /scripts/wait-for-leader.py',
            ],
            "resources": {},
            "volumeMounts": [{"name": "wait-leader-script", "mountPath": "/scripts", "readOnly": True}],
        }
    ]
    assert [v["name"] for v in pod["volumes"]] == ["shared-memory", "wait-leader-script"]
    assert pod["volumes"][1]["configMap"] == {"name": "graph-wait-leader-script"}


def test_trtllm_multinode_pods_mount_the_mpi_ssh_secret_before_shared_memory() -> None:
    # given a 2-node TRT-LLM worker
    spec = component("worker", command=TRTLLM, args=TP2, gpus=4, nodes=2)

    # when its leader is rendered
    pod = render(spec, role="leader", backend="trtllm")

    # then the SSH key Secret is a volume with mode 0644 and mounted read-only at /ssh-pk, before /dev/shm
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "mpi-run-ssh-secret", "mountPath": "/ssh-pk", "readOnly": True},
        {"name": "shared-memory", "mountPath": "/dev/shm"},
    ]
    assert pod["volumes"][0] == {
        "name": "mpi-run-ssh-secret",
        "secret": {"secretName": "mpi-run-ssh-secret", "defaultMode": 0o644},
    }


def test_trtllm_lws_leader_waits_for_worker_dns_before_mpirun() -> None:
    # given a 3-node TRT-LLM worker on the LeaderWorkerSet flavour
    spec = component("worker", command=TRTLLM, args=TP2, gpus=2, nodes=3)

    # when its leader is rendered for LWS
    args = render(spec, role="leader", backend="trtllm", deployer="lws")["containers"][0]["args"]

    # then the DNS wait names both worker addresses and comes right before mpirun over three hosts
    workers = " ".join(f"$(echo \"$LWS_LEADER_ADDRESS\" | sed 's/\\./-{i}\\./')" for i in (1, 2))
    assert f"for worker in {workers}; do" in args[0]
    assert 'echo "All workers DNS ready" && mpirun ' in args[0]
    assert "--oversubscribe -n 6 -H $(LWS_LEADER_ADDRESS),$(echo" in args[0]


def test_elastic_ep_single_pod_runs_a_ray_head_and_exports_the_pod_ip() -> None:
    # given a single-pod vLLM worker asking for elastic expert parallelism on the Ray DP backend
    args = ["--enable-elastic-ep", "--data-parallel-backend", "ray", "--model", "a b"]
    spec = component("worker", command=VLLM, args=args)

    # when it is rendered
    main = render(spec, backend="vllm")["containers"][0]

    # then the engine is exec'd behind a Ray head bound to the pod IP, with both IP variables appended
    assert main["command"] == ["/bin/sh", "-c"]
    assert main["args"] == [
        'ray start --head --port=6379 --node-ip-address="$POD_IP" --block & i=0; until python3 -c '
        "\"import socket; s=socket.create_connection(('127.0.0.1',6379),timeout=1); s.close()\" 2>/dev/null; "
        'do i=$((i+1)); [ "$i" -ge 150 ] && '
        '{ echo "ERROR: Ray head did not start within 300s" >&2; exit 1; }; sleep 2; done && '
        "exec python3 -m dynamo.vllm --enable-elastic-ep --data-parallel-backend ray --model 'a b'"
    ]
    assert env_names(main)[-2:] == ["POD_IP", "VLLM_DP_MASTER_IP"]
