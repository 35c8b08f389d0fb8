"""What the HTTP facade serves: one ``Served`` kind per resource, and the discovery documents kubectl reads.

A served kind is a ``Resource`` of the memory server plus what clients look it up by: its singular
name, short names (``dgd``, ``cm``), printer columns and OpenAPI schema. For custom resources those
come from the ``CustomResourceDefinition`` stored in the cluster, as a real API server takes them
from the CRD; for built-in kinds from a small table here (short names only; no schema).

Discovery is served both ways kubectl asks for it: the aggregated ``apidiscovery.k8s.io/v2``
document (one request for every group) and the legacy per-group-version ``APIResourceList``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject

#: The CustomResourceDefinition kind, served like any cluster-scoped object (its status too).
CUSTOM_RESOURCE_DEFINITION = Resource[JSONObject](
    group="apiextensions.k8s.io",
    version="v1",
    kind="CustomResourceDefinition",
    plural="customresourcedefinitions",
    namespaced=False,
    status=True,
)

#: Short names of the built-in kinds (``kubectl api-resources``).
BUILTIN_SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "configmaps": ("cm",),
    "customresourcedefinitions": ("crd", "crds"),
    "deployments": ("deploy",),
    "events": ("ev",),
    "ingresses": ("ing",),
    "namespaces": ("ns",),
    "persistentvolumeclaims": ("pvc",),
    "pods": ("po",),
    "serviceaccounts": ("sa",),
    "services": ("svc",),
}


def _column(name: str, json_path: str, kind: str = "string", priority: int = 0) -> JSONObject:
    return {"name": name, "type": kind, "jsonPath": json_path, "priority": priority}


_AGE = _column("Age", ".metadata.creationTimestamp", "date")

#: Printer columns of the built-in kinds (a few of ``kubectl get``'s usual ones; others: Age only).
BUILTIN_COLUMNS: dict[tuple[str, str], tuple[JSONObject, ...]] = {
    ("", "pods"): (_column("Status", ".status.phase"), _AGE, _column("Node", ".spec.nodeName", priority=1)),
    ("apps", "deployments"): (
        _column("Ready", ".status.readyReplicas", "integer"),
        _column("Up-to-date", ".status.updatedReplicas", "integer"),
        _column("Available", ".status.availableReplicas", "integer"),
        _AGE,
    ),
    ("", "events"): (
        _column("Type", ".type"),
        _column("Reason", ".reason"),
        _column("Object", ".involvedObject.name"),
        _column("Message", ".message"),
        _AGE,
    ),
    ("events.k8s.io", "events"): (
        _column("Type", ".type"),
        _column("Reason", ".reason"),
        _column("Object", ".regarding.name"),
        _column("Note", ".note"),
        _AGE,
    ),
}

#: Built-in kinds in the ``all`` category (``kubectl get all``).
BUILTIN_ALL = frozenset({("", "pods"), ("", "services"), ("apps", "deployments")})

VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


class Served(msgspec.Struct, frozen=True):
    """One kind at one version as the facade serves it (``schema``: that version's
    ``openAPIV3Schema`` in the CRD, if any). ``stored``: the memory server's kind, when this version
    is not the one stored and objects are converted (by ``strategy``: ``None`` or ``Webhook``)."""

    resource: Resource[Any]
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[JSONObject, ...] = ()
    schema: JSONObject | None = None
    stored: Resource[Any] | None = None
    strategy: str = "None"

    @property
    def group_version(self) -> str:
        return self.resource.api_version


class Catalog:
    """The served kinds, found by group/version/plural; built fresh from the stored CRDs per request.

    Every version a CRD serves is listed, as a real API server lists them: the stored one, and the
    others (converted on each request, ``facade_conversion``) — those a conversion webhook converts
    only if ``webhook`` (the facade has one).
    """

    def __init__(
        self, resources: Iterable[Resource[Any]], crds: Iterable[JSONObject] = (), *, webhook: bool = False
    ) -> None:
        definitions = {_crd_key(crd): crd for crd in crds}
        self.kinds: list[Served] = []
        for resource in resources:
            self.kinds.append(_served(resource, definitions))
            self.kinds += _other_versions(
                resource, definitions.get((resource.group, resource.plural)), webhook
            )
        self._by_path = {(s.resource.group, s.resource.version, s.resource.plural): s for s in self.kinds}

    def find(self, group: str, version: str, plural: str) -> Served | None:
        return self._by_path.get((group, version, plural))

    def group_versions(self) -> dict[str, list[str]]:
        """Each group (``""``: core) and its versions, preferred version first."""
        groups: dict[str, set[str]] = {}
        for served in self.kinds:
            groups.setdefault(served.resource.group, set()).add(served.resource.version)
        return {group: sorted(versions, key=version_priority) for group, versions in sorted(groups.items())}

    def in_group_version(self, group: str, version: str) -> list[Served]:
        kinds = (s for s in self.kinds if (s.resource.group, s.resource.version) == (group, version))
        return sorted(kinds, key=lambda served: served.resource.plural)

    # Legacy discovery.

    def api_versions(self, address: str) -> JSONObject:
        """``GET /api``."""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }

    def api_group_list(self) -> JSONObject:
        """``GET /apis``."""
        groups = [self.api_group(group) for group in self.group_versions() if group]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_group(self, group: str) -> JSONObject:
        """``GET /apis/<group>``."""
        versions = [
            {"groupVersion": f"{group}/{version}", "version": version}
            for version in self.group_versions().get(group, ())
        ]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": versions,
            "preferredVersion": versions[0] if versions else None,
        }

    def api_resource_list(self, group: str, version: str) -> JSONObject:
        """``GET /api/v1`` or ``GET /apis/<group>/<version>``."""
        resources: list[JSONObject] = []
        for served in self.in_group_version(group, version):
            resource = served.resource
            entry: JSONObject = {
                "name": resource.plural,
                "singularName": served.singular,
                "namespaced": resource.namespaced,
                "kind": resource.kind,
                "verbs": list(VERBS),
            }
            entry.update(_aliases(served))
            resources.append(entry)
            for subresource, kind in _subresources(resource):
                sub: JSONObject = {
                    "name": f"{resource.plural}/{subresource}",
                    "singularName": "",
                    "namespaced": resource.namespaced,
                    "kind": kind[2],
                    "verbs": list(SUBRESOURCE_VERBS),
                }
                if kind[0] != resource.group or kind[1] != resource.version:
                    sub.update(group=kind[0], version=kind[1])
                resources.append(sub)
        group_version = f"{group}/{version}" if group else version
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }

    # Aggregated discovery (apidiscovery.k8s.io/v2).

    def aggregated(self, core: bool) -> JSONObject:
        """``GET /api`` (``core``) or ``GET /apis`` asked for as an ``APIGroupDiscoveryList``."""
        items = [
            {
                "metadata": {"name": group} if group else {},
                "versions": [
                    {
                        "version": version,
                        "resources": [
                            _aggregated(served) for served in self.in_group_version(group, version)
                        ],
                        "freshness": "Current",
                    }
                    for version in versions
                ],
            }
            for group, versions in self.group_versions().items()
            if (group == "") == core
        ]
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order: GA before beta before alpha, higher numbers first, then others by name."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {"": 0, "beta": 1, "alpha": 2}[stage or ""]
    return (rank, -int(major), -int(minor or 0), "")


_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def _served(resource: Resource[Any], definitions: dict[tuple[str, str], JSONObject]) -> Served:
    crd = definitions.get((resource.group, resource.plural))
    if crd is None:
        return Served(
            resource,
            resource.kind.lower(),
            BUILTIN_SHORT_NAMES.get(resource.plural, ()),
            categories=("all",) if (resource.group, resource.plural) in BUILTIN_ALL else (),
            columns=BUILTIN_COLUMNS.get((resource.group, resource.plural), ()),
        )
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    version: JSONObject = next(
        (v for v in spec.get("versions") or () if v.get("name") == resource.version), {}
    )
    return Served(
        resource,
        str(names.get("singular") or resource.kind.lower()),
        tuple(names.get("shortNames") or ()),
        tuple(names.get("categories") or ()),
        tuple(version.get("additionalPrinterColumns") or ()),
        (version.get("schema") or {}).get("openAPIV3Schema"),
    )


def _other_versions(resource: Resource[Any], crd: JSONObject | None, webhook: bool) -> list[Served]:
    """The versions ``crd`` serves besides the stored ``resource``'s, each served by conversion."""
    if crd is None:
        return []
    spec = crd.get("spec") or {}
    strategy = str((spec.get("conversion") or {}).get("strategy") or "None")
    if strategy not in ("None", "Webhook") or (strategy == "Webhook" and not webhook):
        return []
    found: list[Served] = []
    for version in spec.get("versions") or ():
        name = version.get("name")
        if not version.get("served") or not isinstance(name, str) or name == resource.version:
            continue
        subresources = version.get("subresources") or {}
        shown = msgspec.structs.replace(
            resource,
            version=name,
            status="status" in subresources,
            scale=resource.scale if "scale" in subresources else None,
        )
        found.append(
            msgspec.structs.replace(_served(shown, {_crd_key(crd): crd}), stored=resource, strategy=strategy)
        )
    return found


