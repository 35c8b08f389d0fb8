"""What the memory API server refuses to store (``Invalid``), checked on every write.

The common ``ObjectMeta`` rules of the real API server (name, namespace, labels, annotations,
finalizers, owner references), the schema of the kinds we model (the msgspec Struct is the same
model the CRDs are generated from: the server's ``SchemaCheck``, the walk ``validate`` makes over the
CRD schema, stands in for OpenAPI validation, with ``msgspec.convert`` behind it), and the
``events.k8s.io/v1`` Event rules, the container rules of a Pod (named, with an image), and of a
Deployment's or ReplicaSet's pod template, whose labels its selector must select. Other raw kinds get
only the metadata checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from dgd.cluster.errors import Cause, Invalid
from dgd.cluster.memory.selectors import from_label_selector
from dgd.cluster.resources import DEPLOYMENT, EVENT, POD, REPLICA_SET, Resource
from dgd.messages.base import JSONObject, Model
from dgd.messages.meta_validation import annotation_problems, label_problems, qualified_name

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


#: A check of a document against its kind's schema, as the API server makes it from the CRD: the
#: (field path, message) of every problem (an unknown field, a bad quantity, a wrong type), in order.
SchemaCheck = Callable[[type[Model], JSONObject], Iterable[tuple[str, str]]]


def validate(resource: Resource[Any], data: JSONObject, schema_check: SchemaCheck | None = None) -> None:
    """Raise ``Invalid`` listing every rule ``data`` breaks as an object of ``resource``; a kind we
    model is checked by ``schema_check`` first (when given), then decoded into its Struct."""
    metadata: JSONObject = data.get("metadata") or {}
    causes = [*_type_causes(resource, data), *_metadata_causes(resource, metadata)]
    if resource.model is not None and not causes and schema_check is not None:
        causes.extend(Cause(path, message) for path, message in schema_check(resource.model, data))
    if resource.model is not None and not causes:
        causes.extend(_schema_causes(resource, data))
    if (resource.group, resource.plural) == (EVENT.group, EVENT.plural):
        causes.extend(_event_causes(data))
    if (resource.group, resource.plural) == (POD.group, POD.plural):
        causes.extend(_pod_causes(data.get("spec") or {}))
    if (resource.group, resource.plural) in _WORKLOADS:
        causes.extend(_workload_causes(data.get("spec") or {}))
    if causes:
        raise invalid(resource, metadata, causes)


def invalid(resource: Resource[Any], metadata: JSONObject, causes: list[Cause]) -> Invalid:
    """The ``Invalid`` error the API server answers with (``<Kind> "<name>" is invalid: ...``)."""
    name = metadata.get("name") or metadata.get("generateName") or ""
    summary = "; ".join(f"{cause.field}: {cause.message}" for cause in causes)
    return Invalid(
        f'{resource.kind} "{name}" is invalid: {summary}',
        kind=resource.kind,
        namespace=metadata.get("namespace"),
        name=name or None,
        causes=tuple(causes),
    )


def _type_causes(resource: Resource[Any], data: JSONObject) -> list[Cause]:
    causes = []
    if data.get("apiVersion") != resource.api_version:
        causes.append(
            Cause("apiVersion", f"must be {resource.api_version!r}, not {data.get('apiVersion')!r}")
        )
    if data.get("kind") != resource.kind:
        causes.append(Cause("kind", f"must be {resource.kind!r}, not {data.get('kind')!r}"))
    if not isinstance(data.get("metadata"), dict):
        causes.append(Cause("metadata", "Required value"))
    return causes


def _metadata_causes(resource: Resource[Any], metadata: JSONObject) -> list[Cause]:
    causes: list[Cause] = []
    name = metadata.get("name")
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name):
        causes.append(Cause("metadata.name", f"{name!r} must be a lowercase RFC 1123 subdomain"))
    namespace = metadata.get("namespace")
    if resource.namespaced and (not isinstance(namespace, str) or not _LABEL.match(namespace)):
        causes.append(Cause("metadata.namespace", f"{namespace!r} must be a lowercase RFC 1123 label"))
    # A generateName is a name prefix: valid once a trailing '-' is masked, as the API server checks it.
    prefix = metadata.get("generateName")
    if prefix and not _SUBDOMAIN.match(prefix[:-1] + "a" if prefix.endswith("-") else prefix):
        why = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.',"
        why += " and must start and end with an alphanumeric character"
        causes.append(Cause("metadata.generateName", f"Invalid value: {prefix!r}: {why}"))
    causes.extend(_label_and_annotation_causes(metadata))
    for index, finalizer in enumerate(metadata.get("finalizers") or ()):
        if not isinstance(finalizer, str) or not qualified_name(finalizer):
            causes.append(Cause(f"metadata.finalizers[{index}]", f"{finalizer!r} is not a qualified name"))
    causes.extend(_owner_causes(list(metadata.get("ownerReferences") or ())))
    return causes


def _label_and_annotation_causes(metadata: JSONObject) -> list[Cause]:
    """apimachinery's label and annotation rules (shared with ``validate``), after their types."""
    causes: list[Cause] = []
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    for field, values in (("labels", labels), ("annotations", annotations)):
        for key, value in values.items():
            if not isinstance(value, str):
                causes.append(Cause(f"metadata.{field}[{key}]", f"{value!r} must be a string"))
    text_labels = {key: value for key, value in labels.items() if isinstance(value, str)}
    text_annotations = {key: value for key, value in annotations.items() if isinstance(value, str)}
    causes += [Cause(field, why) for field, why in label_problems(text_labels)]
    causes += [Cause(field, why) for field, why in annotation_problems(text_annotations)]
    return causes


