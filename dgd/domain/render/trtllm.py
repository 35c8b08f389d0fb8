"""TRT-LLM multinode: SSH between the pods of a replica and an ``mpirun`` launch (podspec §7.5).

Single-node TRT-LLM needs nothing. Multinode leaders run ``mpirun`` over every pod of the replica;
workers run an SSH daemon on port 2222 that the leader connects to, with the key pair mounted from
the operator's MPI SSH Secret.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from dgd.domain.pod_merge import JSON, value_env
from dgd.domain.render import command_line as cl
from dgd.domain.render import multinode_hosts as hosts
from dgd.domain.render.gpu_count import container_gpus
from dgd.domain.render.multinode_hosts import Deployer

SSH_PORT = 2222
SSH_MOUNT = "/ssh-pk"
#: Env names every mpirun rank receives in addition to the container's own env.
COMMON_ENV = (
    "CPATH",
    "CUDA_VISIBLE_DEVICES",
    "MODEL_PATH",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_ENDPOINT",
    "TOKENIZERS_PARALLELISM",
    "NCCL_DEBUG",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_DISABLE",
    "TENSORRT_LLM_CACHE_DIR",
    "HF_HOME",
    "TRANSFORMERS_CACHE",
    "HF_DATASETS_CACHE",
    "PATH",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "HOME",
    "USER",
    "TRITON_PTXAS_PATH",
    "TRTLLM_USE_UCX_KVCACHE",
)

_SSH_CONFIG = (
    f"printf 'Host *\\nIdentityFile '$HOME'/.ssh/id_rsa\\nStrictHostKeyChecking no\\nPort {SSH_PORT}\\n' "
    "> $HOME/.ssh/config"
)
_KEY_SETUP = (
    f"ls -la {SSH_MOUNT}/",
    f"cp {SSH_MOUNT}/private.key $HOME/.ssh/id_rsa",
    f"cp {SSH_MOUNT}/private.key.pub $HOME/.ssh/id_rsa.pub",
    f"cp {SSH_MOUNT}/private.key.pub $HOME/.ssh/authorized_keys",
    "chmod 600 $HOME/.ssh/id_rsa $HOME/.ssh/authorized_keys",
    "chmod 644 $HOME/.ssh/id_rsa.pub",
    _SSH_CONFIG,
)
_HOST_KEYS = ("rsa", "ecdsa", "ed25519")
_SSHD_CONFIG = (
    f"printf 'Port {SSH_PORT}\\n"
    + "".join(f"HostKey '$HOME'/.ssh/host_keys/ssh_host_{t}_key\\n" for t in _HOST_KEYS)
    + "PidFile '$HOME'/.ssh/run/sshd.pid\\nStrictModes no\\nPermitRootLogin yes\\n"
    "PasswordAuthentication no\\nPubkeyAuthentication yes\\n"
    "AuthorizedKeysFile '$HOME'/.ssh/authorized_keys\\n' > $HOME/.ssh/sshd_config"
)


def update_container(
    container: JSON,
    *,
    role: Literal["main", "leader", "worker"],
    nodes: int,
    service: str,
    deployer: Deployer,
    mpi_secret: str,
    count_gpus: Callable[[JSON], int] = container_gpus,
) -> JSON:
    """A multinode TRT-LLM main container: SSH key mount, OpenMPI env, and the role's launch command."""
    out = dict(container)
    if role == "worker":
        # Workers only run sshd: readiness is its port, and nothing else can be probed.
        out.pop("livenessProbe", None)
        out.pop("startupProbe", None)
        out["readinessProbe"] = {
            "tcpSocket": {"port": SSH_PORT},
            "initialDelaySeconds": 20,
            "periodSeconds": 20,
            "timeoutSeconds": 5,
            "failureThreshold": 10,
        }
    mount = {"name": mpi_secret, "mountPath": SSH_MOUNT, "readOnly": True}
    out["volumeMounts"] = [*(container.get("volumeMounts") or []), mount]
    out["env"] = [*(container.get("env") or []), value_env("OMPI_MCA_orte_keep_fqdn_hostnames", "1")]
    if role == "leader":
        gpus = count_gpus(container)
        out["args"] = [_leader_command(out, nodes, service, deployer, gpus)]
        out["command"] = ["/bin/sh", "-c"]
    elif role == "worker":
        steps = [
            "mkdir -p $HOME/.ssh $HOME/.ssh/host_keys $HOME/.ssh/run",
            *_KEY_SETUP,
            *(f"ssh-keygen -t {t} -f $HOME/.ssh/host_keys/ssh_host_{t}_key -N ''" for t in _HOST_KEYS),
            _SSHD_CONFIG,
            "/usr/sbin/sshd -D -f $HOME/.ssh/sshd_config",
        ]
        out["args"] = [" && ".join(steps)]
        out["command"] = ["/bin/sh", "-c"]
    return out


def update_pod_spec(pod_spec: JSON, *, mpi_secret: str) -> JSON:
    """The pod with the SSH key Secret as a volume."""
    volume = {"name": mpi_secret, "secret": {"secretName": mpi_secret, "defaultMode": 0o644}}
    return {**pod_spec, "volumes": [*(pod_spec.get("volumes") or []), volume]}


def _leader_command(container: JSON, nodes: int, service: str, deployer: Deployer, gpus: int) -> str:
    all_hosts = hosts.host_names(deployer, service, nodes)
    cmd, arguments = cl.command(container), cl.args(container)
    if cmd and cl.is_python_command(cmd[0]):
        original = " ".join(cl.quote_bash_c(t) for t in [*cmd, *arguments])
    elif arguments:
        original = " ".join(arguments)
    else:
        original = " ".join(cmd)
    names = sorted({str(e.get("name", "")) for e in container.get("env") or []} | set(COMMON_ENV))
    env_flags = " ".join(f"-x {name}" for name in names)
    mpirun = (
        f'mpirun $([ "$(id -u)" = "0" ] && echo --allow-run-as-root) --oversubscribe -n {nodes * gpus} '
        f"-H {','.join(all_hosts)} --mca pml ob1 "
        f'--mca plm_rsh_args "-p {SSH_PORT} -o StrictHostKeyChecking=no -i $HOME/.ssh/id_rsa" '
        f"{env_flags} bash -c 'trtllm-llmapi-launch {original}'"
    )
    steps = ["mkdir -p $HOME/.ssh", *_KEY_SETUP]
    if hosts.needs_dns_wait(deployer):
        workers = " ".join(all_hosts[1:])
        steps.append(
            f"TIMEOUT=300; START_TIME=$(date +%s); for worker in {workers}; do "
            'echo "Waiting for DNS: $worker"; until getent hosts $worker >/dev/null 2>&1; do '
            "CURRENT_TIME=$(date +%s); if [ $((CURRENT_TIME - START_TIME)) -gt $TIMEOUT ]; then "
            'echo "ERROR: Timeout waiting for DNS: $worker"; exit 1; fi; '
            'echo "DNS not ready for $worker, retrying..."; sleep 2; done; '
            'echo "✓ DNS resolved: $worker"; done; echo "All workers DNS ready"'
        )
    return " && ".join([*steps, mpirun])
