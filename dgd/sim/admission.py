"""The simulated cluster's admission: the operator's own webhooks, called in process.

``webhook_chain(settings)`` is the ``Admission`` the memory server runs for creates and updates: a
write of a kind the webhooks are registered for (supplement §4.1: DGD and DCD defaulting and
validation, DynamoCheckpoint validation) goes through the same handlers the daemon serves over HTTPS
(``dgd.domain.admission.webhooks``) — defaulting first, its JSON patch applied, then validation — and
a refusal is raised as the API server words it: ``admission webhook "<name>" denied the request:
<message>``, with the handler's code and causes. So ``sim apply``, ``sim serve``, ``sim replay`` and
chaos refuse what ``validate`` refuses, as a cluster with the webhooks installed would.

Pod creates go through the pod checkpoint-restore mutator (dgd-domain §10.6 (b)) while the checkpoint
gate is on, as the daemon registers it: a restore candidate's DynamoCheckpoint is read from the store
as the pod is written, so a pod the simulated Grove or DCD controller creates once an ``Immediate``
checkpoint is Ready is created restored, and the ones before it cold, as on a real cluster.

DGD validation gets the live lookups the daemon's webhook makes (``dgd.daemon.lookups``): the
ClusterTopologyBindings a DGD names, read from the store as it is written, and whether the
InferencePool API is served, from the world's served groups.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

import msgspec

from dgd.cluster.admission import Admission, AdmissionAttempt
from dgd.cluster.errors import Cause, ClusterError, Invalid
from dgd.cluster.resources import CHECKPOINT, CLUSTER_TOPOLOGY_BINDING
from dgd.domain.admission import json_patch, pod_restore
from dgd.domain.admission import webhooks as handlers
from dgd.domain.admission.lookups import (
    INFERENCE_POOL_GROUP,
    BindingRead,
    ClusterLookups,
    binding_levels,
    wanted,
)
from dgd.domain.admission.pod_restore import Candidate, Unavailable
from dgd.domain.admission.webhooks import AdmissionSettings, Handler
from dgd.messages.admission import (
    AdmissionRequest,
    AdmissionResponse,
    GroupVersionKind,
    GroupVersionResource,
    UserInfo,
)
from dgd.messages.base import JSONObject
from dgd.messages.config import OperatorConfig
from dgd.sim.world.settings import WorldSettings

GROVE_GROUP_VERSION = "grove.io/v1alpha1"


class _Registered(NamedTuple):
    """The webhooks registered for one kind, by name, as §4.1 names them."""

    mutate: tuple[str, Handler] | None
    validate: tuple[str, Handler]


_REGISTERED: dict[tuple[str, str], _Registered] = {
    ("nvidia.com", "DynamoGraphDeployment"): _Registered(
        ("mdynamographdeployment.kb.io", handlers.mutate_dgd),
        ("vdynamographdeployment.kb.io", handlers.validate_dgd),
    ),
    ("nvidia.com", "DynamoComponentDeployment"): _Registered(
        ("mdynamocomponentdeploymentv1beta1.kb.io", handlers.mutate_dcd),
        ("vdynamocomponentdeployment.kb.io", handlers.validate_dcd),
    ),
    ("nvidia.com", "DynamoCheckpoint"): _Registered(
        None, ("vdynamocheckpoint.kb.io", handlers.validate_checkpoint)
    ),
}


def _refusal(webhook: str, request: AdmissionRequest, response: AdmissionResponse) -> ClusterError:
    status = response.status
    message = status.message if status is not None else "refused"
    details = (status.details or {}) if status is not None else {}
    causes = tuple(
        Cause(str(cause.get("field") or ""), str(cause.get("message") or ""))
        for cause in details.get("causes") or []
        if isinstance(cause, dict)
    )
    return Invalid(
        f'admission webhook "{webhook}" denied the request: {message}',
        kind=request.kind.kind,
        namespace=request.namespace,
        name=request.name,
        causes=causes,
        bad_request=status is not None and status.code == 400,
    )


def _request(attempt: AdmissionAttempt) -> AdmissionRequest:
    """The review the API server would send a webhook for ``attempt``."""
    metadata = attempt.obj.get("metadata") or {}
    kind = GroupVersionKind(group=attempt.group, version=attempt.version, kind=attempt.kind)
    return AdmissionRequest(
        uid="simulated",
        kind=kind,
        resource=GroupVersionResource(group=attempt.group, version=attempt.version, resource=attempt.plural),
        operation=attempt.operation,
        user_info=UserInfo(username=attempt.user),
        request_kind=kind,
        name=metadata.get("name"),
        namespace=metadata.get("namespace"),
        object=attempt.obj,
        old_object=attempt.old,
    )


def _restored(attempt: AdmissionAttempt, settings: AdmissionSettings) -> JSONObject:
    """A pod create through the pod checkpoint-restore mutator (registered for pod creates only, under
    the checkpoint gate): reshaped, or as it came."""
    if attempt.operation != "CREATE" or not settings.checkpoint_enabled:
        return attempt.obj
    request = _request(attempt)
    wanted = pod_restore.candidate(request, settings)
    if isinstance(wanted, AdmissionResponse):
        return attempt.obj
    response = pod_restore.mutate_pod(request, settings, _checkpoint(attempt, wanted))
    return json_patch.apply(attempt.obj, json.loads(response.patch)) if response.patch else attempt.obj


def _checkpoint(attempt: AdmissionAttempt, wanted: Candidate) -> JSONObject | Unavailable:
    """The candidate's checkpoint as the cluster holds it while the pod is written."""
    try:
        found = attempt.read(CHECKPOINT, wanted.namespace, wanted.checkpoint) if attempt.read else None
    except ClusterError as error:
        return Unavailable(str(error))
    if found is None:
        return Unavailable(f"DynamoCheckpoint {wanted.namespace}/{wanted.checkpoint} not found")
    return found


