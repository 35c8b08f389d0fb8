"""The Go types the preservation payloads and v1alpha1 documents are written as, field by field.

Upstream writes its payloads and its v1alpha1 webhook responses with Go's ``encoding/json``: struct
fields in declaration order, map keys sorted. ``GO_TYPES`` lists, for every struct conversion
writes, its fields in that order with what ``encoding/json`` does with an empty value; ``go_order``
puts a plain JSON value's keys in that order without adding, dropping or respelling anything.
"""

from __future__ import annotations

from typing import Any, NamedTuple

# Each type lists its fields in Go declaration order as ``name[:kind][marker]``. The kind is a
# struct type of this table (``:Resources``), a map (``:{}``, or ``:{}Type`` for struct values), a
# list (``:[]``, or ``:[Type]``), or a quantity (``:#``, ``:{}#``); without one the value is kept as
# is. The marker ``*`` keeps any non-null value (a Go pointer) and ``!`` always emits the field (a Go
# value struct or a field without ``omitempty``); unmarked fields are ``omitempty``. Struct-kind
# fields are Go pointers, so an unmarked ``{}`` is kept.
#: The v1alpha1 shared (service) spec, the fields a DGD service and a DCD have in common.
_SERVICE = (
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
)
#: The v1beta1 component (a DGD component and a DCD share it); only ``name`` is always written.
_COMPONENT = (
    "providerOverride:ProviderOverride",
    "name!",
    "type",
    "runtimeVersionOverride",
    "globalDynamoNamespace",
    "podTemplate:PodTemplate",
    "replicas*",
    "minAvailable*",
    "multinode",
    "sharedMemorySize",
    "modelRef",
    "scalingAdapter*",
    "eppConfig",
    "frontendSidecar",
    "compilationCache",
    "topologyConstraint",
    "experimental",
)

GO_TYPES: dict[str, tuple[str, ...]] = {
    # Payload envelopes: v1alpha1 data on a v1beta1 object, and v1beta1 data on a v1alpha1 view.
    "Envelope": ("version!", "spec:DGDSpec!", "rawJSON:[RawJSON]"),
    "DCDEnvelope": ("version!", "spec:DCDSpec!", "rawJSON:[RawJSON]"),
    "BetaEnvelope": ("version!", "spec:BetaDGDSpec!", "rawJSON:[RawJSON]"),
    "BetaDCDEnvelope": ("version!", "spec:BetaDCDSpec!", "rawJSON:[RawJSON]"),
    "RawJSON": ("path!", "raw", "nil"),
    # Whole v1alpha1 documents, as upstream's webhook writes them (TypeMeta first).
    "DGDDocument": ("kind", "apiVersion", "metadata:ObjectMeta!", "spec:DGDSpec!", "status:Status!"),
    "DCDDocument": ("kind", "apiVersion", "metadata:ObjectMeta!", "spec:DCDSpec!", "status:DCDStatus!"),
    "DGDSADocument": ("kind", "apiVersion", "metadata:ObjectMeta!", "spec:DGDSASpec!", "status:DGDSAStatus!"),
    "ObjectMeta": (
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds*",
        "labels:{}",
        "annotations:{}",
        "ownerReferences:[]",
        "finalizers:[]",
        "managedFields:[]",
    ),
    "DGDSASpec": ("replicas!", "dgdRef:DGDRef!"),
    "DGDRef": ("name!", "serviceName!"),
    "DGDSAStatus": ("replicas!", "selector", "lastScaleTime*"),
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
    "Service": _SERVICE,
    "DCDSpec": ("backendFramework", *_SERVICE),
    "BetaDGDSpec": ("components:[Component]",),
    "Component": _COMPONENT,
    "BetaDCDSpec": ("backendFramework", *_COMPONENT),
    # A view's record of a template layout (``layout.leftover_template``): the container order and
    # main's exact mounts, an empty list included (it says "the cache is not mounted on main").
    "PodTemplate": ("metadata", "spec:LayoutPodSpec"),
    "LayoutPodSpec": ("containers:[LayoutContainer]",),
    "LayoutContainer": ("name!", "volumeMounts:[VolumeMount]*"),
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
    "Status": (
        "observedGeneration",
        "state!",
        "conditions:[]",
        "services:{}ServiceReplicaStatus",
        "restart*",
        "checkpoints:{}",
        "rollingUpdate*",
        "placement*",
    ),
    "DCDStatus": ("observedGeneration", "conditions:[]", "podSelector:{}", "service:ServiceReplicaStatus"),
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

ZERO_BY_FIELD: dict[str, Any] = {
    "version": 0,
    "enabled": False,
    "replicas": 0,
    "updatedReplicas": 0,
    "port": 0,
}


class Field(NamedTuple):
    """One field of a Go struct as the table declares it."""

    name: str
    kind: str  # "raw", "struct", "map", "list" or "quantity"
    element: str  # struct type name, "#" for quantities, "" for raw
    marker: str  # "*", "!" or ""


def _field(spec: str) -> Field:
    marker = spec[-1] if spec[-1] in "*!" else ""
    name, _, kind = spec.removesuffix(marker).partition(":")
    if kind.startswith("{}"):
        return Field(name, "map", kind[2:], marker)
    if kind.startswith("["):
        return Field(name, "list", kind[1:-1], marker)
    if kind == "#":
        return Field(name, "quantity", "#", marker)
    return Field(name, "struct" if kind else "raw", kind, marker)


#: Every type of the table, its fields parsed.
FIELDS = {type_name: tuple(_field(spec) for spec in specs) for type_name, specs in GO_TYPES.items()}


def go_order(value: Any, type_name: str) -> Any:
    """``value`` (of Go type ``type_name``) with object keys in Go's order: declared fields first,
    in declaration order, then keys the type does not list, in arrival order; map keys sorted."""
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for field in FIELDS[type_name]:
        if field.name in value:
            out[field.name] = _order(value[field.name], field.kind, field.element)
    out.update({key: item for key, item in value.items() if key not in out})
    return out


def _order(value: Any, kind: str, element: str) -> Any:
    element_kind = "struct" if element and element != "#" else "raw"
    if kind == "struct":
        return go_order(value, element)
    if kind == "map" and isinstance(value, dict):
        return {key: _order(value[key], element_kind, element) for key in sorted(value)}
    if kind == "list" and isinstance(value, list):
        return [_order(item, element_kind, element) for item in value]
    return value


def is_zero(value: Any) -> bool:
    """Kubernetes semantic emptiness: null, false, 0, "", an empty list, or an object of zero values."""
    if isinstance(value, dict):
        return all(is_zero(item) for item in value.values())
    if isinstance(value, list):
        return not value
    return value is None or value is False or value == 0 or value == ""


def without_zeros(value: Any) -> Any:
    """``value`` with every zero value (``is_zero``) left out, as Go compares what it decoded."""
    if isinstance(value, dict):
        items = {key: without_zeros(item) for key, item in value.items()}
        return {key: item for key, item in items.items() if not is_zero(item)} or None
    if isinstance(value, list):
        return [without_zeros(item) for item in value] or None
    return None if is_zero(value) else value
