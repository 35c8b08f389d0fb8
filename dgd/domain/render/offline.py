"""Everything the operator would create for one DGD, rendered offline (the ``render`` command).

``prepare`` turns a manifest into the DGD as the operator would hold it after admission (converted
from v1alpha1 if needed, validated as a create, defaulted in memory). What this operator cannot
render yet is ``dgd.domain.preflight.unsupported``, the refusals the operator makes. ``render``
returns the objects of the DGD's pathway: the PodCliqueSet and its stable Services, Ingress and
VirtualService on Grove, the DCDs on the Component pathway; then, for a DGD with an endpoint picker,
its ConfigMap, InferencePool and (with the Istio provider configured) DestinationRule. Other shared
resources (RBAC, the discovery identity, the wait-for-leader script, scaling adapters) are not part
of rendering.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from dgd.domain.admission.defaulting import ENABLE_GROVE, WORKLOAD_PROVIDER
from dgd.domain.admission.validation import admit
from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from dgd.domain.gates import Gates, mesh_provider_istio
from dgd.domain.orchestrators import grove_disabled
from dgd.domain.pod_merge import JSON
from dgd.domain.preflight import unsupported
from dgd.domain.render import kv_transfer
from dgd.domain.render.dcd_children import render_dcd_children
from dgd.domain.render.epp import epp_component, epp_objects
from dgd.domain.render.errors import RenderError
from dgd.domain.render.pcs import graph_discovery_backend
from dgd.domain.render.stable_resources import render_stable_resources
from dgd.domain.render.workloads import desired_dcds, desired_pod_clique_set
from dgd.domain.worker_hash import worker_hash
from dgd.messages.config import COMPATIBLE_UPSTREAM_VERSION, OperatorConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import API_VERSION, API_VERSION_V1ALPHA1, KIND, DynamoGraphDeployment
from dgd.messages.grove import PodCliqueSet

Pathway = Literal["grove", "component"]


class InvalidInput(ValueError):
    """A manifest admission (or conversion) refuses; ``errors`` are ``path: message`` lines."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def prepare(
    document: dict[str, Any], *, namespace: str | None, config: OperatorConfig, pathway: Pathway | None = None
) -> DynamoGraphDeployment:
    """The DGD of a manifest as the operator holds it once created in ``namespace``.

    ``pathway`` forces the workload provider; by default it is chosen as on create (spec §4.1): Grove
    unless the operator config disables it or the DGD opts out with ``nvidia.com/enable-grove``.
    """
    document = copy.deepcopy(document)
    if document.get("apiVersion") == API_VERSION_V1ALPHA1:
        try:
            document = dgd_to_v1beta1(document)
        except ConversionError as exc:
            raise InvalidInput([str(exc)]) from exc
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        raise InvalidInput(["metadata: is required"])
    declared = metadata.get("namespace")
    if namespace is not None and declared not in (None, namespace):
        raise InvalidInput([f'metadata.namespace: "{declared}" does not match the namespace "{namespace}"'])
    metadata["namespace"] = namespace or declared or "default"
    grove_enabled = not grove_disabled(config)
    if pathway is not None:
        if pathway == "grove" and not grove_enabled:
            raise InvalidInput(["--pathway grove: Grove is disabled in the operator configuration"])
        annotations = dict(metadata.get("annotations") or {})
        annotations.pop(ENABLE_GROVE, None)
        if pathway == "component":
            annotations[ENABLE_GROVE] = "false"
        metadata["annotations"] = annotations
    verdict = admit(document, grove_enabled=grove_enabled, operator_version=COMPATIBLE_UPSTREAM_VERSION)
    if verdict.dgd is None:
        raise InvalidInput([str(error) for error in verdict.errors])
    return verdict.dgd


