"""The objects the shared-resources step ensures beside a DGD's workload (dgd-domain §7), as JSON.

Per namespace, not owned by any DGD: the planner ServiceAccount and its RoleBinding to the planner
ClusterRole, and the endpoint picker's pair when a DGD there has one (cluster-wide mode), and the
MPI SSH key Secret replicated from the operator's namespace. Per DGD, owned by it (garbage-collected
with it): the Kubernetes-discovery ServiceAccount, Role and RoleBinding, the wait-for-leader
ConfigMap of multinode graphs, and the legacy v1alpha1 ``spec.pvcs`` claims marked ``create``.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from dgd.domain.metadata_keys import DGD_SPEC_PAYLOAD, GRAPH_NAME
from dgd.domain.pod_merge import JSON
from dgd.domain.render.pcs import graph_discovery_backend
from dgd.domain.roles import has_multinode
from dgd.messages.config import OperatorConfig
from dgd.messages.dgd import DynamoGraphDeployment

PLANNER_SERVICE_ACCOUNT = "planner-serviceaccount"
EPP_SERVICE_ACCOUNT = "epp-serviceaccount"
MANAGED_BY = "app.kubernetes.io/managed-by"
OPERATOR = "dynamo-operator"
RBAC_API = "rbac.authorization.k8s.io/v1"
WAIT_LEADER_KEY = "wait-for-leader.py"
PRIVATE_KEY, PUBLIC_KEY = "private.key", "private.key.pub"

#: Run by the ``wait-for-leader-mp`` init container of vLLM multinode workers: it returns once the
#: leader (``LEADER_HOST``) accepts connections on ``LEADER_PORT``, reporting progress every 30s.
WAIT_LEADER_SCRIPT = """\
import os, socket, sys, time

host, port = os.environ["LEADER_HOST"], int(os.environ["LEADER_PORT"])
began = last_report = time.monotonic()
print(f"waiting for the leader at {host}:{port}", flush=True)
while True:
    try:
        with socket.create_connection((host, port), timeout=2):
            break
    except OSError as error:
        now = time.monotonic()
        if now - last_report >= 30:
            print(f"still waiting for {host}:{port} after {now - began:.0f}s: {error}", flush=True)
            last_report = now
        time.sleep(2)
print(f"leader reachable after {time.monotonic() - began:.1f}s", flush=True)
sys.exit(0)
"""


def _meta(name: str, namespace: str, labels: dict[str, str] | None = None) -> JSON:
    meta: JSON = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = dict(sorted(labels.items()))
    return meta


def planner_rbac(namespace: str, cluster_role: str) -> tuple[JSON, JSON]:
    """The planner ServiceAccount and its RoleBinding to ``cluster_role`` in ``namespace``."""
    return service_account_rbac(PLANNER_SERVICE_ACCOUNT, namespace, cluster_role)


def epp_rbac(namespace: str, cluster_role: str) -> tuple[JSON, JSON]:
    """The endpoint picker's ServiceAccount and its RoleBinding to ``cluster_role`` in ``namespace``."""
    return service_account_rbac(EPP_SERVICE_ACCOUNT, namespace, cluster_role)


def service_account_rbac(account: str, namespace: str, cluster_role: str) -> tuple[JSON, JSON]:
    """ServiceAccount ``account`` and its RoleBinding ``<account>-binding`` to ``cluster_role``."""
    labels = {
        MANAGED_BY: OPERATOR,
        "app.kubernetes.io/component": "rbac",
        "app.kubernetes.io/name": account,
    }
    service_account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(account, namespace, labels),
    }
    binding = {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": _meta(f"{account}-binding", namespace, labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    return service_account, binding


def discovery_enabled(dgd: DynamoGraphDeployment, config: OperatorConfig) -> bool:
    """Kubernetes service discovery: the DGD annotation, else the operator config, says ``kubernetes``."""
    return graph_discovery_backend(dgd, config) == "kubernetes"


def discovery_account_name(dgd_name: str) -> str:
    return f"{dgd_name}-k8s-service-discovery"


def discovery_rbac(dgd: DynamoGraphDeployment) -> list[JSON]:
    """The ServiceAccount, Role and RoleBinding the pods of one DGD discover each other with."""
    name, namespace = dgd.metadata.name or "", dgd.metadata.namespace or ""
    account = discovery_account_name(name)
    role = f"{account}-role"
    rules = [
        {"apiGroups": [""], "resources": ["endpoints", "pods"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["nvidia.com"],
            "resources": ["dynamoworkermetadatas"],
            "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"],
        },
    ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(account, namespace)},
        {"apiVersion": RBAC_API, "kind": "Role", "metadata": _meta(role, namespace), "rules": rules},
        {
            "apiVersion": RBAC_API,
            "kind": "RoleBinding",
            "metadata": _meta(f"{account}-binding", namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]


def needs_wait_leader(dgd: DynamoGraphDeployment) -> bool:
    """Any multinode component: its workers may wait for their leader with the script."""
    return has_multinode(dgd)


def wait_leader_config_map(dgd: DynamoGraphDeployment) -> JSON:
    """``<dgd>-wait-leader-script`` with the ``wait-for-leader.py`` script."""
    name = dgd.metadata.name or ""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"{name}-wait-leader-script", dgd.metadata.namespace or "", {GRAPH_NAME: name}),
        "data": {WAIT_LEADER_KEY: WAIT_LEADER_SCRIPT},
    }


class LegacyPvc(msgspec.Struct, frozen=True):
    """One v1alpha1 ``spec.pvcs`` entry, read back from the preservation payload."""

    name: str
    create: bool = False
    storage_class: str | None = None
    size: str | None = None
    access_mode: str | None = None


def legacy_pvcs(dgd: DynamoGraphDeployment) -> list[LegacyPvc]:
    """The preserved v1alpha1 top-level PVCs, in order (unreadable entries are skipped)."""
    raw = (dgd.metadata.annotations or {}).get(DGD_SPEC_PAYLOAD)
    try:
        parsed: Any = json.loads(raw) if raw else {}
    except ValueError:
        return []
    spec = parsed.get("spec") if isinstance(parsed, dict) and "spec" in parsed else parsed
    entries = spec.get("pvcs") if isinstance(spec, dict) else None
    out: list[LegacyPvc] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        size = entry.get("size")
        out.append(
            LegacyPvc(
                name=str(entry.get("name") or ""),
                create=entry.get("create") is True,
                storage_class=entry.get("storageClass") or None,
                size=str(size) if size not in (None, "") else None,
                access_mode=entry.get("volumeAccessMode") or None,
            )
        )
    return out


def legacy_pvc(dgd: DynamoGraphDeployment, pvc: LegacyPvc) -> JSON:
    """The claim a ``create: true`` legacy entry asks for (filesystem mode, the requested size)."""
    spec: JSON = {
        "accessModes": [pvc.access_mode or "ReadWriteOnce"],
        "resources": {"requests": {"storage": pvc.size or "1Gi"}},
        "volumeMode": "Filesystem",
    }
    if pvc.storage_class:
        spec["storageClassName"] = pvc.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(pvc.name, dgd.metadata.namespace or ""),
        "spec": spec,
    }


def mpi_secret(name: str, namespace: str, data: dict[str, str], secret_type: str | None = None) -> JSON:
    """The MPI SSH key Secret (``data`` base64-encoded, keys ``private.key`` and ``private.key.pub``)."""
    secret: JSON = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, {MANAGED_BY: OPERATOR}),
        "data": dict(sorted(data.items())),
    }
    if secret_type:
        secret["type"] = secret_type
    return secret
