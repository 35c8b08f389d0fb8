"""How the pods of one multinode replica find each other, per deployer (podspec §7.2).

Grove and LeaderWorkerSet inject their own env variables into pods (``GROVE_*``, ``LWS_*``); the
operator only writes references to them into command lines. Inter-pod GMS engines use a rank-aware
Grove variant (``GroveRank``): each rank is a clique of its own whose pods at the same index form one
engine group, so hosts are found by pod index and the node rank is the clique's fixed rank (upstream
``GroveMultinodeDeployer`` with ``IsInterPodGMS``).
"""

from __future__ import annotations

from typing import Literal

import msgspec


class GroveRank(msgspec.Struct, frozen=True):
    """Grove, for the engine clique of one rank of an inter-pod GMS component."""

    rank: int


Deployer = Literal["grove", "lws"] | GroveRank


def leader_host(deployer: Deployer, service: str) -> str:
    """The leader pod's address, as seen from any pod of the replica."""
    prefix = f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-{service.lower()}"
    if isinstance(deployer, GroveRank):
        return f"{prefix}-ldr-$(GROVE_PCLQ_POD_INDEX).$(GROVE_HEADLESS_SERVICE)"
    if deployer == "grove":
        return f"{prefix}-ldr-0.$(GROVE_HEADLESS_SERVICE)"
    return "$(LWS_LEADER_ADDRESS)"


def host_names(deployer: Deployer, service: str, nodes: int) -> list[str]:
    """Every pod address of one replica, leader first."""
    prefix = f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-{service.lower()}"
    if isinstance(deployer, GroveRank):
        workers = [
            f"{prefix}-wkr-{i}-$(GROVE_PCLQ_POD_INDEX).$(GROVE_HEADLESS_SERVICE)" for i in range(1, nodes)
        ]
    elif deployer == "grove":
        workers = [f"{prefix}-wkr-{i}.$(GROVE_HEADLESS_SERVICE)" for i in range(nodes - 1)]
    else:
        workers = [f"$(echo \"$LWS_LEADER_ADDRESS\" | sed 's/\\./-{i}\\./')" for i in range(1, nodes)]
    return [leader_host(deployer, service), *workers]


def node_rank(deployer: Deployer) -> tuple[str, bool]:
    """A worker pod's node rank expression and whether only a shell can evaluate it."""
    if isinstance(deployer, GroveRank):
        return str(deployer.rank), False
    if deployer == "grove":
        return "$((GROVE_PCLQ_POD_INDEX + 1))", True
    return "$(LWS_WORKER_INDEX)", False


def needs_dns_wait(deployer: Deployer) -> bool:
    """Whether the leader must wait for the workers' DNS names before launching (LWS only)."""
    return deployer == "lws"