def render(
    dgd: DynamoGraphDeployment,
    *,
    config: OperatorConfig,
    existing_pcs: PodCliqueSet | None = None,
    bindings: Mapping[str, JSON] | None = None,
) -> list[JSON]:
    """The objects of a prepared DGD's pathway, as JSON, in a stable order; ``RenderError`` if refused.

    ``bindings`` are the Grove ClusterTopologyBindings at hand, by name: a KV-transfer policy with a
    ``clusterTopologyName`` is rendered from the levels of the one it names (no cluster is read here).
    """
    problems = unsupported(dgd, config)
    if problems:
        raise problems[0]
    if (dgd.metadata.annotations or {}).get(WORKLOAD_PROVIDER) == "grove":
        domains = _topology_domains(dgd, bindings or {})
        # As a first reconcile renders it: no checkpoint resolved, no restart, no hash plan.
        objects = [
            desired_pod_clique_set(
                dgd, config=config, existing=existing_pcs, checkpoints={}, topology_domains=domains
            )
        ]
        objects += render_stable_resources(
            dgd, config=config, discovery_backend=graph_discovery_backend(dgd, config)
        )
    else:
        # As a first reconcile renders them: no DCD exists yet, no checkpoint resolved, no rollout.
        objects = desired_dcds(dgd, worker_hash=worker_hash(dgd), checkpoints={})
    # The endpoint picker's objects, as on a cluster that serves Istio when the config names it.
    component = epp_component(dgd)
    if component is not None:
        objects += epp_objects(dgd, component, config.service_mesh, istio=mesh_provider_istio(config))
    return [_kubernetes_order(obj) for obj in objects]


def offline_gates(config: OperatorConfig) -> Gates:
    """The gates of an offline render: as the config sets them, an unset one on (as on a cluster that
    serves its API), the Checkpoint gate as ``checkpoint.enabled``."""
    orchestrators = config.orchestrators
    return Gates(
        grove=orchestrators.grove.enabled is not False,
        lws=orchestrators.lws.enabled is not False,
        volcano_scheduler=orchestrators.volcano_scheduler.enabled is True,
        kai_scheduler=orchestrators.kai_scheduler.enabled is True,
        dra=config.dra.enabled is not False,
        istio=mesh_provider_istio(config),
        checkpoint=config.checkpoint.enabled,
    )


def render_dcd_objects(
    dcd: JSON,
    *,
    config: OperatorConfig,
    namespace: str | None = None,
    owner: DynamoGraphDeployment | None = None,
) -> list[JSON]:
    """What the DCD controller would create for the DCD manifest ``dcd`` on its first reconcile (no live
    object, no labelled ServiceAccount), in its reconcile order; ``owner``: the DGD that writes it (its
    owner reference, which the Syncer adds when it writes, names the parent). ``RenderError`` if refused."""
    document = copy.deepcopy(dcd)
    metadata = document.setdefault("metadata", {})
    if owner is not None:
        reference = {"apiVersion": API_VERSION, "kind": KIND, "name": owner.metadata.name, "uid": ""}
        metadata["ownerReferences"] = [reference]
    metadata["namespace"] = namespace or metadata.get("namespace") or "default"
    spec = document.setdefault("spec", {})
    if not spec.get("name"):
        spec["name"] = metadata.get("name")  # the DCD defaulter, on create
    try:
        parsed = msgspec.convert(document, DynamoComponentDeployment)
    except msgspec.ValidationError as exc:
        raise InvalidInput([str(exc)]) from exc
    rendered = render_dcd_children(parsed, config, gates=offline_gates(config))
    if rendered.refused:
        raise RenderError("spec.experimental", "\n".join(rendered.refused))
    return [_kubernetes_order(child.body) for child in rendered.children]


def _topology_domains(dgd: DynamoGraphDeployment, bindings: Mapping[str, JSON]) -> tuple[str, ...]:
    policy = kv_transfer.policy_of(dgd)
    name = policy.cluster_topology_name if policy is not None else None
    if policy is None or not name:
        return ()
    if name not in bindings:
        raise RenderError(
            f"{kv_transfer.POLICY_PATH}.clusterTopologyName",
            f'"{name}": the topology files of the workers come from the levels of this '
            "ClusterTopologyBinding, and rendering reads no cluster: give the binding (kind "
            "ClusterTopologyBinding, grove.io/v1alpha1) with --cluster-topology FILE or in the manifest file",
        )
    return kv_transfer.binding_domains(policy, bindings[name])


def _kubernetes_order(obj: JSON) -> JSON:
    """Top-level keys in the order Kubernetes tools print them."""
    first = ("apiVersion", "kind", "metadata", "spec")
    return {**{k: obj[k] for k in first if k in obj}, **{k: v for k, v in obj.items() if k not in first}}
