"""The Grove PodCliqueSet of a DGD (dgd-domain §9.3, podspec §9).

``render_pcs`` is a pure function of the defaulted DGD, the operator config and the PodCliqueSet that
exists now (``None`` before the first write): that one observation decides the adjustments upstream
makes on update (replicas and order kept, worker-hash suffix, restart stamps carried, legacy
selectors and topology kept). Provider overrides are applied afterwards (``provider_overrides``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from functools import partial

from msgspec import structs

from dgd.domain.metadata_keys import (
    DISCOVERY_BACKEND,
    DISCOVERY_ENABLED,
    DYNAMO_NAMESPACE,
    GRAPH_NAME,
    GROVE_UPDATE_STRATEGY,
    RESTART_AT,
    WORKER_HASH,
)
from dgd.domain.naming import component_budget, dynamo_namespace, pcs_name
from dgd.domain.pod_merge import JSON
from dgd.domain.render import kv_transfer
from dgd.domain.render import pcs_adjustments as adjust
from dgd.domain.render.clique_metadata import clique_annotations, clique_labels
from dgd.domain.render.errors import RenderError
from dgd.domain.render.gms import main_gpus
from dgd.domain.render.gms_inter_pod import (
    FAILOVER_GROUP_LABEL,
    engine_pod,
    resource_sharing,
    uses_inter_pod_failover,
    uses_inter_pod_gms,
    weight_server_pod,
)
from dgd.domain.render.gms_inter_pod import claim_templates as inter_pod_claim_templates
from dgd.domain.render.gms_inter_pod import starts_after as inter_pod_starts_after
from dgd.domain.render.gpu_count import ClaimTemplates
from dgd.domain.render.multinode_hosts import Deployer, GroveRank
from dgd.domain.render.podspec import PullSecrets, render_pod_spec
from dgd.domain.render.template_defaults import (
    apply_template_defaults,
    component_backend,
    template_metadata,
    with_template_metadata,
)
from dgd.domain.roles import Role, is_multinode, roles, uses_pcsg
from dgd.domain.worker_hash import has_workers, worker_hash
from dgd.messages.component import WORKER_TYPES, ComponentSpec
from dgd.messages.config import OperatorConfig, termination_delay
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.grove import (
    API_VERSION,
    HeadlessServiceConfig,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueSetSpec,
    PodCliqueSetTemplateSpec,
    PodCliqueSpec,
    PodCliqueTemplateSpec,
    ResourceClaimTemplateConfig,
    TopologyConstraint,
    TopologyPack,
    UpdateStrategy,
)
from dgd.messages.meta import ObjectMeta

KAI_QUEUE_ANNOTATION, DEFAULT_KAI_QUEUE = "nvidia.com/kai-scheduler-queue", "dynamo"
VOLCANO_QUEUE_ANNOTATION = "nvidia.com/volcano-queue"
VOLCANO_PCS_ANNOTATION = "scheduling.grove.io/volcano-queue"


def graph_pcs_name(dgd: DynamoGraphDeployment) -> str:
    """The PodCliqueSet name: the DGD name, shortened to leave room for the longest clique (§18)."""
    budgets = [
        component_budget(c.name, [r.name for r in roles(c)] if uses_pcsg(c) else [])
        for c in dgd.spec.components or []
    ]
    return pcs_name(dgd.metadata.name or "", max(budgets, default=0))


def graph_discovery_backend(dgd: DynamoGraphDeployment, config: OperatorConfig) -> str:
    """Discovery for the whole graph: the DGD annotation, else the operator config."""
    return (dgd.metadata.annotations or {}).get(DISCOVERY_BACKEND) or config.discovery.backend


def render_pcs(
    dgd: DynamoGraphDeployment,
    *,
    config: OperatorConfig,
    existing: PodCliqueSet | None,
    worker_generation_changed: bool = False,
    restart_at: Mapping[str, str] | None = None,
    gated: Set[str] = frozenset(),
    pull_secrets: PullSecrets | None = None,
    topology_domains: Sequence[str] = (),
    claim_templates: ClaimTemplates | None = None,
    desired_hash: str | None = None,
) -> PodCliqueSet:
    """The desired PodCliqueSet of a defaulted, namespaced DGD.

    ``worker_generation_changed`` comes from the worker-hash plan (§12.7); ``restart_at`` is the
    ``nvidia.com/restartAt`` value per component the restart state selects (others keep what
    ``existing`` carries); components in ``gated`` wait for a checkpoint and get 0 replicas.
    ``topology_domains`` are the levels of the ClusterTopologyBinding a KV-transfer policy names
    (``kv_transfer.binding_domains``); ``claim_templates`` (by name) are the ResourceClaimTemplates
    multinode launches count GPUs from. ``desired_hash``: ``worker_hash(dgd)`` when the caller has it
    already (the costliest part of a render; computed here otherwise).
    """
    name = dgd.metadata.name or ""
    annotations = dgd.metadata.annotations or {}
    legacy = adjust.legacy_workers(dgd, existing)
    suffixed = has_workers(dgd) and (
        existing is None or adjust.all_workers_hashed(existing) or worker_generation_changed
    )
    hash_value = (desired_hash or worker_hash(dgd)) if suffixed else None
    stamps = {**adjust.carried_restarts(existing), **(restart_at or {})}
    kai, volcano = _schedulers(config, annotations)

    cliques: list[PodCliqueTemplateSpec] = []
    groups: list[PodCliqueScalingGroupConfig] = []
    claims: list[ResourceClaimTemplateConfig] = []
    owner: dict[str, str] = {}
    for index, component in enumerate(dgd.spec.components or []):
        built, group = _component_cliques(
            dgd, component, index, config, hash_value, component.name in legacy, stamps, kai, volcano,
            gated, pull_secrets, topology_domains, claim_templates,
        )  # fmt: skip
        cliques += built
        owner.update({c.name: component.name for c in built})
        if group is not None:
            groups.append(group)
            owner[group.name] = component.name
        if uses_inter_pod_gms(component):
            claims += inter_pod_claim_templates(component, roles(component))

    template = PodCliqueSetTemplateSpec(
        cliques=cliques,
        clique_startup_type=(
            "CliqueStartupTypeExplicit"
            if any(c.spec.starts_after for c in cliques)
            else "CliqueStartupTypeAnyOrder"
        ),
        priority_class_name=dgd.spec.priority_class_name or None,
        headless_service_config=HeadlessServiceConfig(publish_not_ready_addresses=True),
        pod_clique_scaling_groups=groups or None,
        termination_delay=termination_delay(config),
        topology_constraint=_graph_topology(dgd),
        resource_claim_templates=claims or None,
    )
    pcs_annotations = dict(dgd.spec.annotations or {})
    if volcano and VOLCANO_QUEUE_ANNOTATION in annotations:
        pcs_annotations[VOLCANO_PCS_ANNOTATION] = annotations[VOLCANO_QUEUE_ANNOTATION]
    metadata = ObjectMeta(
        name=graph_pcs_name(dgd),
        namespace=dgd.metadata.namespace,
        labels=dict(sorted({**(dgd.spec.labels or {}), GRAPH_NAME: name}.items())),
        annotations=dict(sorted(pcs_annotations.items())) or None,
    )
    desired = PodCliqueSet(
        api_version=API_VERSION,
        metadata=metadata,
        spec=PodCliqueSetSpec(template=template, replicas=1, update_strategy=_update_strategy(annotations)),
    )
    return adjust.against_existing(desired, existing, owner=owner, gated=gated)


def _component_cliques(
    dgd: DynamoGraphDeployment,
    component: ComponentSpec,
    index: int,
    config: OperatorConfig,
    hash_value: str | None,
    legacy: bool,
    stamps: Mapping[str, str],
    kai: str | None,
    volcano: bool,
    gated: Set[str],
    pull_secrets: PullSecrets | None,
    topology_domains: Sequence[str],
    claim_templates: ClaimTemplates | None,
) -> tuple[list[PodCliqueTemplateSpec], PodCliqueScalingGroupConfig | None]:
    """The cliques of one component, and its scaling group when it has one."""
    namespace = dgd.metadata.namespace or ""
    global_namespace = bool(component.global_dynamo_namespace)
    dyn_ns = dynamo_namespace(namespace, dgd.metadata.name or "", global_namespace=global_namespace)
    discovery = graph_discovery_backend(dgd, config)

    # Per-component preparation (§9.1): graph defaults, namespace label, discovery, worker hash.
    prepared = apply_template_defaults(component, dgd)
    policy = kv_transfer.applies(dgd, component)
    if policy is not None:
        prepared = kv_transfer.with_policy(prepared, policy, topology_domains)
    template = prepared.pod_template or {}
    labels = {**template_metadata(template, "labels"), DYNAMO_NAMESPACE: dyn_ns}
    if hash_value is not None and component.type in WORKER_TYPES:
        labels[WORKER_HASH] = hash_value
    pod_annotations = {**template_metadata(template, "annotations"), DISCOVERY_BACKEND: discovery}
    template = with_template_metadata(
        with_template_metadata(template, "labels", labels), "annotations", pod_annotations
    )
    workload_type = "worker" if legacy else (component.type or "")
    prepared = structs.replace(prepared, pod_template=template, type=workload_type or None)
    backend = component_backend(prepared, dgd.spec.backend_framework, f"spec.components[{index}]")

    clique_label_map = clique_labels(
        dgd, component, template, workload_type=workload_type, dynamo_namespace=dyn_ns,
        discovery_backend=discovery, kai_queue=kai,
    )  # fmt: skip
    annotations = _annotations(dgd, component, template, stamps.get(component.name))

    role_list = roles(prepared)
    in_group = uses_pcsg(prepared)
    worker_names = [r.name for r in role_list if r.kind == "worker"]
    inter_pod = uses_inter_pod_gms(prepared)
    after = inter_pod_starts_after(role_list) if inter_pod else {}
    cliques = []
    for role in role_list:
        render = partial(
            render_pod_spec, backend=backend, namespace=namespace, parent_dgd_name=dgd.metadata.name or "",
            config=config, pull_secrets=pull_secrets, claim_templates=claim_templates,
        )  # fmt: skip
        pod_spec = _with_scheduler(_role_pod_spec(prepared, role, render), kai is not None, volcano)
        starts_after = (
            worker_names if backend == "trtllm" and role.kind == "leader" else after.get(role.name, [])
        )
        spec = PodCliqueSpec(
            role_name=role.name,
            replicas=0 if component.name in gated and role.kind != "gms" else role.replicas,
            pod_spec=pod_spec,
            min_available=_min_available(component, role, in_group),
            starts_after=list(starts_after) or None,
        )
        topology = None if in_group else _component_topology(dgd, component)
        cliques.append(
            PodCliqueTemplateSpec(
                name=role.name,
                spec=spec,
                labels=_role_labels(clique_label_map, prepared, role),
                annotations=annotations or None,
                topology_constraint=topology,
            )
        )
    group = _scaling_group(dgd, component, role_list, gated) if in_group else None
    return cliques, group


def _annotations(
    dgd: DynamoGraphDeployment, component: ComponentSpec, template: JSON, stamp: str | None
) -> dict[str, str]:
    """A component's clique annotations: workers tell the topology-label controller what to copy
    (KV-transfer policy), and a restart stamp rolls the pods."""
    annotations = clique_annotations(dgd, component, template)
    policy = kv_transfer.applies(dgd, component)
    if policy is not None:
        annotations.update(kv_transfer.source_annotations(policy))
    if stamp is not None:
        annotations[RESTART_AT] = stamp
    return dict(sorted(annotations.items()))


def _role_pod_spec(component: ComponentSpec, role: Role, render: Callable[..., JSON]) -> JSON:
    """A role's pod spec; in the inter-pod GMS layout, a rank's weight server (from the single-node
    engine pod, upstream ``generatePodSpecForRole``) or an engine of that rank."""
    if not uses_inter_pod_gms(component):
        return render(component, role=role.kind, deployer="grove")
    if role.kind == "gms":
        base = render(structs.replace(component, multinode=None), role="main", deployer="grove")
        return weight_server_pod(base, role.rank, main_gpus(component))
    deployer: Deployer = GroveRank(role.rank) if is_multinode(component) else "grove"
    pod = render(component, role=role.kind, deployer=deployer)
    return engine_pod(pod, role.rank, failover=uses_inter_pod_failover(component))


def _role_labels(labels: dict[str, str], component: ComponentSpec, role: Role) -> dict[str, str]:
    """The clique labels of one role: weight servers are not discovered (they run no Dynamo runtime);
    inter-pod failover engines are marked as members of their engine group (dgd-domain §9.3)."""
    if role.kind == "gms":
        return {k: v for k, v in labels.items() if k not in (DISCOVERY_BACKEND, DISCOVERY_ENABLED)}
    if uses_inter_pod_failover(component):
        return dict(sorted({**labels, FAILOVER_GROUP_LABEL: "true"}.items()))
    return labels


def _scaling_group(
    dgd: DynamoGraphDeployment, component: ComponentSpec, role_list: list[Role], gated: Set[str]
) -> PodCliqueScalingGroupConfig:
    """The scaling group of a component Grove scales as a group (held at 0 while gated)."""
    replicas = component.replicas if component.replicas is not None else 1
    return PodCliqueScalingGroupConfig(
        name=component.name.lower(),
        clique_names=[r.name for r in role_list],
        replicas=0 if component.name in gated else replicas,
        min_available=component.min_available or 1,
        topology_constraint=_component_topology(dgd, component),
        resource_sharing=resource_sharing(component, role_list) if uses_inter_pod_gms(component) else None,
    )


def _min_available(component: ComponentSpec, role: Role, in_group: bool) -> int:
    # Every rank of a multinode engine must be up, but an inter-pod failover group needs only one.
    if role.kind in ("leader", "worker") and not uses_inter_pod_failover(component):
        return role.replicas
    if not in_group and component.min_available is not None:
        return component.min_available
    return 1


def _graph_topology(dgd: DynamoGraphDeployment) -> TopologyConstraint | None:
    constraint = dgd.spec.topology_constraint
    if constraint is None or not constraint.pack_domain:
        return None
    return TopologyConstraint(
        topology_name=constraint.cluster_topology_name, pack=TopologyPack(required=constraint.pack_domain)
    )


def _component_topology(dgd: DynamoGraphDeployment, component: ComponentSpec) -> TopologyConstraint | None:
    if component.topology_constraint is None:
        return None
    graph = dgd.spec.topology_constraint
    # The topology name is inherited from the PodCliqueSet unless the graph packs nothing itself.
    name = graph.cluster_topology_name if graph is not None and not graph.pack_domain else None
    return TopologyConstraint(
        topology_name=name, pack=TopologyPack(required=component.topology_constraint.pack_domain)
    )


def _update_strategy(annotations: Mapping[str, str]) -> UpdateStrategy | None:
    value = annotations.get(GROVE_UPDATE_STRATEGY)
    if value is None:
        return None
    if value not in ("RollingRecreate", "OnDelete"):
        raise RenderError(
            f"metadata.annotations[{GROVE_UPDATE_STRATEGY}]",
            f'{value!r} must be "RollingRecreate" or "OnDelete"',
        )
    return UpdateStrategy(type=value)  # type: ignore[arg-type]


def _schedulers(config: OperatorConfig, annotations: Mapping[str, str]) -> tuple[str | None, bool]:
    """The KAI queue when the KAI gate is on, and whether the Volcano gate is on."""
    kai = config.orchestrators.kai_scheduler.enabled is True
    volcano = config.orchestrators.volcano_scheduler.enabled is True
    if kai and volcano:
        raise RenderError(
            "orchestrators",
            "the KAI and Volcano schedulers cannot both be enabled in the operator configuration",
        )
    return (annotations.get(KAI_QUEUE_ANNOTATION) or DEFAULT_KAI_QUEUE) if kai else None, volcano


def _with_scheduler(pod_spec: dict[str, object], kai: bool, volcano: bool) -> dict[str, object]:
    if kai and not pod_spec.get("schedulerName"):
        return {**pod_spec, "schedulerName": "kai-scheduler"}
    if volcano:
        return {**pod_spec, "schedulerName": "volcano"}
    return pod_spec
