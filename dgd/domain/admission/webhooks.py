"""The admission webhooks' answers (supplement §4), as pure functions of the API server's requests.

Each handler takes an ``AdmissionRequest`` and the operator's ``AdmissionSettings`` and returns the
``AdmissionResponse``; serving them over HTTPS is the daemon's business (``dgd.daemon.webhooks``),
and the simulation calls the same functions. What each answers:

* **DGD defaulting** (``mutate_dgd``): supplement §4.2 — the provider annotation and origin version
  on create, override targets, ``replicas`` and (Grove) ``minAvailable`` — as a JSON patch of what
  changed, nothing else;
* **DGD validation** (``validate_dgd``): §4.4 on create and §4.5 on update, every independent error
  at once, refused with the API server's own shape (422 ``Invalid``: ``DynamoGraphDeployment.nvidia.com
  "<name>" is invalid: [<path>: <message>, …]``, one cause per field), warnings as warnings;
* DCD defaulting and validation, DynamoCheckpoint validation (§4.7); the pod checkpoint-restore
  mutator (§4.7, dgd-domain §10.6 (b)) is ``dgd.domain.admission.pod_restore``: it needs the
  checkpoint its pod names read first, so it is not a ``Handler``.

Every DGD and DCD handler first checks that it is called with v1beta1 (§4.1): anything else means the
webhook or the CRD's conversion is misconfigured, and is refused saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from dgd.domain.admission import checkpoint as checkpoint_rules
from dgd.domain.admission import dcd as dcd_rules
from dgd.domain.admission.defaulting import default_dgd
from dgd.domain.admission.errors import FieldError
from dgd.domain.admission.json_patch import diff
from dgd.domain.admission.lookups import ClusterLookups
from dgd.domain.admission.principals import Requester
from dgd.domain.admission.update import validate_update
from dgd.domain.admission.validation import admit
from dgd.domain.conversion import ConversionError, convert
from dgd.messages.admission import (
    AdmissionRequest,
    AdmissionResponse,
    ConversionRequest,
    ConversionResponse,
    ConversionResult,
    Status,
)
from dgd.messages.base import JSONObject
from dgd.messages.config import COMPATIBLE_UPSTREAM_VERSION, CheckpointConfig
from dgd.messages.dcd import DynamoComponentDeployment
from dgd.messages.dgd import DynamoGraphDeployment

T = TypeVar("T")

GROUP = "nvidia.com"
V1BETA1 = "v1beta1"


class AdmissionSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What admission depends on besides the request: the Grove gate, the version written as the
    origin of new DGDs, the operator's own principal (``system:serviceaccount:NS:NAME``, or the user
    its credentials authenticate as; ``None``: unknown) and the effective checkpoint configuration
    (its ``enabled`` is the checkpoint gate; its storage and seccomp shape restored pods)."""

    grove_enabled: bool = True
    operator_version: str = COMPATIBLE_UPSTREAM_VERSION
    operator_principal: str | None = None
    checkpoint: CheckpointConfig = CheckpointConfig()

    @property
    def checkpoint_enabled(self) -> bool:
        """The checkpoint gate."""
        return self.checkpoint.enabled


Handler = Callable[[AdmissionRequest, AdmissionSettings], AdmissionResponse]


def allowed(
    request: AdmissionRequest,
    *,
    warnings: Sequence[str] = (),
    patch: list[JSONObject] | None = None,
    reason: str | None = None,
) -> AdmissionResponse:
    """Admit the request, with warnings, (a mutating webhook's) changes and why (``reason``: the
    message of a code 200 status, as controller-runtime's ``admission.Allowed(reason)`` answers)."""
    return AdmissionResponse(
        uid=request.uid,
        allowed=True,
        status=Status(code=200, message=reason, status="Success") if reason else None,
        patch=json.dumps(patch).encode() if patch else None,  # base64 on the wire: msgspec encodes bytes so
        patch_type="JSONPatch" if patch else None,
        warnings=list(warnings) or None,
    )


