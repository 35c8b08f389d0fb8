"""Pod-spec rules per component type x backend x single/multinode (podspec §4, §5.3, §7), exact values: each
case renders one role of one component and states its command, args, env names in order, probes and ports,
and vLLM cases carry the origin-version annotation a 1.4 operator propagates, so multinode tensor
parallelism uses the mp backend unless the case says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from dgd.domain.render.backends import Backend, RenderRole
from dgd.domain.render.multinode_hosts import Deployer
from tests.unit.domain.podspec_cases import (
    EPP_ENV,
    EPP_PROBES,
    FRONTEND_ENV,
    FRONTEND_PROBES,
    GROVE_LEADER,
    GROVE_RANK,
    GROVE_WORKER_0,
    ORIGIN_1_4,
    PLANNER_ENV,
    SGLANG,
    TP2,
    TRTLLM,
    TRTLLM_WORKER_READINESS,
    VLLM,
    WORKER_ENV,
    WORKER_PORTS,
    WORKER_PROBES,
    component,
    env_names,
    probes,
    render,
)

MP_FLAGS = f"--distributed-executor-backend mp --nnodes 2 --master-addr {GROVE_LEADER} --master-port 29500"
LWS_MP_FLAGS = (
    "--distributed-executor-backend mp --nnodes 2 --master-addr $(LWS_LEADER_ADDRESS) --master-port 29500"
)
NIXL_HOST = ["VLLM_NIXL_SIDE_CHANNEL_HOST"]
SSH_KEYS = (
    "ls -la /ssh-pk/ && cp /ssh-pk/private.key $HOME/.ssh/id_rsa && "
    "cp /ssh-pk/private.key.pub $HOME/.ssh/id_rsa.pub && "
    "cp /ssh-pk/private.key.pub $HOME/.ssh/authorized_keys && chmod 600 $HOME/.ssh/id_rsa "
    "$HOME/.ssh/authorized_keys && chmod 644 $HOME/.ssh/id_rsa.pub && printf 'Host *\\nIdentityFile "
    "'$HOME'/.ssh/id_rsa\\nStrictHostKeyChecking no\\nPort 2222\\n' > $HOME/.ssh/config"
)
SSHD = (
    "mkdir -p $HOME/.ssh $HOME/.ssh/host_keys $HOME/.ssh/run && " + SSH_KEYS + " && "
    "ssh-keygen -t rsa -f $HOME/.ssh/host_keys/ssh_host_rsa_key -N '' && "
    "ssh-keygen -t ecdsa -f $HOME/.ssh/host_keys/ssh_host_ecdsa_key -N '' && "
    "ssh-keygen -t ed25519 -f $HOME/.ssh/host_keys/ssh_host_ed25519_key -N '' && "
    "printf 'Port 2222\\nHostKey '$HOME'/.ssh/host_keys/ssh_host_rsa_key\\nHostKey "
    "'$HOME'/.ssh/host_keys/ssh_host_ecdsa_key\\nHostKey '$HOME'/.ssh/host_keys/ssh_host_ed25519_key\\n"
    "PidFile '$HOME'/.ssh/run/sshd.pid\\nStrictModes no\\nPermitRootLogin yes\\nPasswordAuthentication no\\n"
    "PubkeyAuthentication yes\\nAuthorizedKeysFile '$HOME'/.ssh/authorized_keys\\n' > $HOME/.ssh/sshd_config"
    " && /usr/sbin/sshd -D -f $HOME/.ssh/sshd_config"
)
#: A TRT-LLM multinode worker's env: the worker env, and the hostnames mpirun ranks keep.
TRTLLM_MULTINODE_ENV = [*WORKER_ENV, "OMPI_MCA_orte_keep_fqdn_hostnames"]
#: The container env plus the fixed names every mpirun rank receives, sorted (podspec §7.5).
MPI_NAMES = [
    *TRTLLM_MULTINODE_ENV,
    *["CPATH", "CUDA_VISIBLE_DEVICES", "MODEL_PATH", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"],
    *[
        "TOKENIZERS_PARALLELISM",
        "NCCL_DEBUG",
        "NCCL_IB_DISABLE",
        "NCCL_P2P_DISABLE",
        "TENSORRT_LLM_CACHE_DIR",
    ],
    *["HF_HOME", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE", "PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "HOME"],
    *["USER", "TRITON_PTXAS_PATH", "TRTLLM_USE_UCX_KVCACHE"],
]
MPI_ENV = " ".join(f"-x {name}" for name in sorted(MPI_NAMES))
MPIRUN = (
    'mpirun $([ "$(id -u)" = "0" ] && echo --allow-run-as-root) --oversubscribe -n 8 -H '
    f"{GROVE_LEADER},{GROVE_WORKER_0} --mca pml ob1 --mca plm_rsh_args "
    f'"-p 2222 -o StrictHostKeyChecking=no -i $HOME/.ssh/id_rsa" {MPI_ENV} bash -c '
    "'trtllm-llmapi-launch python3 -m dynamo.trtllm --model Qwen/Qwen3-0.6B --tensor-parallel-size 2'"
)


@dataclass(frozen=True)
class Case:
    """One role of one component and what its main container must be."""

    id: str
    type: str
    backend: Backend = "noop"
    nodes: int = 1
    role: RenderRole = "main"
    deployer: Deployer = "grove"
    command: list[str] | None = None
    args: list[str] | None = None
    gpus: int | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    expected_command: list[str] | None = None
    expected_args: list[str] | None = None
    expected_env: list[str] = field(default_factory=list)
    expected_probes: dict[str, Any] = field(default_factory=dict)
    expected_ports: list[dict[str, Any]] = field(default_factory=lambda: list(WORKER_PORTS))


#: The engine command of each backend's workers.
ENGINES: dict[Backend, list[str]] = {"vllm": VLLM, "sglang": SGLANG, "trtllm": TRTLLM}


def _worker(id: str, backend: Backend, **kw: Any) -> Case:
    """A worker of ``backend`` running its engine with ``TP2``, rendered as upstream does by default."""
    command = ENGINES[backend]
    defaults: dict[str, Any] = {
        "type": "worker",
        "backend": backend,
        "command": command,
        "args": TP2,
        "expected_command": command,
        "expected_args": TP2,
        "expected_env": WORKER_ENV,
        "expected_probes": WORKER_PROBES,
    }
    return Case(id=id, **{**defaults, **kw})


def _multinode(id: str, backend: Backend, role: RenderRole, **kw: Any) -> Case:
    """The ``role`` of a two-node worker of ``backend``."""
    return _worker(id, backend, nodes=2, role=role, **kw)


CASES = [
    Case(
        "frontend",
        "frontend",
        expected_command=["python3"],
        expected_args=["-m", "dynamo.frontend"],
        expected_env=FRONTEND_ENV,
        expected_probes=FRONTEND_PROBES,
        expected_ports=[{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
    ),
    Case(
        "planner",
        "planner",
        expected_command=["/bin/sh", "-c"],
        expected_env=PLANNER_ENV,
        expected_probes=WORKER_PROBES,
        expected_ports=[
            {"name": "metrics", "containerPort": 9085, "protocol": "TCP"},
            {"name": "system", "containerPort": 9090, "protocol": "TCP"},
        ],
    ),
    Case(
        "epp",
        "epp",
        expected_args=[
            *["--pool-name", "graph-pool", "--pool-namespace", "ns", "--pool-group"],
            *["inference.networking.k8s.io", "-v", "4", "--zap-encoder", "json", "--grpc-port", "9002"],
            *["--grpc-health-port", "9003", "--config-file", "/etc/epp/epp-config-dynamo.yaml"],
        ],
        expected_env=EPP_ENV,
        expected_probes=EPP_PROBES,
        expected_ports=[
            {"name": "grpc", "containerPort": 9002, "protocol": "TCP"},
            {"name": "grpc-health", "containerPort": 9003, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
    ),
    Case(
        "worker-without-command",
        "worker",
        expected_command=["/bin/sh", "-c"],
        expected_env=WORKER_ENV,
        expected_probes=WORKER_PROBES,
    ),
    _worker("prefill-vllm-single", "vllm", type="prefill"),
    _worker("decode-sglang-single", "sglang", type="decode"),
    _worker("worker-trtllm-single", "trtllm"),
    _multinode(
        "vllm-multinode-leader-mp",
        "vllm",
        "leader",
        gpus=1,
        annotations=ORIGIN_1_4,
        expected_args=[*TP2, *MP_FLAGS.split(), "--node-rank", "0"],
        expected_env=WORKER_ENV + NIXL_HOST,
    ),
    _multinode(
        "vllm-multinode-worker-mp",
        "vllm",
        "worker",
        gpus=1,
        annotations=ORIGIN_1_4,
        expected_command=["sh", "-c"],
        expected_args=[
            f"exec python3 -m dynamo.vllm {' '.join(TP2)} {MP_FLAGS} --node-rank {GROVE_RANK} --headless"
        ],
        expected_env=WORKER_ENV + NIXL_HOST,
        expected_probes={},
    ),
    _multinode(
        "vllm-multinode-worker-mp-lws",
        "vllm",
        "worker",
        deployer="lws",
        gpus=1,
        annotations=ORIGIN_1_4,
        expected_args=[*TP2, *LWS_MP_FLAGS.split(), "--node-rank", "$(LWS_WORKER_INDEX)", "--headless"],
        expected_env=WORKER_ENV + NIXL_HOST,
        expected_probes={},
    ),
    _multinode(
        "vllm-multinode-leader-ray",
        "vllm",
        "leader",
        gpus=1,
        annotations={"nvidia.com/vllm-distributed-executor-backend": "Ray", **ORIGIN_1_4},
        expected_command=["/bin/sh", "-c"],
        expected_args=[
            "ray start --head --port=6379 && python3 -m dynamo.vllm "
            "--model Qwen/Qwen3-0.6B --tensor-parallel-size 2 --distributed-executor-backend ray"
        ],
    ),
    _multinode(
        "vllm-multinode-worker-ray-without-origin-version",
        "vllm",
        "worker",
        gpus=1,
        expected_command=["/bin/sh", "-c"],
        expected_args=[f"ray start --address={GROVE_LEADER}:6379 --block"],
        expected_probes={},
    ),
    _multinode(
        "vllm-multinode-leader-data-parallel",
        "vllm",
        "leader",
        gpus=4,
        args=["--data-parallel-size", "8"],
        annotations=ORIGIN_1_4,
        expected_args=[
            *["--data-parallel-size", "8", "--data-parallel-hybrid-lb", "--data-parallel-size-local", "4"],
            *["--data-parallel-start-rank", "0", "--data-parallel-address", GROVE_LEADER],
            *["--data-parallel-rpc-port", "13445"],
        ],
        expected_env=WORKER_ENV + NIXL_HOST,
    ),
    _multinode(
        "vllm-multinode-without-gpus-injects-nothing",
        "vllm",
        "leader",
        annotations=ORIGIN_1_4,
        expected_env=WORKER_ENV + NIXL_HOST,
    ),
    _multinode(
        "sglang-multinode-leader",
        "sglang",
        "leader",
        expected_args=[
            *TP2,
            "--dist-init-addr",
            f"{GROVE_LEADER}:29500",
            "--nnodes",
            "2",
            "--node-rank",
            "0",
        ],
    ),
    _multinode(
        "sglang-multinode-worker",
        "sglang",
        "worker",
        expected_command=["sh", "-c"],
        expected_args=[
            f"exec python3 -m dynamo.sglang {' '.join(TP2)} --dist-init-addr {GROVE_LEADER}:29500 --nnodes 2 "
            f"--node-rank {GROVE_RANK}"
        ],
        expected_probes={},
    ),
    _multinode(
        "sglang-multinode-worker-lws",
        "sglang",
        "worker",
        deployer="lws",
        expected_args=[
            *TP2,
            *["--dist-init-addr", "$(LWS_LEADER_ADDRESS):29500", "--nnodes", "2"],
            *["--node-rank", "$(LWS_WORKER_INDEX)"],
        ],
        expected_probes={},
    ),
    _multinode(
        "trtllm-multinode-leader",
        "trtllm",
        "leader",
        gpus=4,
        expected_command=["/bin/sh", "-c"],
        expected_args=[f"mkdir -p $HOME/.ssh && {SSH_KEYS} && {MPIRUN}"],
        expected_env=TRTLLM_MULTINODE_ENV,
    ),
    _multinode(
        "trtllm-multinode-worker",
        "trtllm",
        "worker",
        gpus=4,
        expected_command=["/bin/sh", "-c"],
        expected_args=[SSHD],
        expected_env=TRTLLM_MULTINODE_ENV,
        expected_probes=TRTLLM_WORKER_READINESS,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_main_container_follows_the_pod_spec_rules(case: Case) -> None:
    # given a component of the case's type, backend and node count
    spec = component(
        case.type,
        command=case.command,
        args=case.args,
        gpus=case.gpus,
        nodes=case.nodes,
        annotations=case.annotations or None,
    )

    # when one of its roles is rendered
    main = render(spec, role=case.role, backend=case.backend, deployer=case.deployer)["containers"][0]

    # then command, args, env order, probes and ports are exactly the upstream ones
    assert main["name"] == "main"
    assert main.get("command") == case.expected_command
    assert main.get("args") == case.expected_args
    assert env_names(main) == case.expected_env
    assert probes(main) == case.expected_probes
    assert main["ports"] == case.expected_ports
