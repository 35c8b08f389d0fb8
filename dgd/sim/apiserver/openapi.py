"""The OpenAPI v3 documents the HTTP facade serves (``/openapi/v3`` and one per group/version).

kubectl fetches them before ``apply`` to decide how to validate: a PATCH operation of the kind
that lists the ``fieldValidation`` query parameter tells it the server validates fields itself, so
kubectl sends ``fieldValidation=Strict`` instead of validating client-side (``kubectl apply`` with
its default ``--validate``). ``kubectl explain`` reads the schemas: a custom resource's is its
CRD's ``openAPIV3Schema``; a built-in kind's is an open object (this server has no schema for it).
Each group/version's URL carries the hash of its document, as the API server's do, so a client's
cached copy is refreshed when a CRD changes.
"""

from __future__ import annotations

import hashlib

import msgspec

from dgd.messages.base import JSONObject
from dgd.sim.apiserver.catalog import Catalog, Served

#: The PATCH bodies advertised. Strategic merge patch is left out even for built-in kinds: kubectl
#: would then build it from these schemas, which lack the patch strategies; without it kubectl
#: uses its own compiled-in patch metadata for built-in kinds, and a JSON merge patch otherwise.
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def root(catalog: Catalog) -> JSONObject:
    """``GET /openapi/v3``: where each group/version's document is, with its hash."""
    paths: JSONObject = {}
    for group, versions in catalog.group_versions().items():
        for version in versions:
            path = _prefix(group, version)[1:]
            digest = document_hash(group_version(catalog, group, version))
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def group_version(catalog: Catalog, group: str, version: str) -> JSONObject:
    """``GET /openapi/v3/apis/<group>/<version>`` (``/openapi/v3/api/v1`` for the core group)."""
    paths: JSONObject = {}
    schemas: JSONObject = {}
    for served in catalog.in_group_version(group, version):
        schemas[schema_name(served)] = _schema(served)
        paths.update(_paths(served))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def document_hash(document: JSONObject) -> str:
    return hashlib.sha512(msgspec.json.encode(document, order="sorted")).hexdigest().upper()


def schema_name(served: Served) -> str:
    """``io.k8s.api.core.v1.ConfigMap`` for the core group; the group reversed otherwise
    (``com.nvidia.v1beta1.DynamoGraphDeployment``)."""
    resource = served.resource
    if not resource.group:
        return f"io.k8s.api.core.{resource.version}.{resource.kind}"
    reversed_group = ".".join(reversed(resource.group.split(".")))
    return f"{reversed_group}.{resource.version}.{resource.kind}"


def _schema(served: Served) -> JSONObject:
    resource = served.resource
    schema: JSONObject = dict(
        served.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    )
    schema["x-kubernetes-group-version-kind"] = [
        {"group": resource.group, "version": resource.version, "kind": resource.kind}
    ]
    return schema


def _paths(served: Served) -> JSONObject:
    resource = served.resource
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    reference = {"$ref": f"#/components/schemas/{schema_name(served)}"}
    body = {"content": {"application/json": {"schema": reference}}}
    returns = {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}}
    patch_body = {"content": {kind: {"schema": {"type": "object"}} for kind in _PATCH_TYPES}}
    namespace = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = f"{_prefix(resource.group, resource.version)}{namespace}/{resource.plural}"
    scope = [_parameter("namespace", "path")] if resource.namespaced else []

    def operation(action: str, *query: str, **extra: JSONObject) -> JSONObject:
        return {
            "operationId": f"{action}{resource.kind}",
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "parameters": [_parameter(name, "query") for name in query],
            "responses": returns,
            **extra,
        }

    writes = ("dryRun", "fieldManager", "fieldValidation")
    paths: JSONObject = {
        collection: {
            "parameters": scope,
            "get": operation("list", "labelSelector", "fieldSelector", "resourceVersion", "watch"),
            "post": operation("post", *writes, requestBody=body),
            "delete": operation("deletecollection", "labelSelector", "propagationPolicy"),
        },
        f"{collection}/{{name}}": {
            "parameters": [*scope, _parameter("name", "path")],
            "get": operation("get"),
            "put": operation("put", *writes, requestBody=body),
            "patch": operation("patch", *writes, "force", requestBody=patch_body),
            "delete": operation("delete", "propagationPolicy", "gracePeriodSeconds"),
        },
    }
    if resource.status:
        paths[f"{collection}/{{name}}/status"] = {
            "parameters": [*scope, _parameter("name", "path")],
            "get": operation("get"),
            "put": operation("put", *writes, requestBody=body),
            "patch": operation("patch", *writes, "force", requestBody=patch_body),
        }
    return paths


def _parameter(name: str, where: str) -> JSONObject:
    return {"name": name, "in": where, "required": where == "path", "schema": {"type": "string"}}


def _prefix(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"
