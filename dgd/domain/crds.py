"""The CustomResourceDefinitions of every kind the operator serves or simulates, built from the Structs.

One table (``RESOURCES``) says how each kind is served: its group and version, names, printer
columns, subresources and list semantics (each a ``crd_definition.CustomResource``). Its schema always
comes from the message Struct, so the CRDs in ``deploy/crds/`` cannot drift from the models without a
test noticing. Everything here is pure: the caller writes the files.

Only the ``nvidia.com`` kinds (``OWNED``) are this operator's to install: ``crds``, ``deploy/crds/``
and ``crd_files`` hold those alone. Grove's three (``SIMULATED_GROVE``) are our simplified models of
them, for the simulated cluster only (``all_crds``); printed, they would replace real Grove's schemas
on a cluster that runs Grove. A real cluster takes Grove's own CRDs from Grove.
"""

from __future__ import annotations

import yaml

from dgd.domain.crd_definition import (
    CustomResource,
    ListSemantics,
    OlderVersion,
    PrinterColumn,
    ScaleSubresource,
    render_crd,
)
from dgd.messages import dcd, dgd, dgdsa, grove, grove_children
from dgd.messages.base import JSONObject
from dgd.messages.dcd_v1alpha1 import DynamoComponentDeploymentV1Alpha1
from dgd.messages.dgdsa_v1alpha1 import DynamoGraphDeploymentScalingAdapterV1Alpha1
from dgd.messages.v1alpha1 import DynamoGraphDeploymentV1Alpha1

__all__ = [
    "OWNED",
    "RESOURCES",
    "CustomResource",
    "all_crds",
    "crd_files",
    "owned_crds",
    "render_crd",
    "render_crds_yaml",
]

DGD_PLURAL = "dynamographdeployments"

#: The first line of every generated file.
GENERATED_HEADER = "# Generated from the dgd/messages Structs by `make crds`; do not edit.\n"


AGE = PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp")
CONDITIONS_BY_TYPE = ListSemantics(path="status.conditions", type="map", keys=("type",))


def _count(name: str, json_path: str, priority: int | None = None) -> PrinterColumn:
    return PrinterColumn(name=name, type="integer", json_path=json_path, priority=priority)


def _scale(label_selector_path: str) -> ScaleSubresource:
    """A scale subresource over ``spec.replicas`` and ``status.replicas``, with the kind's pod selector."""
    return ScaleSubresource(
        spec_replicas_path=".spec.replicas",
        status_replicas_path=".status.replicas",
        label_selector_path=label_selector_path,
    )


BACKEND = PrinterColumn(
    name="Backend", type="string", json_path=".spec.backendFramework", description="Backend framework"
)


def _component_lists(prefix: str) -> tuple[ListSemantics, ...]:
    """The list fields of a component spec at ``prefix`` (DCD: ``spec``; DGD: ``spec.components[]``)."""
    gms = f"{prefix}.experimental.gpuMemoryService"
    return (
        ListSemantics(path=f"{gms}.extraClientContainers", type="set"),
        ListSemantics(path=f"{gms}.extraClientPods", type="map", keys=("name",)),
        ListSemantics(path=f"{prefix}.experimental.checkpoint.job.gmsClientContainers", type="set"),
    )


GROVE_MIN_BREACHED = PrinterColumn(
    name="MinBreached",
    type="string",
    json_path='.status.conditions[?(@.type=="MinAvailableBreached")].status',
    priority=1,
)


DGD = CustomResource(
    model=dgd.DynamoGraphDeployment,
    api_version=dgd.API_VERSION,
    plural=DGD_PLURAL,
    short_names=("dgd",),
    older=(OlderVersion(model=DynamoGraphDeploymentV1Alpha1, version="v1alpha1"),),
    columns=(
        PrinterColumn(
            name="Ready",
            type="string",
            json_path='.status.conditions[?(@.type=="Ready")].status',
            description="Whether every component of the graph is ready",
        ),
        BACKEND,
        AGE,
    ),
    lists=(
        ListSemantics(path="spec.components", type="map", keys=("name",)),
        *_component_lists("spec.components[]"),
        CONDITIONS_BY_TYPE,
    ),
)

DCD_AVAILABLE = PrinterColumn(
    name="Available",
    type="string",
    json_path=".status.conditions[?(@.type=='Available')].status",
    description="Whether the component's workload is available",
)

DCD = CustomResource(
    model=dcd.DynamoComponentDeployment,
    api_version=dcd.API_VERSION,
    plural=dcd.PLURAL,
    short_names=("dcd",),
    # v1alpha1 lists upstream's column over a field its schema never had, so it always shows empty.
    older=(
        OlderVersion(
            model=DynamoComponentDeploymentV1Alpha1,
            version="v1alpha1",
            columns=(
                PrinterColumn(
                    name="DynamoComponent",
                    type="string",
                    json_path=".spec.dynamoComponent",
                    description="Dynamo component",
                ),
                DCD_AVAILABLE,
                BACKEND,
                AGE,
            ),
        ),
    ),
    columns=(DCD_AVAILABLE, BACKEND, AGE),
    lists=(*_component_lists("spec"), CONDITIONS_BY_TYPE),
)

DGDSA_DGD = PrinterColumn(
    name="DGD", type="string", json_path=".spec.dgdRef.name", description="Graph deployment"
)
DGDSA_REPLICAS = PrinterColumn(
    name="REPLICAS", type="integer", json_path=".status.replicas", description="Replicas applied"
)
DGDSA_AGE = PrinterColumn(name="AGE", type="date", json_path=".metadata.creationTimestamp")