def _lookups(attempt: AdmissionAttempt, served_groups: Sequence[str] | None) -> ClusterLookups | None:
    """What the daemon's webhook would read for a DGD write, read from the store and the world."""
    needed = wanted(attempt.obj)
    served = served_groups is None or any(
        gv.rpartition("/")[0] == INFERENCE_POOL_GROUP for gv in served_groups
    )
    bindings = {}
    for name in needed.bindings:
        try:
            found = attempt.read(CLUSTER_TOPOLOGY_BINDING, None, name) if attempt.read else None
        except ClusterError as error:
            bindings[name] = BindingRead(error=str(error))
            continue
        bindings[name] = BindingRead() if found is None else BindingRead(levels=binding_levels(found))
    return ClusterLookups(inference_pool=served, bindings=bindings)


def webhook_chain(settings: AdmissionSettings, *, served_groups: Sequence[str] | None = None) -> Admission:
    """The ``Admission`` of a cluster with this operator's webhooks installed (see the module);
    ``served_groups``: the ``group/version`` s the world serves (``None``: the InferencePool check is
    skipped)."""

    def admit(attempt: AdmissionAttempt) -> JSONObject:
        if (attempt.group, attempt.kind) == ("", "Pod"):
            return _restored(attempt, settings)
        registered = _REGISTERED.get((attempt.group, attempt.kind))
        if registered is None:
            return attempt.obj
        request = _request(attempt)
        obj = attempt.obj
        if registered.mutate is not None:
            webhook, mutate = registered.mutate
            response = mutate(request, settings)
            if not response.allowed:
                raise _refusal(webhook, request, response)
            if response.patch:
                obj = json_patch.apply(obj, json.loads(response.patch))
                request = msgspec.structs.replace(request, object=obj)
        webhook, validate = registered.validate
        if validate is handlers.validate_dgd:
            validate = partial(handlers.validate_dgd, lookups=_lookups(attempt, served_groups))
        response = validate(request, settings)
        if not response.allowed:
            raise _refusal(webhook, request, response)
        return obj

    return admit


#: Who the simulated operator is to admission (as the chart's ServiceAccount would be). The simulated
#: cluster's users write through the same client, so they share its exemptions (§4.6).
SIMULATED_OPERATOR = "system:serviceaccount:dynamo-system:dynamo-operator-controller-manager"


def simulated_admission(config: OperatorConfig, settings: WorldSettings) -> AdmissionSettings:
    """What the simulated cluster's webhooks depend on: the gates as the operator resolves them
    (Grove on when its API is served, unless the configuration says), and the operator's principal."""
    grove = config.orchestrators.grove.enabled
    return AdmissionSettings(
        grove_enabled=GROVE_GROUP_VERSION in settings.served_groups if grove is None else grove,
        operator_principal=SIMULATED_OPERATOR,
        checkpoint=config.checkpoint,
    )
