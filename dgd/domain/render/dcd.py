"""The DynamoComponentDeployments of a DGD on the Component pathway (dgd-domain §8.3, podspec §6.1).

One DCD per component: a copy of the component with the graph's defaults baked into its pod
template, the graph's backend framework, and the labels that tie it to its DGD. Ports, probes, env
defaults, volumes and the like are not added here: the DCD controller adds them when it renders the
Deployment or LeaderWorkerSet. Worker DCDs carry the worker hash in their name and labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Set

from msgspec import structs

from dgd.domain.conversion.alpha_view import dcd_spec_payload
from dgd.domain.metadata_keys import (
    COMPONENT,
    COMPONENT_CLASS,
    DCD_SPEC_PAYLOAD,
    DYNAMO_NAMESPACE,
    GRAPH_NAME,
    RESTART_AT,
    WORKER_HASH,
)
from dgd.domain.naming import component_resource_name, dynamo_namespace, worker_dcd_name
from dgd.domain.pod_merge import JSON
from dgd.domain.render import kv_transfer
from dgd.domain.render.component_defaults import PLANNER_SERVICE_ACCOUNT
from dgd.domain.render.errors import RenderError
from dgd.domain.render.gms import check_extra_clients
from dgd.domain.render.template_defaults import (
    apply_template_defaults,
    graph_backend,
    inherited_annotations,
    template_metadata,
    with_template_metadata,
)
from dgd.messages.component import WORKER_TYPES, ComponentSpec, SharedComponentSpec
from dgd.messages.dcd import API_VERSION, DCDSpec, DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment, KvTransferPolicy
from dgd.messages.meta import ObjectMeta

ISTIO_INJECT = "sidecar.istio.io/inject"
_SHARED_FIELDS = tuple(f.name for f in structs.fields(SharedComponentSpec))


def dcd_name(dgd_name: str, component: ComponentSpec, worker_hash: str) -> str:
    """The DCD name of a component: ``<dgd>-<component>``, plus ``-<hash>`` for workers (≤ 63 chars)."""
    if component.type in WORKER_TYPES:
        return worker_dcd_name(dgd_name, component.name, worker_hash)
    return component_resource_name(dgd_name, component.name)


def render_dcds(
    dgd: DynamoGraphDeployment,
    *,
    worker_hash: str,
    replicas: Mapping[str, int] | None = None,
    restart_at: Mapping[str, str] | None = None,
    gated: Set[str] = frozenset(),
) -> list[DynamoComponentDeployment]:
    """One DCD per component, in component order.

    ``replicas`` overrides a component's replicas by name (the rollout targets of new worker DCDs);
    ``restart_at`` is the ``nvidia.com/restartAt`` value to stamp per component name; components in
    ``gated`` wait for a checkpoint and get 0 replicas. The DGD must be defaulted and namespaced.
    """
    backend = graph_backend(dgd)
    has_epp = any(c.type == "epp" for c in dgd.spec.components or [])
    # Intra-pod GMS clients are checked for every component before any DCD is written.
    for index, component in enumerate(dgd.spec.components or []):
        spec = (component.pod_template or {}).get("spec") or {}
        names = [str(c.get("name")) for c in spec.get("containers") or [] if isinstance(c, dict)]
        try:
            check_extra_clients(component, names, "podTemplate.spec.containers")
        except RenderError as error:
            raise RenderError(f"spec.components[{index}].{error.path}", error.message) from error
    return [
        _render_dcd(dgd, component, worker_hash, backend, has_epp, replicas or {}, restart_at or {}, gated)
        for component in dgd.spec.components or []
    ]


def _render_dcd(
    dgd: DynamoGraphDeployment,
    component: ComponentSpec,
    worker_hash: str,
    backend: str | None,
    has_epp: bool,
    replicas: Mapping[str, int],
    restart_at: Mapping[str, str],
    gated: Set[str],
) -> DynamoComponentDeployment:
    dgd_name = dgd.metadata.name or ""
    namespace = dgd.metadata.namespace or ""
    is_worker = component.type in WORKER_TYPES
    user_labels = template_metadata(component.pod_template or {}, "labels")

    # Object labels: the user's pod-template labels, then the identity labels (which win).
    labels = dict(user_labels)
    labels[COMPONENT] = component.name
    labels[DYNAMO_NAMESPACE] = dynamo_namespace(
        namespace, dgd_name, global_namespace=bool(component.global_dynamo_namespace)
    )
    labels[GRAPH_NAME] = dgd_name
    if is_worker:
        labels[WORKER_HASH] = worker_hash
        if has_epp:
            labels[COMPONENT_CLASS] = "worker"

    # Pod template: graph defaults, then the operator's pod-template labels and annotations.
    prepared = apply_template_defaults(component, dgd)
    policy = kv_transfer.applies(dgd, component)
    if policy is not None:
        # No binding levels here: admission keeps clusterTopologyName to the Grove pathway.
        prepared = kv_transfer.with_policy(prepared, policy, ())
    template: JSON = prepared.pod_template or {}
    pod_labels = template_metadata(template, "labels")
    pod_annotations = template_metadata(template, "annotations")
    if is_worker:
        pod_labels[WORKER_HASH] = worker_hash
        if has_epp:
            pod_labels[COMPONENT_CLASS] = "worker"
    if component.type == "epp":
        pod_annotations.setdefault(ISTIO_INJECT, "false")
    if component.name in restart_at:
        pod_annotations[RESTART_AT] = restart_at[component.name]
    template = with_template_metadata(template, "labels", pod_labels)
    template = with_template_metadata(template, "annotations", pod_annotations)
    if component.type == "planner":
        pod_spec = dict(template.get("spec") or {})
        pod_spec.setdefault("serviceAccountName", PLANNER_SERVICE_ACCOUNT)
        template = {**template, "spec": pod_spec}

    # Metadata before spec, as Kubernetes prints a pod template.
    template = {key: template[key] for key in sorted(template, key=lambda k: (k != "metadata", k != "spec"))}
    count = replicas.get(component.name, component.replicas)
    spec = DCDSpec(
        **{name: getattr(prepared, name) for name in _SHARED_FIELDS},
        name=component.name,
        backend_framework=backend,  # type: ignore[arg-type]
    )
    spec = structs.replace(
        spec, pod_template=template or None, replicas=0 if component.name in gated else count
    )
    metadata = ObjectMeta(
        name=dcd_name(dgd_name, component, worker_hash),
        namespace=namespace,
        labels=dict(sorted(labels.items())),
        annotations=_object_annotations(dgd, component, policy),
    )
    return DynamoComponentDeployment(api_version=API_VERSION, metadata=metadata, spec=spec)


def _object_annotations(
    dgd: DynamoGraphDeployment, component: ComponentSpec, policy: KvTransferPolicy | None
) -> dict[str, str]:
    """The annotations of a component's DCD object (not of its pod template)."""
    return {
        DCD_SPEC_PAYLOAD: dcd_spec_payload(dgd, component.name),
        # The DCD controller hands the topology source on to the worker's pods.
        **(kv_transfer.source_annotations(policy) if policy is not None else {}),
    }


def workload_annotations(dcd: DynamoComponentDeployment) -> dict[str, str]:
    """The annotations a DCD's workload is shaped by (rollout strategy and bounds): its pod template's,
    which carry the DGD's ``spec.annotations`` merged in, then the DCD's own."""
    merged = template_metadata(dcd.spec.pod_template or {}, "annotations")
    merged.update(dcd.metadata.annotations or {})
    return merged


def worker_workload_annotations(dgd: DynamoGraphDeployment) -> dict[str, dict[str, str]]:
    """By worker component name, ``workload_annotations`` of the DCD ``render_dcds`` gives it before
    any restart stamp, computed without rendering a DCD: the rollout reads each worker's strategy
    (surge, unavailability) from them. The DGD must be defaulted and namespaced."""
    out: dict[str, dict[str, str]] = {}
    for component in dgd.spec.components or []:
        if component.type not in WORKER_TYPES:
            continue
        merged = inherited_annotations(component, dgd)
        merged.update(_object_annotations(dgd, component, kv_transfer.applies(dgd, component)))
        out[component.name] = merged
    return out
