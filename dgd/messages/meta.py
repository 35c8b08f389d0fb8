"""Kubernetes metadata the operator reads and writes: ObjectMeta, OwnerReference, Condition, Event, and
the Object envelope (apiVersion, metadata, spec, status) of every kind it models."""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar

import msgspec

from dgd.messages.base import JSONObject, Model


class OwnerReference(Model, frozen=True):
    """A link from a child to the object that owns it (garbage collection follows it)."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Model, frozen=True):
    """Standard object metadata. Timestamps stay RFC 3339 strings, exactly as the API server sent them."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    #: Kept by the model (admission checks objects the API server sends whole); dropped from what the
    #: operator's cache holds (``dgd.cluster.resources.without_managed_fields``).
    managed_fields: list[JSONObject] | None = None
    self_link: str | None = None


SpecT = TypeVar("SpecT")
StatusT = TypeVar("StatusT")


class Object(Model, Generic[SpecT, StatusT], frozen=True):
    """An object of a kind the operator models: the desired ``spec`` and, once a controller has
    written it, the observed ``status``. A kind subclasses it tagged with its ``kind``."""

    api_version: str
    """The group and version the object is written in, as `<group>/<version>`."""
    metadata: ObjectMeta
    """Standard object metadata: name, namespace, labels, annotations, owner references, finalizers."""
    spec: SpecT
    """The desired state of the object."""
    status: StatusT | None = None
    """The observed state, written by the object's controller through the status subresource."""


def identity(obj: Any) -> tuple[str | None, str, str]:
    """Namespace, name and resourceVersion of an object, a Struct or raw JSON."""
    if isinstance(obj, dict):
        metadata = obj.get("metadata") or {}
        name, version = metadata.get("name"), metadata.get("resourceVersion")
        return metadata.get("namespace"), str(name or ""), str(version or "")
    meta = obj.metadata
    return meta.namespace, meta.name or "", meta.resource_version or ""


def labels_of(obj: Any) -> dict[str, str]:
    """The labels of an object, a Struct or raw JSON (``{}``: none)."""
    if isinstance(obj, dict):
        labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
        return labels
    return obj.metadata.labels or {}


def controller_of(obj: Any) -> OwnerReference | None:
    """The owner reference with ``controller: true`` of an object, a Struct or raw JSON."""
    if isinstance(obj, dict):
        for owner in (obj.get("metadata") or {}).get("ownerReferences") or ():
            if owner.get("controller"):
                api_version, kind = str(owner.get("apiVersion") or ""), str(owner.get("kind") or "")
                name, uid = str(owner.get("name") or ""), str(owner.get("uid") or "")
                return OwnerReference(api_version, kind, name, uid, controller=True)
        return None
    return next((owner for owner in obj.metadata.owner_references or () if owner.controller), None)


def controller_reference(api_version: str, kind: str, name: str | None, uid: str | None) -> JSONObject:
    """The owner reference (raw JSON) that makes the object ``kind``/``name`` the controller of the object
    that carries it; ``blockOwnerDeletion``: a foreground deletion of the owner waits for that child."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


ConditionStatus = Literal["True", "False", "Unknown"]

CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


class Condition(Model, frozen=True):
    """A ``metav1.Condition``: one observed aspect of an object's state."""

    type: Annotated[str, msgspec.Meta(pattern=CONDITION_TYPE_PATTERN, max_length=316)]
    """What the condition is about, such as `Ready`; an object has at most one condition of each type."""
    status: ConditionStatus
    """Whether the condition holds: `True`, `False` or `Unknown`."""
    last_transition_time: str
    """When `status` last changed (RFC 3339)."""
    reason: Annotated[str, msgspec.Meta(pattern=CONDITION_REASON_PATTERN, min_length=1, max_length=1024)]
    """One machine-readable word for why the condition has its status, such as `pods_not_ready`."""
    message: Annotated[str, msgspec.Meta(max_length=32768)]
    """The reason in words, for people; may be empty."""
    observed_generation: Annotated[int, msgspec.Meta(ge=0)] | None = None
    """The `metadata.generation` of the object the condition was computed from."""


class ObjectReference(Model, frozen=True):
    """A reference to an object (the ``regarding``/``related`` object of an Event)."""

    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EventSeries(Model, frozen=True):
    """Repeated occurrences of one event (events.k8s.io/v1)."""

    count: int
    last_observed_time: str


EventType = Literal["Normal", "Warning"]


class Event(Model, frozen=True, tag_field="kind", tag="Event"):
    """An ``events.k8s.io/v1`` Event about an object."""

    api_version: str
    metadata: ObjectMeta
    event_time: str | None = None
    series: EventSeries | None = None
    reporting_controller: str | None = None
    reporting_instance: str | None = None
    action: str | None = None
    reason: str | None = None
    regarding: ObjectReference | None = None
    related: ObjectReference | None = None
    note: str | None = None
    type: EventType | None = None
    deprecated_source: JSONObject | None = None
    deprecated_first_timestamp: str | None = None
    deprecated_last_timestamp: str | None = None
    deprecated_count: int | None = None
