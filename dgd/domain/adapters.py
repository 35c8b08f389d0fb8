"""Scaling adapters (DGDSA, dgd-domain §13) as decisions: names, bodies, patches, orphans, rescales.

Two writers share an adapter and this module keeps them apart:

* the DGD's ``scaling-adapters`` child owns an adapter's identity (name, labels, ``spec.dgdRef``,
  controller owner reference) and seeds ``spec.replicas`` **once**, at create (``adapter_body``);
  ``adapter_patch`` repairs identity and never touches replicas;
* the DGDSA controller owns the replica count: it drives the DGD component to the adapter's
  ``spec.replicas`` (``rescale``) and mirrors it into the adapter status (``adapter_status``).

Our departure from upstream (dgd-domain §21 item 5, ``docs/decisions.md``): the adapter of a
component without ``scalingAdapter`` is deleted only if this DGD controls it
(``dgd.domain.ownership.controlled_by``), so a user's adapter that happens to carry the same name is
left alone.

Everything here is a function of its arguments; objects are Structs in, raw JSON out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from dgd.domain.events import EventRecord
from dgd.domain.metadata_keys import COMPONENT, GRAPH_NAME
from dgd.domain.ownership import controlled_by
from dgd.domain.pod_merge import JSON
from dgd.messages import dgd as dgd_messages
from dgd.messages import dgdsa
from dgd.messages.base import copy_json
from dgd.messages.component import ComponentSpec
from dgd.messages.dgd import DynamoGraphDeployment
from dgd.messages.dgdsa import DynamoGraphDeploymentScalingAdapter as Adapter
from dgd.messages.meta import ObjectReference

#: A component's replicas when its spec leaves them unset.
DEFAULT_REPLICAS = 1


class ForeignController(ValueError):
    """The adapter of that name is controlled by another object: this DGD will not adopt it."""


def adapter_name(dgd_name: str, component_name: str) -> str:
    """``<dgd>-<lowercase component>``, as upstream names it. Not shortened (unlike the names of
    ``dgd.domain.naming``): an adapter's name is a DNS subdomain, up to 253 characters."""
    return f"{dgd_name}-{component_name.lower()}"


def adapter_labels(dgd_name: str, component_name: str) -> dict[str, str]:
    """The labels the DGD stamps on the adapter of one of its components."""
    return {GRAPH_NAME: dgd_name, COMPONENT: component_name}


def pod_selector(dgd_name: str, component_name: str) -> str:
    """The label selector of a component's pods, as ``status.selector`` reports it (keys sorted)."""
    return f"{COMPONENT}={component_name},{GRAPH_NAME}={dgd_name}"


def replicas_of(component: ComponentSpec) -> int:
    """The component's replicas, ``1`` when unset."""
    return DEFAULT_REPLICAS if component.replicas is None else component.replicas


# The DGD's side: identity of its adapters.


def adapter_body(dgd: DynamoGraphDeployment, component: ComponentSpec, owner: JSON) -> JSON:
    """The adapter to create for ``component``; ``spec.replicas`` is seeded from the component here and
    never written by the DGD again. ``owner`` is the DGD's controller owner reference."""
    name = dgd.metadata.name or ""
    return {
        "apiVersion": dgdsa.API_VERSION,
        "kind": dgdsa.KIND,
        "metadata": {
            "name": adapter_name(name, component.name),
            "namespace": dgd.metadata.namespace,
            "labels": adapter_labels(name, component.name),
            "ownerReferences": [copy_json(owner)],
        },
        "spec": {
            "replicas": replicas_of(component),
            "dgdRef": {"name": name, "componentName": component.name},
        },
    }


def _same_object(reference: JSON, owner: JSON) -> bool:
    """Whether two owner references name the same object by group, kind and name (not uid)."""
    group = str(reference.get("apiVersion") or "").split("/")[0]
    return (
        group == str(owner.get("apiVersion") or "").split("/")[0]
        and reference.get("kind") == owner.get("kind")
        and reference.get("name") == owner.get("name")
    )


