"""The resource registry: every kind the operator touches, and how the API server serves it.

A ``Resource[T]`` is one REST collection (``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``)
and says what crosses the port for it: ``T`` is the msgspec Struct of a kind we model, or
``JSONObject`` (raw JSON) for the rest. It also records what the API server's strategy needs:
whether the kind has a ``spec`` (generation rules), a status subresource, a scale subresource and
where scale reads and writes. An ``ObjectKey[T]`` names one object of a resource.

``DEFAULT_RESOURCES`` lists them all; an adapter may be given more.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

import msgspec

from dgd.cluster.lenient import convert_leniently, log_dropped
from dgd.messages import dcd, dgd, dgdsa, grove, grove_children
from dgd.messages.base import JSONObject, Model
from dgd.messages.meta import Event

T = TypeVar("T")


def without_managed_fields(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields``, which the operator never reads. On a real API server
    they are most of a small object's bytes, and a cache of thousands of objects would keep them all.
    A Struct comes back replaced (its metadata without them), a dict changed in place. A write that
    omits them leaves the server's as they are."""
    if isinstance(obj, dict):
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
        return obj
    metadata = getattr(obj, "metadata", None)
    if isinstance(metadata, msgspec.Struct) and getattr(metadata, "managed_fields", None) is not None:
        return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(metadata, managed_fields=None))
    return obj


class Rejected(msgspec.Struct, frozen=True):
    """An object the server holds that this operator's model of its kind refuses (a CRD newer or
    looser than our Structs, say): who it is, and why, in msgspec's words (they name the field)."""

    namespace: str | None
    name: str
    resource_version: str
    error: str


class _Identity(msgspec.Struct):
    namespace: str | None = None
    name: str = ""
    resourceVersion: str = ""


class _Identified(msgspec.Struct):
    metadata: _Identity = msgspec.field(default_factory=_Identity)


class ScalePaths(msgspec.Struct, frozen=True):
    """Where the scale subresource reads and writes, as JSON paths (``.spec.replicas``).

    ``selector`` may point at a string (a CRD's ``labelSelectorPath``) or at a ``LabelSelector``
    object (a Deployment's ``.spec.selector``), which the scale reports in string form.
    """

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    selector: str | None = None


