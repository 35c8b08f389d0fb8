"""Topology-aware KV transfer between workers (dgd-domain §2.1 ``experimental.kvTransferPolicy``,
podspec §3.1, §6.1, §9.4).

A worker (``worker``, ``prefill``, ``decode``) of a DGD with a policy gets, in its pod template:

* the policy as env on the ``main`` container (``DYN_KV_TRANSFER_DOMAIN``, ``…_ENFORCEMENT``,
  ``DYN_TOPOLOGY_ENABLED``, ``DYN_TOPOLOGY_MOUNT_PATH`` and, when set, ``…_PREFERRED_WEIGHT``),
  replacing any of the user's with those names;
* a Downward-API volume ``topology-labels`` mounted read-only at ``/etc/dynamo/topology``: one file
  per domain, read from the pod label a topology-label controller copies from the node. With a
  ``labelKey`` source that is the file ``<domain>`` from that label; with a ``clusterTopologyName``
  source, one file per level of the Grove ClusterTopologyBinding (broad to narrow), each from
  ``nvidia.com/dynamo-topology.<level>``;
* the topology source annotation that tells that controller what to copy: on the Grove cliques, and
  on the DCD's metadata on the Component pathway (the DCD controller passes it to the pods).

The binding's levels are the only cluster input: ``binding_domains`` checks them against the policy,
the callers read the binding (the Grove program from the cluster, ``render`` from a file).
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Sequence
from decimal import Decimal

from msgspec import structs

from dgd.domain.admission.lookups import binding_levels
from dgd.domain.pod_merge import JSON, merge_env
from dgd.domain.podtemplate import with_main_container
from dgd.domain.render.errors import RenderError
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment, KvTransferPolicy

LABEL_KEY_SOURCE = "nvidia.com/topology-label-key"
CLUSTER_TOPOLOGY_SOURCE = "nvidia.com/topology-cluster-topology-name"
#: The pod label the topology-label controller writes per ClusterTopologyBinding level.
TOPOLOGY_LABEL_PREFIX = "nvidia.com/dynamo-topology."
VOLUME, MOUNT_PATH = "topology-labels", "/etc/dynamo/topology"
DOMAIN_ENV, ENFORCEMENT_ENV = "DYN_KV_TRANSFER_DOMAIN", "DYN_KV_TRANSFER_ENFORCEMENT"
WEIGHT_ENV = "DYN_KV_TRANSFER_PREFERRED_WEIGHT"
ENABLED_ENV, MOUNT_PATH_ENV = "DYN_TOPOLOGY_ENABLED", "DYN_TOPOLOGY_MOUNT_PATH"
_POLICY_ENV = frozenset({DOMAIN_ENV, ENFORCEMENT_ENV, WEIGHT_ENV, ENABLED_ENV, MOUNT_PATH_ENV})
POLICY_PATH = "spec.experimental.kvTransferPolicy"


def policy_of(dgd: DynamoGraphDeployment) -> KvTransferPolicy | None:
    """The DGD's KV-transfer policy, when it names a topology source."""
    policy = dgd.spec.experimental.kv_transfer_policy if dgd.spec.experimental else None
    if policy is None or not (policy.label_key or policy.cluster_topology_name):
        return None
    return policy


def applies(dgd: DynamoGraphDeployment, component: ComponentSpec) -> KvTransferPolicy | None:
    """The policy a component's pods follow: the DGD's, for worker types only."""
    return policy_of(dgd) if component.type in WORKER_TYPES else None


def binding_domains(policy: KvTransferPolicy, binding: JSON | None) -> tuple[str, ...]:
    """The levels of the ClusterTopologyBinding a ``clusterTopologyName`` policy names (broad to narrow).

    ``binding`` is the object as read (``None``: not found). Raises ``RenderError`` when it is missing
    or has no level named ``domain``: the workers could not tell where their KV cache may go.
    """
    name = policy.cluster_topology_name or ""
    if binding is None:
        raise RenderError(
            f"{POLICY_PATH}.clusterTopologyName",
            f'"{name}" references a ClusterTopologyBinding resource that was not found',
        )
    domains = binding_levels(binding)
    if policy.domain not in domains:
        raise RenderError(
            f"{POLICY_PATH}.domain",
            f'"{policy.domain}" does not exist in ClusterTopologyBinding "{name}"; '
            f"available domains: [{' '.join(domains)}]",
        )
    return domains


def source_annotations(policy: KvTransferPolicy) -> dict[str, str]:
    """The topology source annotation of a worker: which node label(s) to copy onto its pods."""
    if policy.label_key:
        return {LABEL_KEY_SOURCE: policy.label_key}
    return {CLUSTER_TOPOLOGY_SOURCE: policy.cluster_topology_name or ""}


def with_policy(component: ComponentSpec, policy: KvTransferPolicy, domains: Sequence[str]) -> ComponentSpec:
    """The component whose pod template carries the policy env, volume and mount (see the module).

    ``domains`` are the binding's levels (``binding_domains``); unused with a ``labelKey`` source.
    """
    template: JSON = copy.deepcopy(component.pod_template or {})
    spec, main = with_main_container(template)
    kept = [e for e in main.get("env") or [] if isinstance(e, dict) and e.get("name") not in _POLICY_ENV]
    main["env"] = merge_env(kept, _env(policy))
    mounts = [
        m
        for m in main.get("volumeMounts") or []
        if isinstance(m, dict) and m.get("name") != VOLUME and m.get("mountPath") != MOUNT_PATH
    ]
    main["volumeMounts"] = [*mounts, {"name": VOLUME, "readOnly": True, "mountPath": MOUNT_PATH}]
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("name") != VOLUME]
    spec["volumes"] = [*volumes, {"name": VOLUME, "downwardAPI": {"items": _items(policy, domains)}}]
    template["spec"] = spec
    return structs.replace(component, pod_template=template)


def _env(policy: KvTransferPolicy) -> list[JSON]:
    env: list[JSON] = [
        {"name": DOMAIN_ENV, "value": policy.domain},
        {"name": ENFORCEMENT_ENV, "value": policy.enforcement or "required"},
        {"name": ENABLED_ENV, "value": "true"},
        {"name": MOUNT_PATH_ENV, "value": MOUNT_PATH},
    ]
    if policy.preferred_weight is not None:
        env.append({"name": WEIGHT_ENV, "value": float32_text(policy.preferred_weight)})
    return env


def _items(policy: KvTransferPolicy, domains: Sequence[str]) -> list[JSON]:
    if policy.label_key:
        pairs = [(policy.domain, policy.label_key)]
    else:
        pairs = [(domain, TOPOLOGY_LABEL_PREFIX + domain) for domain in domains]
    return [{"path": path, "fieldRef": {"fieldPath": f"metadata.labels['{label}']"}} for path, label in pairs]


def float32_text(value: float) -> str:
    """The shortest decimal text (no exponent) that reads back as the same float32, as upstream
    writes the preferred weight (``FormatFloat(w, 'f', -1, 32)``): 0.7 is ``0.7``, not ``0.699999988``."""
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    plain = format(Decimal(text), "f")
    return plain.rstrip("0").rstrip(".") if "." in plain else plain