def _pod_causes(spec: JSONObject) -> list[Cause]:
    """The container rules of the real server's Pod validation that a stored Pod can break here:
    at least one container, and every container (and init container) named and with an image."""
    if not spec.get("containers"):
        return [Cause("spec.containers", "Required value")]
    causes: list[Cause] = []
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or ()):
            for key in ("name", "image"):
                if not (isinstance(container, dict) and container.get(key)):
                    causes.append(Cause(f"spec.{field}[{index}].{key}", "Required value"))
    return causes


_WORKLOADS = {(kind.group, kind.plural) for kind in (DEPLOYMENT, REPLICA_SET)}


def _workload_causes(spec: JSONObject) -> list[Cause]:
    """A Deployment's or ReplicaSet's: a selector that is not empty and selects its template's labels,
    and a template that makes a valid Pod."""
    template = spec.get("template") or {}
    causes = [
        Cause(f"spec.template.{cause.field}", cause.message)
        for cause in _pod_causes(template.get("spec") or {})
    ]
    selector = spec.get("selector")
    if not selector:
        return [Cause("spec.selector", "Required value"), *causes]
    try:
        selects = from_label_selector(selector)
    except Invalid as error:
        return [Cause("spec.selector", str(error)), *causes]
    if selects.empty:
        causes.insert(0, Cause("spec.selector", "Invalid value: empty selector is invalid for deployment"))
    elif not selects.matches((template.get("metadata") or {}).get("labels")):
        why = "Invalid value: `selector` does not match template `labels`"
        causes.insert(0, Cause("spec.template.metadata.labels", why))
    return causes


def _owner_causes(owners: list[JSONObject]) -> list[Cause]:
    causes: list[Cause] = []
    for index, owner in enumerate(owners):
        for field in ("apiVersion", "kind", "name", "uid"):
            if not owner.get(field):
                causes.append(Cause(f"metadata.ownerReferences[{index}].{field}", "Required value"))
    if sum(1 for owner in owners if owner.get("controller")) > 1:
        causes.append(Cause("metadata.ownerReferences", "Only one reference can have Controller set to true"))
    return causes


def _schema_causes(resource: Resource[Any], data: JSONObject) -> list[Cause]:
    try:
        msgspec.convert(data, resource.model)
    except msgspec.ValidationError as error:
        text = str(error)
        where = text.rpartition(" - at `$.")[2].rstrip("`") if " - at `$." in text else ""
        return [Cause(where or "<root>", text.partition(" - at ")[0])]
    return []


def _event_causes(data: JSONObject) -> list[Cause]:
    causes = []
    for field in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
        if not data.get(field):
            causes.append(Cause(field, "Required value"))
    if data.get("type") not in ("Normal", "Warning"):
        causes.append(Cause("type", f"must be 'Normal' or 'Warning', not {data.get('type')!r}"))
    if len(data.get("note") or "") > 1024:
        causes.append(Cause("note", "must have at most 1024 bytes"))
    return causes