def _owner_references(adapter: Adapter, owner: JSON) -> list[JSON]:
    """The adapter's owner references with ``owner`` as controller (as controller-runtime's
    ``SetControllerReference``): a reference to the same object is replaced in place, else appended.
    Raises ``ForeignController`` when another object is the controller."""
    current: list[JSON] = [msgspec.to_builtins(ref) for ref in adapter.metadata.owner_references or ()]
    for reference in current:
        if reference.get("controller") and not _same_object(reference, owner):
            raise ForeignController(
                f"scaling adapter {adapter.metadata.name} is controlled by {reference.get('kind')} "
                f"{reference.get('name')}: delete it, or rename the component, so DGD "
                f"{owner.get('name')} can manage its own"
            )
    wanted: list[JSON] = []
    placed = False
    for reference in current:
        if _same_object(reference, owner):
            if not placed:
                wanted.append(copy_json(owner))
                placed = True
        else:
            wanted.append(reference)
    if not placed:
        wanted.append(copy_json(owner))
    return wanted


def adapter_patch(adapter: Adapter, dgd_name: str, component_name: str, owner: JSON) -> JSON | None:
    """The merge patch that brings an existing adapter's labels, ``spec.dgdRef`` and controller owner
    reference in line, carrying its resourceVersion; ``None`` when nothing differs. Replicas are the
    adapter's own: never part of the patch. Raises ``ForeignController``."""
    meta = adapter.metadata
    metadata: JSON = {}
    labels = meta.labels or {}
    drifted = {k: v for k, v in adapter_labels(dgd_name, component_name).items() if labels.get(k) != v}
    if drifted:
        metadata["labels"] = drifted
    references = _owner_references(adapter, owner)
    if references != [msgspec.to_builtins(ref) for ref in meta.owner_references or ()]:
        metadata["ownerReferences"] = references
    patch: JSON = {}
    ref = adapter.spec.dgd_ref
    if (ref.name, ref.component_name) != (dgd_name, component_name):
        patch["spec"] = {"dgdRef": {"name": dgd_name, "componentName": component_name}}
    if not metadata and not patch:
        return None
    return {**patch, "metadata": {**metadata, "resourceVersion": meta.resource_version}}


def orphans(adapters: Iterable[Adapter], dgd: DynamoGraphDeployment, owner_uid: str | None) -> list[Adapter]:
    """Adapters labelled with this DGD's name and controlled by it whose component is gone, by name."""
    names = {component.name for component in dgd.spec.components or ()}
    found = [
        adapter
        for adapter in adapters
        if (adapter.metadata.labels or {}).get(GRAPH_NAME) == dgd.metadata.name
        and controlled_by(adapter.metadata, owner_uid)
        and adapter.spec.dgd_ref.component_name not in names
        and not adapter.metadata.deletion_timestamp
    ]
    return sorted(found, key=lambda adapter: adapter.metadata.name or "")


def adapter_reference(adapter: Adapter) -> ObjectReference:
    """The adapter as the ``regarding``/``related`` object of an event."""
    meta = adapter.metadata
    return ObjectReference(
        api_version=dgdsa.API_VERSION, kind=dgdsa.KIND, name=meta.name, namespace=meta.namespace, uid=meta.uid
    )


def _adapter_event(verb: str, name: str, component: str, related: ObjectReference) -> EventRecord:
    """``Adapter<verb>d`` on the DGD, about its adapter ``name`` of ``component`` (related object)."""
    note = f"{verb}d scaling adapter {name} for component {component}"
    return EventRecord("Normal", f"Adapter{verb}d", verb, note, related)


def adapter_created(name: str, component: str, related: ObjectReference) -> EventRecord:
    """The DGD created a component's adapter (an event on the DGD; related object: the adapter)."""
    return _adapter_event("Create", name, component, related)


def adapter_updated(name: str, component: str, related: ObjectReference) -> EventRecord:
    """The DGD repaired an adapter's labels, reference or owner."""
    return _adapter_event("Update", name, component, related)