def refused(
    request: AdmissionRequest, code: int, reason: str, message: str, **details: object
) -> AdmissionResponse:
    """Refuse the request with an HTTP ``code``, a reason word and a message."""
    return AdmissionResponse(
        uid=request.uid,
        allowed=False,
        status=Status(code=code, reason=reason, message=message, details=dict(details) or None),
    )


def invalid(
    request: AdmissionRequest, kind: str, errors: Sequence[FieldError], warnings: Sequence[FieldError] = ()
) -> AdmissionResponse:
    """Refuse as the API server refuses an invalid object: 422, reason ``Invalid``, one cause per error."""
    name = request.name or _name(request.object) or ""
    listed = [str(error) for error in errors]
    body = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    response = refused(
        request,
        422,
        "Invalid",
        f'{kind}.{GROUP} "{name}" is invalid: {body}',
        name=name,
        group=GROUP,
        kind=kind,
        causes=[{"reason": "FieldValueInvalid", "field": e.path, "message": e.message} for e in errors],
    )
    return msgspec.structs.replace(response, warnings=[str(w) for w in warnings] or None)


def _name(obj: JSONObject | None) -> str | None:
    metadata = (obj or {}).get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else None


def wrong_version(request: AdmissionRequest) -> AdmissionResponse | None:
    """The refusal of a DGD or DCD request that does not come as v1beta1 (§4.1), else ``None``."""
    kind = request.kind
    if (kind.group, kind.version) == (GROUP, V1BETA1):
        return None
    got = (
        f"{kind.group}/{kind.version}, Kind={kind.kind}"
        if kind.group
        else f"{kind.version}, Kind={kind.kind}"
    )
    return refused(
        request,
        400,
        "BadRequest",
        f"admission requires {GROUP}/{V1BETA1}, Kind={kind.kind}, got {got}; "
        "check webhook and CRD conversion configuration",
    )


def _decoded(request: AdmissionRequest, model: type[T], obj: JSONObject | None) -> T | AdmissionResponse:
    """``obj`` as ``model``, or the refusal of what is not one (naming the field our model refuses)."""
    try:
        return msgspec.convert(obj, model)
    except msgspec.ValidationError as error:
        return refused(request, 400, "BadRequest", f"the object is not a {request.kind.kind}: {error}")


def _requester(request: AdmissionRequest) -> Requester | None:
    user = request.user_info
    return Requester(user.username, tuple(user.groups or ())) if user.username else None


def _not_ours(request: AdmissionRequest) -> AdmissionResponse | None:
    """The answer to a request a DGD or DCD handler does not look into: anything but a create or an
    update of an object is allowed, one not in v1beta1 refused (§4.1); ``None`` for the others."""
    if request.operation not in ("CREATE", "UPDATE") or request.object is None:
        return allowed(request)
    return wrong_version(request)


def _looked_into(request: AdmissionRequest, model: type[T]) -> T | AdmissionResponse:
    """The request's object as ``model`` when a DGD or DCD handler looks into it; else the answer
    already due: :func:`_not_ours`'s, or the refusal of an object that is not a ``model``."""
    skipped = _not_ours(request)
    if skipped is not None:
        return skipped
    return _decoded(request, model, request.object)


