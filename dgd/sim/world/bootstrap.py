"""What a simulated cluster starts with, before any controller runs.

* **Namespaces**: the settings' namespaces plus the operator's own (``dynamo-system``) and the MPI
  secret's.
* **ClusterRoles** the operator binds per namespace in cluster-wide mode, named by the operator
  configuration (``rbac.*ClusterRoleName``), with the rules of upstream's Helm chart (supplement §2.3).
* **The MPI SSH Secret** the configuration names (``mpi.sshSecretName`` in ``mpi.sshSecretNamespace``),
  with a placeholder key pair.
* **The DeviceClass** ``gpu.nvidia.com`` when DRA (``resource.k8s.io/v1``) is served, as a GPU cluster
  with NVIDIA's DRA driver has it: the class GPU memory service claims come from by default.
* **Discovery**: the API groups served, which the operator's feature gates probe (dgd-domain §17).

Creating is idempotent: objects that exist already are left as they are.
"""

from __future__ import annotations

import base64
import contextlib
from typing import Any

import msgspec

from dgd.cluster.errors import AlreadyExists
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import CLUSTER_ROLE, DEVICE_CLASS, NAMESPACE, SECRET, Resource
from dgd.messages.base import JSONObject
from dgd.messages.config import RELEASE_NAMESPACE, OperatorConfig
from dgd.sim.world.settings import WorldSettings

#: Groups every cluster serves (the core group is ``v1``).
CORE_GROUPS = (
    "v1",
    "apps/v1",
    "autoscaling/v1",
    "coordination.k8s.io/v1",
    "events.k8s.io/v1",
    "networking.k8s.io/v1",
    "rbac.authorization.k8s.io/v1",
)

_READ = ["get", "list", "watch"]


class Discovery(msgspec.Struct, frozen=True):
    """The ``group/version`` pairs the cluster serves (``v1`` for the core group), sorted."""

    group_versions: tuple[str, ...]

    def serves(self, group: str, version: str | None = None) -> bool:
        """Whether ``group`` (at ``version``, or at any version) is served."""
        if version is not None:
            return f"{group}/{version}" in self.group_versions
        return any(gv.rpartition("/")[0] == group for gv in self.group_versions)


def discovery(settings: WorldSettings) -> Discovery:
    """What the cluster serves under ``settings``."""
    return Discovery(tuple(sorted(set(CORE_GROUPS) | set(settings.served_groups))))


async def bootstrap(cluster: Cluster, settings: WorldSettings, config: OperatorConfig) -> Discovery:
    """Create the cluster's starting objects (see the module) and return what it serves."""
    namespaces = set(settings.namespaces) | {RELEASE_NAMESPACE, config.mpi.ssh_secret_namespace}
    for name in sorted(namespaces):
        await _ensure(cluster, NAMESPACE, _namespace(name))
    for name, rules in sorted(_cluster_roles(config).items()):
        role = {"apiVersion": CLUSTER_ROLE.api_version, "kind": "ClusterRole", "metadata": {"name": name}}
        await _ensure(cluster, CLUSTER_ROLE, role | {"rules": rules})
    await _ensure(cluster, SECRET, _mpi_secret(config))
    served = discovery(settings)
    if served.serves("resource.k8s.io", "v1"):
        await ensure_gpu_device_class(cluster)
    return served


async def _ensure(cluster: Cluster, resource: Resource[Any], obj: JSONObject) -> None:
    with contextlib.suppress(AlreadyExists):
        await cluster.create(resource, obj)


def _namespace(name: str) -> JSONObject:
    metadata = {"name": name, "labels": {"kubernetes.io/metadata.name": name}}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata,
        "spec": {"finalizers": ["kubernetes"]},
    }


def _cluster_roles(config: OperatorConfig) -> dict[str, list[JSONObject]]:
    rbac = config.rbac
    planner = [
        _rule("nvidia.com", ["dynamographdeployments"], ["get", "list", "create", "update", "patch"]),
        _rule("nvidia.com", ["dynamographdeploymentscalingadapters/scale"], ["patch"]),
        _rule("discovery.k8s.io", ["endpointslices"], _READ),
        _rule("nvidia.com", ["dynamoworkermetadatas"], [*_READ, "create", "update", "patch", "delete"]),
    ]
    epp = [
        _rule(
            "inference.networking.x-k8s.io",
            ["inferencepools", "inferenceobjectives", "inferencemodelrewrites"],
            _READ,
        ),
        _rule("inference.networking.k8s.io", ["inferencepools"], _READ),
        _rule("", ["pods"], _READ),
        _rule("discovery.k8s.io", ["endpointslices"], _READ),
        _rule("nvidia.com", ["dynamoworkermetadatas"], [*_READ, "create", "update", "patch", "delete"]),
        _rule("authentication.k8s.io", ["tokenreviews"], ["create"]),
        _rule("authorization.k8s.io", ["subjectaccessreviews"], ["create"]),
    ]
    # The profiling role's rules are not specified upstream in our references: it grants reads.
    profiling = [_rule("nvidia.com", ["dynamographdeployments"], _READ)]
    roles = {
        rbac.planner_cluster_role_name: planner,
        rbac.epp_cluster_role_name: epp,
        rbac.dgdr_profiling_cluster_role_name: profiling,
    }
    return {name: rules for name, rules in roles.items() if name}


#: The DeviceClass NVIDIA's GPU DRA driver registers, which GPU memory service claims use by default.
GPU_DEVICE_CLASS = "gpu.nvidia.com"


async def ensure_gpu_device_class(cluster: Cluster) -> None:
    """Register NVIDIA's GPU DeviceClass (every device its driver publishes), as the driver does on a
    GPU cluster, unless it exists."""
    selector = {"cel": {"expression": f"device.driver == '{GPU_DEVICE_CLASS}'"}}
    device_class = {
        "apiVersion": DEVICE_CLASS.api_version,
        "kind": "DeviceClass",
        "metadata": {"name": GPU_DEVICE_CLASS},
        "spec": {"selectors": [selector]},
    }
    await _ensure(cluster, DEVICE_CLASS, device_class)


def _rule(group: str, resources: list[str], verbs: list[str]) -> JSONObject:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


def _mpi_secret(config: OperatorConfig) -> JSONObject:
    def encoded(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": config.mpi.ssh_secret_name, "namespace": config.mpi.ssh_secret_namespace},
        "type": "Opaque",
        "data": {
            "private.key": encoded("simulated private key"),
            "private.key.pub": encoded("simulated key"),
        },
    }