def adapter_deleted(name: str, component: str, related: ObjectReference) -> EventRecord:
    """The DGD deleted the adapter of a component that no longer asks for one."""
    return _adapter_event("Delete", name, component, related)


def orphan_deleted(name: str, component: str, related: ObjectReference) -> EventRecord:
    """The DGD deleted the adapter of a component it no longer has."""
    note = f"Deleted orphaned scaling adapter {name} for removed component {component}"
    return EventRecord("Normal", "AdapterDeleted", "Delete", note, related)


# The DGDSA controller's side: replicas flow from the adapter into the DGD.


def scaled_component(dgd: DynamoGraphDeployment, component_name: str) -> ComponentSpec | None:
    """The component an adapter drives: present in ``dgd`` and still asking for a scaling adapter."""
    for component in dgd.spec.components or ():
        if component.name == component_name:
            return component if component.scaling_adapter is not None else None
    return None


class Rescale(msgspec.Struct, frozen=True):
    """The DGD to write (raw JSON, with the resourceVersion it was read at) and the replicas before."""

    body: JSON
    before: int


def rescale(dgd: JSON, component_name: str, replicas: int) -> Rescale | None:
    """``dgd`` (raw, as stored) with the component's replicas set to ``replicas``; ``None`` when the
    component is gone, no longer asks for a scaling adapter, or already has them. Every other field,
    modelled or not, is kept as it is."""
    components = (dgd.get("spec") or {}).get("components") or []
    for index, component in enumerate(components):
        if component.get("name") != component_name:
            continue
        if component.get("scalingAdapter") is None:
            return None
        before = component.get("replicas")
        before = DEFAULT_REPLICAS if before is None else int(before)
        if before == replicas:
            return None
        body = copy_json(dgd)
        body["spec"]["components"][index]["replicas"] = replicas
        return Rescale(body, before)
    return None


def adapter_status(adapter: Adapter, scaled_at: str | None = None) -> JSON | None:
    """The status merge patch that mirrors the adapter's replicas and its pods' selector (and, after a
    scale, ``lastScaleTime``); ``None`` when the status already says so."""
    ref = adapter.spec.dgd_ref
    desired: JSON = {
        "replicas": adapter.spec.replicas,
        "selector": pod_selector(ref.name, ref.component_name),
    }
    if scaled_at is not None:
        desired["lastScaleTime"] = scaled_at
    current: JSON = msgspec.to_builtins(adapter.status) if adapter.status is not None else {}
    changed = {key: value for key, value in desired.items() if current.get(key) != value}
    return {"status": changed} if changed else None


def scaled(component: str, before: int, after: int, dgd: DynamoGraphDeployment | JSON) -> EventRecord:
    """The adapter scaled its component (an event on the adapter; related object: the DGD)."""
    note = f"Scaled component {component} from {before} to {after} replicas"
    return EventRecord("Normal", "Scaled", "Scale", note, dgd_reference(dgd))


def update_failed(dgd_name: str, error: str, dgd: DynamoGraphDeployment | JSON) -> EventRecord:
    """The DGD refused the adapter's replicas (an event on the adapter; related object: the DGD)."""
    return EventRecord(
        "Warning", "UpdateFailed", "Update", f"Failed to update DGD {dgd_name}: {error}", dgd_reference(dgd)
    )


def dgd_reference(dgd: DynamoGraphDeployment | JSON) -> ObjectReference:
    """The DGD as the related object of an adapter's event."""
    if isinstance(dgd, dict):
        meta: Any = dgd.get("metadata") or {}
        name, namespace, uid = meta.get("name"), meta.get("namespace"), meta.get("uid")
    else:
        name, namespace, uid = dgd.metadata.name, dgd.metadata.namespace, dgd.metadata.uid
    return ObjectReference(
        api_version=dgd_messages.API_VERSION, kind=dgd_messages.KIND, name=name, namespace=namespace, uid=uid
    )