DGDSA = CustomResource(
    model=dgdsa.DynamoGraphDeploymentScalingAdapter,
    api_version=dgdsa.API_VERSION,
    plural=dgdsa.PLURAL,
    short_names=("dgdsa",),
    # v1alpha1 names the graph's service where v1beta1 names its component.
    older=(
        OlderVersion(
            model=DynamoGraphDeploymentScalingAdapterV1Alpha1,
            version="v1alpha1",
            columns=(
                DGDSA_DGD,
                PrinterColumn(
                    name="SERVICE", type="string", json_path=".spec.dgdRef.serviceName", description="Service"
                ),
                DGDSA_REPLICAS,
                DGDSA_AGE,
            ),
        ),
    ),
    columns=(
        DGDSA_DGD,
        PrinterColumn(
            name="COMPONENT", type="string", json_path=".spec.dgdRef.componentName", description="Component"
        ),
        DGDSA_REPLICAS,
        DGDSA_AGE,
    ),
    scale=_scale(".status.selector"),
)

PCS = CustomResource(
    model=grove.PodCliqueSet,
    api_version=grove.API_VERSION,
    plural=grove.PCS_PLURAL,
    short_names=("pcs",),
    columns=(
        _count("Replicas", ".spec.replicas"),
        _count("Available", ".status.availableReplicas"),
        _count("Updated", ".status.updatedReplicas"),
        _count("PCLQs-Updated", ".status.updateProgress.updatedPodCliquesCount"),
        _count("PCLQs-Total", ".status.updateProgress.totalPodCliquesCount"),
        _count("PCSGs-Updated", ".status.updateProgress.updatedPodCliqueScalingGroupsCount"),
        _count("PCSGs-Total", ".status.updateProgress.totalPodCliqueScalingGroupsCount"),
        AGE,
    ),
    scale=_scale(".status.hpaPodSelector"),
    lists=(
        ListSemantics(path="spec.template.cliques", type="map", keys=("name",)),
        ListSemantics(path="spec.template.cliques[].spec.autoScalingConfig.metrics", type="atomic"),
        ListSemantics(path="spec.template.podCliqueScalingGroups[].scaleConfig.metrics", type="atomic"),
    ),
)

PCLQ = CustomResource(
    model=grove_children.PodClique,
    api_version=grove.API_VERSION,
    plural=grove_children.PCLQ_PLURAL,
    short_names=("pclq",),
    columns=(
        _count("MinAvail", ".spec.minAvailable"),
        _count("Replicas", ".spec.replicas"),
        _count("Ready", ".status.readyReplicas"),
        _count("Scheduled", ".status.scheduledReplicas"),
        _count("Updated", ".status.updatedReplicas"),
        _count("Gated", ".status.scheduleGatedReplicas", priority=1),
        GROVE_MIN_BREACHED,
        AGE,
    ),
    scale=_scale(".status.hpaPodSelector"),
    lists=(ListSemantics(path="spec.autoScalingConfig.metrics", type="atomic"),),
)

PCSG = CustomResource(
    model=grove_children.PodCliqueScalingGroup,
    api_version=grove.API_VERSION,
    plural=grove_children.PCSG_PLURAL,
    short_names=("pcsg",),
    columns=(
        _count("MinAvail", ".spec.minAvailable"),
        _count("Replicas", ".spec.replicas"),
        _count("Available", ".status.availableReplicas"),
        _count("Scheduled", ".status.scheduledReplicas"),
        _count("Updated", ".status.updatedReplicas"),
        _count("PCLQs-Updated", ".status.updateProgress.updatedPodCliquesCount"),
        _count("PCLQs-Total", ".status.updateProgress.totalPodCliquesCount"),
        GROVE_MIN_BREACHED,
        AGE,
    ),
    scale=_scale(".status.selector"),
)

#: The kinds this operator owns and installs: ``crds`` prints these, ``deploy/crds/`` holds these.
OWNED: tuple[CustomResource, ...] = (DGD, DCD, DGDSA)

#: Our models of Grove's kinds, served by the simulated cluster only (never printed or written).
SIMULATED_GROVE: tuple[CustomResource, ...] = (PCS, PCLQ, PCSG)

#: Every kind the simulated cluster serves, in the order ``all_crds`` returns them: ours, then Grove's.
RESOURCES: tuple[CustomResource, ...] = (*OWNED, *SIMULATED_GROVE)


def all_crds() -> list[JSONObject]:
    """The CRDs of the simulated cluster, ``RESOURCES`` order (stable from run to run): ours and our
    simplified Grove's. Not for a real cluster: there Grove's own CRDs come from Grove."""
    return [render_crd(resource) for resource in RESOURCES]


def owned_crds() -> list[JSONObject]:
    """The CRDs this operator owns (``OWNED``, in order), the ones to install on a real cluster."""
    return [render_crd(resource) for resource in OWNED]


def render_crds_yaml() -> str:
    """The owned CRDs as one multi-document YAML string, fields in the order Kubernetes writes them."""
    return yaml.safe_dump_all(owned_crds(), sort_keys=False)


def crd_files() -> dict[str, str]:
    """The contents of ``deploy/crds/``, the owned kinds only: file name (``<group>_<plural>.yaml``) to
    YAML text."""
    return {
        f"{resource.group}_{resource.plural}.yaml": GENERATED_HEADER
        + yaml.safe_dump(render_crd(resource), sort_keys=False)
        for resource in OWNED
    }