def mutate_dgd(request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
    """DGD defaulting (§4.2): a JSON patch of what the defaults change, on CREATE and UPDATE."""
    dgd = _looked_into(request, DynamoGraphDeployment)
    if isinstance(dgd, AdmissionResponse):
        return dgd
    defaulted = default_dgd(
        dgd,
        grove_enabled=settings.grove_enabled,
        operator_version=settings.operator_version,
        create=request.operation == "CREATE",
    )
    return allowed(request, patch=diff(msgspec.to_builtins(dgd), msgspec.to_builtins(defaulted)))


def validate_dgd(
    request: AdmissionRequest, settings: AdmissionSettings, lookups: ClusterLookups | None = None
) -> AdmissionResponse:
    """DGD validation: §4.4 on CREATE, §4.5 on UPDATE with the requester's exemptions (§4.6); every
    independent error at once, warnings as warnings. ``lookups`` are what the server read from the
    cluster for the request (``lookups.wanted`` says what); without them those rules are skipped."""
    skipped = _not_ours(request)
    if skipped is not None:
        return skipped
    if request.operation == "CREATE":
        verdict = admit(
            request.object,
            grove_enabled=settings.grove_enabled,
            operator_version=settings.operator_version,
            lookups=lookups,
        )
        return answer(request, verdict.errors, verdict.warnings)
    new = _decoded(request, DynamoGraphDeployment, request.object)
    old = _decoded(request, DynamoGraphDeployment, request.old_object)
    if isinstance(new, AdmissionResponse):
        return new
    if isinstance(old, AdmissionResponse):
        return old
    verdict = validate_update(
        old,
        new,
        requester=_requester(request),
        operator_principal=settings.operator_principal,
        grove_enabled=settings.grove_enabled,
        lookups=lookups,
    )
    return answer(request, verdict.errors, verdict.warnings)


def mutate_dcd(request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
    """DCD defaulting (§4.2): on CREATE, ``spec.name`` is the object's name when empty."""
    if request.operation != "CREATE" or request.object is None:
        return allowed(request)
    problem = wrong_version(request)
    if problem is not None:
        return problem
    spec = request.object.get("spec")
    name = _name(request.object)
    if not isinstance(spec, dict) or spec.get("name") or not name:
        return allowed(request)
    return allowed(request, patch=[{"op": "add", "path": "/spec/name", "value": name}])


def validate_dcd(request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
    """DCD validation (§4.7) on CREATE and UPDATE."""
    new = _looked_into(request, DynamoComponentDeployment)
    if isinstance(new, AdmissionResponse):
        return new
    old: DynamoComponentDeployment | None = None
    if request.operation == "UPDATE":
        stored = _decoded(request, DynamoComponentDeployment, request.old_object)
        if isinstance(stored, AdmissionResponse):
            return stored
        old = stored
    verdict = dcd_rules.validate_dcd(new, old)
    return answer(request, verdict.errors, verdict.warnings)


def validate_checkpoint(request: AdmissionRequest, settings: AdmissionSettings) -> AdmissionResponse:
    """DynamoCheckpoint validation (§4.7) on CREATE and UPDATE: the gate, GMS, identity."""
    if request.operation not in ("CREATE", "UPDATE") or request.object is None:
        return allowed(request)
    old = request.old_object if request.operation == "UPDATE" else None
    errors = checkpoint_rules.validate_checkpoint(
        request.object, old, checkpoint_enabled=settings.checkpoint_enabled
    )
    return answer(request, errors, [])


def answer(
    request: AdmissionRequest, errors: Sequence[FieldError], warnings: Sequence[FieldError]
) -> AdmissionResponse:
    """Refused with every error (as invalid), or allowed with every warning."""
    if errors:
        return invalid(request, request.kind.kind, errors, warnings)
    return allowed(request, warnings=[str(w) for w in warnings])


def convert_review(request: ConversionRequest) -> ConversionResponse:
    """The conversion webhook (§1, §4.8): every object as ``desired_api_version``, in order; the first
    that cannot be converted fails the whole review, naming the object and the field."""
    converted: list[JSONObject] = []
    for obj in request.objects:
        try:
            converted.append(convert(obj, request.desired_api_version))
        except ConversionError as error:
            name = _name(obj) or "<no name>"
            kind = obj.get("kind") or "object"
            message = f"{kind} {name} cannot be converted to {request.desired_api_version}: {error}"
            return ConversionResponse(
                uid=request.uid, result=ConversionResult(status="Failure", message=message)
            )
    return ConversionResponse(
        uid=request.uid, result=ConversionResult(status="Success"), converted_objects=converted
    )


#: The conversion webhook's handler.
CONVERTER: Callable[[ConversionRequest], ConversionResponse] = convert_review