class Resource(msgspec.Struct, Generic[T], frozen=True, kw_only=True):
    """One kind as the API serves it. ``model`` is the Struct objects decode to (``None``: raw JSON)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    model: type[Model] | None = None
    raw: bool = True
    has_spec: bool = True
    status: bool = False
    scale: ScalePaths | None = None
    #: Whether the server keeps ``metadata.generation`` (custom resources, workloads, Ingress: not
    #: ConfigMaps, Secrets, RBAC, Services, Leases, Events, Namespaces).
    generation: bool = True
    #: Served by a CustomResourceDefinition: an update (PUT) must carry the resourceVersion it read.
    custom: bool = False
    #: Another project's kind: a field our model refuses is dropped, not the object
    #: (``dgd.cluster.lenient``).
    lenient: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def key(self, namespace: str | None, name: str) -> ObjectKey[T]:
        """The key of the object ``name`` (in ``namespace`` for a namespaced kind, else ``None``)."""
        return ObjectKey(self, namespace, name)

    def key_of(self, obj: T) -> ObjectKey[T]:
        """The key of an object of this resource (a Struct or raw JSON)."""
        if isinstance(obj, dict):
            metadata = obj.get("metadata") or {}
            return ObjectKey(self, metadata.get("namespace"), str(metadata.get("name") or ""))
        meta = obj.metadata  # type: ignore[attr-defined]
        return ObjectKey(self, meta.namespace, meta.name or "")

    def as_raw(self) -> Resource[JSONObject]:
        """The same collection, read and written as raw JSON (unknown fields kept as they are)."""
        # Every field copied but ``raw``: a field added to ``Resource`` later is carried over too.
        return cast("Resource[JSONObject]", msgspec.structs.replace(self, raw=True))

    def decode(self, data: bytes) -> T:
        """An object of this resource from its stored JSON: a fresh Struct, or a fresh dict."""
        if self.raw or self.model is None:
            return cast(T, without_managed_fields(msgspec.json.decode(data)))
        try:
            return cast(T, without_managed_fields(msgspec.json.decode(data, type=self.model)))
        except msgspec.ValidationError:
            if not self.lenient:
                raise
        return self._leniently(without_managed_fields(msgspec.json.decode(data)))

    def decode_or_reject(self, data: bytes) -> T | Rejected:
        """``decode``, or what the model refuses in ``data`` (JSON that is not an object of this kind
        at all still raises ``msgspec.DecodeError``)."""
        try:
            return self.decode(data)
        except msgspec.ValidationError as error:
            return rejected(msgspec.json.decode(data, type=_Identified), error)

    def convert_or_reject(self, item: JSONObject) -> T | Rejected:
        """One raw item of a list as this resource's object, or what the model refuses in it."""
        if self.raw or self.model is None:
            return cast(T, without_managed_fields(item))
        try:
            if self.lenient:
                return self._leniently(without_managed_fields(item))
            return cast(T, without_managed_fields(msgspec.convert(item, self.model)))
        except msgspec.ValidationError as error:
            return rejected(msgspec.convert(item, _Identified), error)

    def _leniently(self, item: JSONObject) -> T:
        assert self.model is not None
        obj, dropped = convert_leniently(item, self.model)
        if dropped:
            meta = obj.metadata  # type: ignore[attr-defined]
            log_dropped(self.kind, meta.namespace, meta.name or "", tuple(dropped))
        return cast(T, obj)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def rejected(found: Any, error: msgspec.ValidationError) -> Rejected:
    meta = found.metadata
    return Rejected(meta.namespace, meta.name, meta.resourceVersion, str(error))


class ObjectKey(msgspec.Struct, Generic[T], frozen=True):
    """One object: its resource, namespace (``None`` for a cluster-scoped kind) and name."""

    resource: Resource[T]
    namespace: str | None
    name: str

    def __post_init__(self) -> None:
        if self.resource.namespaced and not self.namespace:
            raise ValueError(f"{self.resource.kind} is namespaced: a key needs a namespace")
        if not self.resource.namespaced and self.namespace is not None:
            raise ValueError(f"{self.resource.kind} is cluster-scoped: a key has no namespace")

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource.kind} {where}"


def _modelled(model: type[Model], api_version: str, plural: str, **options: Any) -> Resource[Any]:
    group, version = api_version.split("/")
    kind = model.__struct_config__.tag
    assert isinstance(kind, str), f"{model.__name__} is not tagged with its kind"
    return Resource(group=group, version=version, kind=kind, plural=plural, model=model, raw=False, **options)


def _ours(
    model: type[Model],
    api_version: str,
    plural: str,
    scale: ScalePaths | None = None,
    *,
    lenient: bool = False,
) -> Resource[Any]:
    return _modelled(model, api_version, plural, status=True, scale=scale, custom=True, lenient=lenient)