def _crd_key(crd: JSONObject) -> tuple[str, str]:
    spec = crd.get("spec") or {}
    return (str(spec.get("group") or ""), str((spec.get("names") or {}).get("plural") or ""))


def _subresources(resource: Resource[Any]) -> Sequence[tuple[str, tuple[str, str, str]]]:
    found: list[tuple[str, tuple[str, str, str]]] = []
    if resource.status:
        found.append(("status", (resource.group, resource.version, resource.kind)))
    if resource.scale is not None:
        found.append(("scale", ("autoscaling", "v1", "Scale")))
    return found


def _aliases(served: Served) -> JSONObject:
    """The other names a served kind answers to, as discovery lists them: ``shortNames`` and
    ``categories``, each only when it has some."""
    aliases: JSONObject = {}
    if served.short_names:
        aliases["shortNames"] = list(served.short_names)
    if served.categories:
        aliases["categories"] = list(served.categories)
    return aliases


def _aggregated(served: Served) -> JSONObject:
    resource = served.resource
    entry: JSONObject = {
        "resource": resource.plural,
        "responseKind": {"group": resource.group, "version": resource.version, "kind": resource.kind},
        "scope": "Namespaced" if resource.namespaced else "Cluster",
        "singularResource": served.singular,
        "verbs": list(VERBS),
    }
    entry.update(_aliases(served))
    subresources = [
        {
            "subresource": name,
            "responseKind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
            "verbs": list(SUBRESOURCE_VERBS),
        }
        for name, kind in _subresources(resource)
    ]
    if subresources:
        entry["subresources"] = subresources
    return entry
