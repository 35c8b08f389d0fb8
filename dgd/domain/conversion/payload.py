"""The preservation payloads, encoded byte for byte as the upstream Go operator writes them.

Upstream stores its preservation annotations with Go's ``encoding/json``: struct fields in
declaration order, map keys sorted, ``omitempty`` fields left out when empty, pointer fields kept
when set (even to ``""`` or ``{}``), a few non-omitempty fields always present, and ``<``, ``>``,
``&``, U+2028 and U+2029 escaped. ``encode_spec_payload`` and ``encode_status_payload`` reproduce
that for the sparse v1alpha1 values conversion saves, so a payload written here is identical to the
one upstream would write for the same input. Raw JSON the operator does not model (probe handlers,
security contexts, …) keeps the key order it arrived with; keys a known type does not list are
appended after the listed ones.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from dgd.domain.quantity import canonical_quantity

# Each type lists its fields in Go declaration order as ``name[:kind][marker]``. The kind is a
# struct type of this table (``:Resources``), a map (``:{}``, or ``:{}Type`` for struct values), a
# list (``:[]``, or ``:[Type]``), or a quantity (``:#``, ``:{}#``); without one the value is kept as
# is. The marker ``*`` keeps any non-null value (a Go pointer) and ``!`` always emits the field (a Go
# value struct or a field without ``omitempty``); unmarked fields are ``omitempty``. Struct-kind
# fields are Go pointers, so an unmarked ``{}`` is kept.
_GO_TYPES: dict[str, tuple[str, ...]] = {
    "Envelope": ("version!", "spec:DGDSpec!"),
    "DGDSpec": (
        "providerOverride:ProviderOverride",
        "annotations:{}",
        "labels:{}",
        "priorityClassName",
        "pvcs:[PVC]",
        "services:{}Service",
        "envs:[EnvVar]",
        "backendFramework",
        "restart",
        "topologyConstraint",
        "experimental",
    ),
    "PVC": ("create*", "name*", "storageClass", "size:#!", "volumeAccessMode"),
    "Service": (
        "providerOverride:ProviderOverride",
        "annotations:{}",
        "labels:{}",
        "serviceName",
        "componentType",
        "subComponentType",
        "runtimeVersionOverride",
        "dynamoNamespace*",
        "globalDynamoNamespace",
        "resources:Resources",
        "autoscaling:Autoscaling",
        "envs:[EnvVar]",
        "envFromSecret*",
        "volumeMounts:[FlatVolumeMount]",
        "ingress:Ingress",
        "modelRef",
        "sharedMemory:SharedMemory",
        "extraPodMetadata:ExtraPodMetadata",
        "extraPodSpec:ExtraPodSpec",
        "livenessProbe:Probe",
        "readinessProbe:Probe",
        "replicas*",
        "minAvailable*",
        "multinode",
        "scalingAdapter:ScalingAdapter",
        "eppConfig",
        "frontendSidecar:FrontendSidecar",
        "checkpoint",
        "topologyConstraint",
        "gpuMemoryService:GPUMemoryService",
        "failover:Failover",
    ),
    "ProviderOverride": ("apiVersion!", "target", "value*"),
    "Resources": ("requests:ResourceItem", "limits:ResourceItem", "claims:[ResourceClaim]"),
    "ResourceItem": ("cpu", "memory", "gpu", "gpuType", "custom:{}"),
    "ResourceClaim": ("name!", "request"),
    "Autoscaling": ("enabled", "minReplicas", "maxReplicas", "behavior*", "metrics:[]"),
    "FlatVolumeMount": ("name", "mountPoint", "useAsCompilationCache"),
    "Ingress": (
        "enabled",
        "host",
        "useVirtualService",
        "virtualServiceGateway*",
        "hostPrefix*",
        "annotations:{}",
        "labels:{}",
        "tls:IngressTLS",
        "hostSuffix*",
        "ingressControllerClassName*",
    ),
    "IngressTLS": ("secretName",),
    "SharedMemory": ("disabled", "size:#!"),
    "ExtraPodMetadata": ("annotations:{}", "labels:{}"),
    "ExtraPodSpec": (
        "volumes:[]",
        "initContainers:[Container]",
        "containers:[Container]",
        "ephemeralContainers:[]",
        "restartPolicy",
        "terminationGracePeriodSeconds*",
        "activeDeadlineSeconds*",
        "dnsPolicy",
        "nodeSelector:{}",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken*",
        "nodeName",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace*",
        "securityContext*",
        "imagePullSecrets:[]",
        "hostname",
        "subdomain",
        "affinity*",
        "schedulerName",
        "tolerations:[]",
        "hostAliases:[]",
        "priorityClassName",
        "priority*",
        "dnsConfig*",
        "readinessGates:[]",
        "runtimeClassName*",
        "enableServiceLinks*",
        "preemptionPolicy*",
        "overhead:{}",
        "topologySpreadConstraints:[]",
        "setHostnameAsFQDN*",
        "os*",
        "hostUsers*",
        "schedulingGates:[]",
        "resourceClaims:[]",
        "resources*",
        "hostnameOverride*",
        "mainContainer:Container",
    ),
    "Container": (
        "name!",
        "image",
        "command:[]",
        "args:[]",
        "workingDir",
        "ports:[ContainerPort]",
        "envFrom:[EnvFromSource]",
        "env:[EnvVar]",
        "resources:ResourceRequirements!",
        "resizePolicy:[]",
        "restartPolicy*",
        "restartPolicyRules:[]",
        "volumeMounts:[VolumeMount]",
        "volumeDevices:[]",
        "livenessProbe:Probe",
        "readinessProbe:Probe",
        "startupProbe:Probe",
        "lifecycle*",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext*",
        "stdin",
        "stdinOnce",
        "tty",
    ),
    "ContainerPort": ("name", "hostPort", "containerPort!", "protocol", "hostIP"),
    "EnvVar": ("name!", "value", "valueFrom*"),
    "EnvFromSource": ("prefix", "configMapRef:LocalRef", "secretRef:LocalRef"),
    "LocalRef": ("name", "optional*"),
    "VolumeMount": (
        "name!",
        "readOnly",
        "recursiveReadOnly*",
        "mountPath!",
        "subPath",
        "mountPropagation*",
        "subPathExpr",
    ),
    "ResourceRequirements": ("limits:{}#", "requests:{}#", "claims:[ResourceClaim]"),
    "Probe": (
        "exec*",
        "httpGet:HTTPGetAction",
        "tcpSocket*",
        "grpc*",
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
        "terminationGracePeriodSeconds*",
    ),
    "HTTPGetAction": ("path", "port!", "host", "scheme", "httpHeaders:[]"),
    "ScalingAdapter": ("enabled",),
    "FrontendSidecar": ("image!", "args:[]", "envFromSecret*", "envs:[EnvVar]"),
    "GPUMemoryService": (
        "enabled!",
        "mode",
        "deviceClassName",
        "extraClientContainers:[]",
        "extraClientPods:[]",
    ),
    "Failover": ("enabled!", "mode", "numShadows"),
    "Status": ("observedGeneration", "state!", "conditions:[]", "services:{}ServiceReplicaStatus"),
    "ServiceReplicaStatus": (
        "componentKind!",
        "componentName!",
        "componentNames:[]",
        "runtimeNamespace",
        "replicas!",
        "updatedReplicas!",
        "readyReplicas*",
        "availableReplicas*",
        "scheduledReplicas*",
    ),
}

_ZERO_BY_FIELD: dict[str, Any] = {
    "version": 0,
    "enabled": False,
    "replicas": 0,
    "updatedReplicas": 0,
    "port": 0,
}


class _Field(NamedTuple):
    name: str
    kind: str  # "raw", "struct", "map", "list" or "quantity"
    element: str  # struct type name, "#" for quantities, "" for raw
    marker: str  # "*", "!" or ""


def _field(spec: str) -> _Field:
    marker = spec[-1] if spec[-1] in "*!" else ""
    name, _, kind = spec.removesuffix(marker).partition(":")
    if kind.startswith("{}"):
        return _Field(name, "map", kind[2:], marker)
    if kind.startswith("["):
        return _Field(name, "list", kind[1:-1], marker)
    if kind == "#":
        return _Field(name, "quantity", "#", marker)
    return _Field(name, "struct" if kind else "raw", kind, marker)


_FIELDS = {type_name: tuple(_field(spec) for spec in specs) for type_name, specs in _GO_TYPES.items()}


def encode_spec_payload(sparse_spec: dict[str, Any]) -> str:
    """The ``nvidia.com/dgd-spec`` value for a sparse v1alpha1 DGD spec: ``{"version":1,"spec":…}``."""
    return _go_json(_encode({"version": 1, "spec": sparse_spec}, "Envelope"))


def encode_status_payload(sparse_status: dict[str, Any]) -> str:
    """The ``nvidia.com/dgd-status`` value: the plain sparse v1alpha1 status, no envelope."""
    return _go_json(_encode(sparse_status, "Status"))


def _encode(value: dict[str, Any], type_name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in _FIELDS[type_name]:
        item = value.get(field.name)
        # Absent values appear only for always-emitted fields, as their Go zero value.
        if item is None:
            if field.marker != "!":
                continue
            item = _zero(field)
        # omitempty drops empty scalars, maps and lists; struct pointers and ``*`` fields stay.
        elif field.marker == "" and field.kind != "struct" and _is_empty(item):
            continue
        out[field.name] = _encode_value(item, field.kind, field.element)
    # Keys the type does not list (fields newer than this table) follow in arrival order.
    listed = {field.name for field in _FIELDS[type_name]}
    out.update({key: item for key, item in value.items() if key not in listed and item is not None})
    return out


def _encode_value(value: Any, kind: str, element: str) -> Any:
    if kind == "quantity":
        return canonical_quantity(value) or str(value)
    if kind == "map" and isinstance(value, dict):
        return {key: _encode_value(value[key], _kind_of(element), element) for key in sorted(value)}
    if kind == "list" and isinstance(value, list):
        return [_encode_value(item, _kind_of(element), element) for item in value]
    if kind == "struct" and isinstance(value, dict):
        return _encode(value, element)
    return value


def _zero(field: _Field) -> Any:
    if field.kind == "struct":
        return {}
    return "0" if field.kind == "quantity" else _ZERO_BY_FIELD.get(field.name, "")


def _kind_of(element: str) -> str:
    if element == "#":
        return "quantity"
    return "struct" if element else "raw"


def _is_empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value == "" or value == [] or value == {}


def _go_json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it: UTF-8 kept, HTML-significant characters escaped."""
    text = json.dumps(_go_numbers(value), separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _go_numbers(value: Any) -> Any:
    # Go prints whole floats without a fractional part.
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {key: _go_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_go_numbers(item) for item in value]
    return value