# Our kinds: decoded to the Structs of dgd.messages, served by their CRDs with a status subresource
# each, and scale where scaled (the scale subresource reads the pod selector each kind publishes).
_SELECTOR, _HPA_SELECTOR = (
    ScalePaths(selector=".status.selector"),
    ScalePaths(selector=".status.hpaPodSelector"),
)
DGD: Resource[dgd.DynamoGraphDeployment] = _ours(dgd.DynamoGraphDeployment, dgd.API_VERSION, dgd.PLURAL)
DCD: Resource[dcd.DynamoComponentDeployment] = _ours(
    dcd.DynamoComponentDeployment, dcd.API_VERSION, dcd.PLURAL
)
DGDSA: Resource[dgdsa.DynamoGraphDeploymentScalingAdapter] = _ours(
    dgdsa.DynamoGraphDeploymentScalingAdapter, dgdsa.API_VERSION, dgdsa.PLURAL, _SELECTOR
)
# Grove's kinds are Grove's: read leniently, so a newer Grove's field shapes hide no object.
PCS: Resource[grove.PodCliqueSet] = _ours(
    grove.PodCliqueSet, grove.API_VERSION, grove.PCS_PLURAL, _HPA_SELECTOR, lenient=True
)
PCLQ: Resource[grove_children.PodClique] = _ours(
    grove_children.PodClique, grove.API_VERSION, grove_children.PCLQ_PLURAL, _HPA_SELECTOR, lenient=True
)
PCSG: Resource[grove_children.PodCliqueScalingGroup] = _ours(
    grove_children.PodCliqueScalingGroup,
    grove.API_VERSION,
    grove_children.PCSG_PLURAL,
    _SELECTOR,
    lenient=True,
)
EVENT: Resource[Event] = _modelled(Event, "events.k8s.io/v1", "events", has_spec=False, generation=False)


def _raw(api_version: str, kind: str, plural: str, **options: Any) -> Resource[JSONObject]:
    group, _, version = api_version.rpartition("/")
    return Resource[JSONObject](group=group, version=version, kind=kind, plural=plural, **options)


# Kinds we do not model travel as raw JSON.
CHECKPOINT = _raw("nvidia.com/v1alpha1", "DynamoCheckpoint", "dynamocheckpoints", status=True, custom=True)
# Built-in kinds whose server keeps no generation say so (generation=False).
NAMESPACE = _raw("v1", "Namespace", "namespaces", namespaced=False, status=True, generation=False)
CONFIG_MAP = _raw("v1", "ConfigMap", "configmaps", has_spec=False, generation=False)
SECRET = _raw("v1", "Secret", "secrets", has_spec=False, generation=False)
SERVICE = _raw("v1", "Service", "services", status=True, generation=False)
SERVICE_ACCOUNT = _raw("v1", "ServiceAccount", "serviceaccounts", has_spec=False, generation=False)
PVC = _raw("v1", "PersistentVolumeClaim", "persistentvolumeclaims", status=True, generation=False)
POD = _raw("v1", "Pod", "pods", status=True)
DEPLOYMENT = _raw(
    "apps/v1", "Deployment", "deployments", status=True, scale=ScalePaths(selector=".spec.selector")
)
#: What kube-controller-manager makes of a Deployment (the simulated world's Deployment model writes them).
REPLICA_SET = _raw(
    "apps/v1", "ReplicaSet", "replicasets", status=True, scale=ScalePaths(selector=".spec.selector")
)
ROLE = _raw("rbac.authorization.k8s.io/v1", "Role", "roles", has_spec=False, generation=False)
ROLE_BINDING = _raw(
    "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", has_spec=False, generation=False
)
CLUSTER_ROLE = _raw(
    "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False, has_spec=False,
    generation=False,
)  # fmt: skip
INGRESS = _raw("networking.k8s.io/v1", "Ingress", "ingresses", status=True)
# LeaderWorkerSet's kind (sigs.k8s.io/lws), the DCD controller's multinode workload, and Volcano's
# PodGroup, whose legacy per-replica objects it removes (dcd-controller §2.3.2-2.3.3).
LWS = _raw(
    "leaderworkerset.x-k8s.io/v1",
    "LeaderWorkerSet",
    "leaderworkersets",
    status=True,
    custom=True,
    scale=ScalePaths(selector=".status.hpaPodSelector"),
)
POD_GROUP = _raw("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups", status=True, custom=True)
LEASE = _raw("coordination.k8s.io/v1", "Lease", "leases", generation=False)
# Kinds of the features issue 20 brings (dgd-domain §1): the endpoint picker's InferencePool, the
# GPU memory service's DRA claim templates and device classes, Istio's routing objects, and Grove's
# topology bindings (read only). All served by CRDs on a real cluster except DRA's, built in.
INFERENCE_POOL = _raw(
    "inference.networking.k8s.io/v1", "InferencePool", "inferencepools", status=True, custom=True
)
RESOURCE_CLAIM_TEMPLATE = _raw("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates")
DEVICE_CLASS = _raw("resource.k8s.io/v1", "DeviceClass", "deviceclasses", namespaced=False)
VIRTUAL_SERVICE = _raw(
    "networking.istio.io/v1beta1", "VirtualService", "virtualservices", status=True, custom=True
)
DESTINATION_RULE = _raw(
    "networking.istio.io/v1beta1", "DestinationRule", "destinationrules", status=True, custom=True
)
CLUSTER_TOPOLOGY_BINDING = _raw(
    "grove.io/v1alpha1", "ClusterTopologyBinding", "clustertopologybindings", namespaced=False, status=True,
    custom=True,
)  # fmt: skip
#: Only ``sim world`` writes Nodes: the simulated kubelet's node, on a real cluster without kubelets.
NODE = _raw("v1", "Node", "nodes", namespaced=False, status=True, generation=False)

