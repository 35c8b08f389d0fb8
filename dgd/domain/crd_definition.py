"""What describes a custom resource kind (names, versions, printer columns, subresources, list semantics),
and the CustomResourceDefinition it renders to.

A :class:`CustomResource` is data; :func:`render_crd` is a pure function of it. Its schema always comes
from the message Struct (``crd_schema.structural_schema``), so a CRD cannot drift from its model.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from dgd.domain.crd_schema import node_at, structural_schema
from dgd.messages.base import JSONObject, Model, to_builtins

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"

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
