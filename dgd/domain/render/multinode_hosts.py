"""How the pods of one multinode replica find each other, per deployer (podspec §7.2).

Grove and LeaderWorkerSet inject their own env variables into pods (``GROVE_*``, ``LWS_*``); the
operator only writes references to them into command lines.
"""

from __future__ import annotations

from typing import Literal

Deployer = Literal["grove", "lws"]


def leader_host(deployer: Deployer, service: str) -> str:
    """The leader pod's address, as seen from any pod of the replica."""
    if deployer == "grove":
        return f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-{service.lower()}-ldr-0.$(GROVE_HEADLESS_SERVICE)"
    return "$(LWS_LEADER_ADDRESS)"


def host_names(deployer: Deployer, service: str, nodes: int) -> list[str]:
    """Every pod address of one replica, leader first."""
    if deployer == "grove":
        workers = [
            f"$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-{service.lower()}-wkr-{i}.$(GROVE_HEADLESS_SERVICE)"
            for i in range(nodes - 1)
        ]
    else:
        workers = [f"$(echo \"$LWS_LEADER_ADDRESS\" | sed 's/\\./-{i}\\./')" for i in range(1, nodes)]
    return [leader_host(deployer, service), *workers]


def node_rank(deployer: Deployer) -> tuple[str, bool]:
    """A worker pod's node rank expression and whether only a shell can evaluate it."""
    if deployer == "grove":
        return "$((GROVE_PCLQ_POD_INDEX + 1))", True
    return "$(LWS_WORKER_INDEX)", False


def needs_dns_wait(deployer: Deployer) -> bool:
    """Whether the leader must wait for the workers' DNS names before launching (LWS only)."""
    return deployer == "lws"