# Kinds only the daemon's webhook registration touches (``REGISTRATION_RESOURCES``): not among the
# defaults, as the simulation admits in process; a memory server given them serves them.
_CLUSTER_SCOPED = {"namespaced": False, "has_spec": False, "generation": False}
MUTATING_WEBHOOK_CONFIGURATION = _raw(
    "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
    **_CLUSTER_SCOPED,
)  # fmt: skip
VALIDATING_WEBHOOK_CONFIGURATION = _raw(
    "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
    **_CLUSTER_SCOPED,
)  # fmt: skip
CRD = _raw(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False,
    status=True,
)  # fmt: skip
#: Who the client is, as the API server authenticated it (a create answers with it; nothing is stored).
SELF_SUBJECT_REVIEW = _raw(
    "authentication.k8s.io/v1", "SelfSubjectReview", "selfsubjectreviews", **_CLUSTER_SCOPED
)

#: Who a bearer token belongs to, and whether a user may do something: created to be answered, nothing
#: is stored. The daemon's metrics server asks them of every scraper (``dgd.daemon.metrics_access``).
TOKEN_REVIEW = _raw("authentication.k8s.io/v1", "TokenReview", "tokenreviews", **_CLUSTER_SCOPED)
SUBJECT_ACCESS_REVIEW = _raw(
    "authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews", **_CLUSTER_SCOPED
)

#: The kinds of the webhooks' registration (``dgd.daemon.registration``), all cluster-scoped.
REGISTRATION_RESOURCES: tuple[Resource[Any], ...] = (
    MUTATING_WEBHOOK_CONFIGURATION,
    VALIDATING_WEBHOOK_CONFIGURATION,
    CRD,
    SELF_SUBJECT_REVIEW,
)

#: The kinds of the LeaderWorkerSet integration: served only by a cluster that has it installed.
LWS_RESOURCES: tuple[Resource[Any], ...] = (LWS, POD_GROUP)

#: Every kind the operator and the simulation touch (on a cluster without LeaderWorkerSet).
DEFAULT_RESOURCES: tuple[Resource[Any], ...] = (
    DGD,
    DCD,
    DGDSA,
    CHECKPOINT,
    PCS,
    PCLQ,
    PCSG,
    EVENT,
    NAMESPACE,
    CONFIG_MAP,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
    PVC,
    POD,
    DEPLOYMENT,
    REPLICA_SET,
    ROLE,
    ROLE_BINDING,
    CLUSTER_ROLE,
    INGRESS,
    LEASE,
    INFERENCE_POOL,
    RESOURCE_CLAIM_TEMPLATE,
    DEVICE_CLASS,
    VIRTUAL_SERVICE,
    DESTINATION_RULE,
    CLUSTER_TOPOLOGY_BINDING,
)
