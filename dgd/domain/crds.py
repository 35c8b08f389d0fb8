"""The CustomResourceDefinitions of every kind the operator serves or simulates, built from the Structs.

One table (``RESOURCES``) says how each kind is served: its group and version, names, printer
columns, subresources and list semantics. Its schema always comes from the message Struct
(``crd_schema.structural_schema``), so the CRDs in ``deploy/crds/`` cannot drift from the models
without a test noticing. Everything here is pure: the caller writes the files.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import yaml

from dgd.domain.crd_schema import node_at, structural_schema
from dgd.messages import dcd, dgd, dgdsa, grove, grove_children
from dgd.messages.base import JSONObject, Model, to_builtins
from dgd.messages.dcd_v1alpha1 import DynamoComponentDeploymentV1Alpha1
from dgd.messages.dgdsa_v1alpha1 import DynamoGraphDeploymentScalingAdapterV1Alpha1
from dgd.messages.v1alpha1 import DynamoGraphDeploymentV1Alpha1

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"
DGD_PLURAL = "dynamographdeployments"

#: The first line of every generated file.
GENERATED_HEADER = "# Generated from the dgd/messages Structs by `make crds`; do not edit.\n"

ColumnType = Literal["string", "integer", "number", "boolean", "date"]
ListType = Literal["map", "set", "atomic"]


class PrinterColumn(Model, frozen=True):
    """A ``kubectl get`` column (``additionalPrinterColumns``); priority 1 shows only with ``-o wide``."""

    name: str
    type: ColumnType
    json_path: str
    description: str | None = None
    priority: int | None = None


class ScaleSubresource(Model, frozen=True):
    """Where the scale subresource reads and writes replicas and finds the pod selector."""

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str


class ListSemantics(msgspec.Struct, frozen=True):
    """How the API server merges a list field: a ``map`` is keyed by ``keys`` in each item."""

    path: str
    type: ListType
    keys: tuple[str, ...] = ()


class OlderVersion(msgspec.Struct, frozen=True, kw_only=True):
    """A version served beside the stored one, converted by the operator's conversion webhook.

    ``columns`` are its own printer columns where they differ from the stored version's (``None``:
    the same ones)."""

    model: type[Model]
    version: str
    columns: tuple[PrinterColumn, ...] | None = None


#: Where the API server sends conversion reviews: the chart's webhook Service (the operator patches
#: the CA bundle in at run time, and ``--webhook-register url`` the address; supplement §4.8).
CONVERSION_SERVICE = {
    "namespace": "dynamo-system",
    "name": "dynamo-operator-webhook-service",
    "path": "/convert",
}


class CustomResource(msgspec.Struct, frozen=True, kw_only=True):
    """How one kind is served: the stored version (and any ``older`` ones the conversion webhook
    converts), namespaced, with a status subresource.

    The kind is the root Struct's tag, so the served kind and the decoded kind are the same string.
    """

    model: type[Model]
    api_version: str
    plural: str
    short_names: tuple[str, ...]
    columns: tuple[PrinterColumn, ...]
    scale: ScaleSubresource | None = None
    lists: tuple[ListSemantics, ...] = ()
    older: tuple[OlderVersion, ...] = ()

    @property
    def kind(self) -> str:
        tag = self.model.__struct_config__.tag
        assert isinstance(tag, str), f"{self.model.__name__} is not tagged with its kind"
        return tag

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.split("/")[1]

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"


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

#: Every kind, in the order ``all_crds`` returns them: Dynamo's first, then Grove's.
RESOURCES: tuple[CustomResource, ...] = (DGD, DCD, DGDSA, PCS, PCLQ, PCSG)


def _version(
    resource: CustomResource,
    model: type[Model],
    name: str,
    *,
    storage: bool,
    columns: tuple[PrinterColumn, ...] | None = None,
) -> JSONObject:
    # The schema comes from the Struct; list semantics are added where the API server needs them.
    schema = structural_schema(model)
    for semantics in resource.lists if storage else ():
        node = node_at(schema, semantics.path)
        node["x-kubernetes-list-type"] = semantics.type
        if semantics.keys:
            node["x-kubernetes-list-map-keys"] = list(semantics.keys)
    # Status is always its own subresource; scale only where something scales the kind.
    subresources: JSONObject = {"status": {}}
    if resource.scale is not None:
        subresources["scale"] = to_builtins(resource.scale)
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "additionalPrinterColumns": [to_builtins(column) for column in columns or resource.columns],
        "schema": {"openAPIV3Schema": schema},
        "subresources": subresources,
    }


def render_crd(resource: CustomResource) -> JSONObject:
    """The CustomResourceDefinition of one kind, as a plain JSON object. A kind served in older
    versions too converts through the operator's webhook; the CA bundle is left out, so applying
    the CRD again (server-side) keeps the one the operator patched in."""
    versions = [_version(resource, resource.model, resource.version, storage=True)]
    versions += [
        _version(resource, older.model, older.version, storage=False, columns=older.columns)
        for older in resource.older
    ]
    conversion: JSONObject = {}
    if resource.older:
        conversion["conversion"] = {
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": dict(CONVERSION_SERVICE)},
            },
        }
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {"name": resource.name},
        "spec": {
            "group": resource.group,
            "names": {
                "kind": resource.kind,
                "listKind": f"{resource.kind}List",
                "plural": resource.plural,
                "singular": resource.kind.lower(),
                "shortNames": list(resource.short_names),
            },
            "scope": "Namespaced",
            "versions": versions,
            **conversion,
        },
    }


def all_crds() -> list[JSONObject]:
    """Every CustomResourceDefinition, in ``RESOURCES`` order (stable from run to run)."""
    return [render_crd(resource) for resource in RESOURCES]


def render_crds_yaml() -> str:
    """All CRDs as one multi-document YAML string, fields in the order Kubernetes writes them."""
    return yaml.safe_dump_all(all_crds(), sort_keys=False)


def crd_files() -> dict[str, str]:
    """The contents of ``deploy/crds/``: file name (``<group>_<plural>.yaml``) to YAML text."""
    return {
        f"{resource.group}_{resource.plural}.yaml": GENERATED_HEADER
        + yaml.safe_dump(render_crd(resource), sort_keys=False)
        for resource in RESOURCES
    }
