"""Admission of any manifest document: which kinds we check, which we skip, and why.

DGDs are checked in full (v1alpha1 ones are converted to v1beta1 first, with errors reported at
their v1alpha1 paths), and for their size: a DGD over the API server's request limit is an error
first. Documents of other API groups are skipped. A document in the ``nvidia.com`` group whose kind
is not a Dynamo kind is an error at ``kind``: it is most likely a typo.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

import msgspec

from dgd.domain.admission.errors import FieldError, show
from dgd.domain.admission.schema import check
from dgd.domain.admission.validation import Verdict, admit
from dgd.domain.conversion.component import is_legacy_type
from dgd.domain.conversion.dgd import ConversionError, dgd_to_v1beta1
from dgd.messages.dgd import API_VERSION, API_VERSION_V1ALPHA1, GROUP, KIND
from dgd.messages.meta_validation import REQUEST_LIMIT, request_too_large
from dgd.messages.v1alpha1 import DynamoGraphDeploymentV1Alpha1

#: Dynamo kinds of the nvidia.com group that this command knows but does not check.
OTHER_DYNAMO_KINDS = frozenset(
    {
        "DynamoComponentDeployment",
        "DynamoGraphDeploymentScalingAdapter",
        "DynamoGraphDeploymentRequest",
        "DynamoCheckpoint",
        "DynamoModel",
        "DynamoWorkerMetadata",
        "PodSnapshot",
    }
)

Outcome = Literal["valid", "invalid", "skipped"]


class DocumentVerdict(msgspec.Struct, frozen=True):
    """What admission says of one document, with a one-line label (``DynamoGraphDeployment vllm-agg``)."""

    outcome: Outcome
    label: str
    errors: list[FieldError] = msgspec.field(default_factory=list)
    warnings: list[FieldError] = msgspec.field(default_factory=list)
    reason: str = ""


def admit_document(document: Any, *, grove_enabled: bool = True) -> DocumentVerdict:
    """Admit one parsed document as a create."""
    if not isinstance(document, dict):
        return DocumentVerdict("invalid", "document", [FieldError("", f"{show(document)} is not an object")])
    kind, api_version = document.get("kind"), document.get("apiVersion")
    name = (
        (document.get("metadata") or {}).get("name") if isinstance(document.get("metadata"), dict) else None
    )
    label = f"{kind or '<no kind>'} {name or '<no name>'}"
    if not isinstance(kind, str) or not kind:
        return DocumentVerdict("invalid", label, [FieldError("kind", "is required")])
    if not isinstance(api_version, str) or not api_version:
        return DocumentVerdict("invalid", label, [FieldError("apiVersion", "is required")])
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if group != GROUP:
        return DocumentVerdict("skipped", label, reason=f"{api_version} {kind} is not a Dynamo kind")
    if kind in OTHER_DYNAMO_KINDS:
        return DocumentVerdict("skipped", label, reason=f"{kind} is not checked by this command")
    if kind != KIND:
        known = sorted({KIND, *OTHER_DYNAMO_KINDS})
        close = difflib.get_close_matches(kind, known, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else f"; known kinds are {', '.join(known)}"
        return DocumentVerdict(
            "invalid", label, [FieldError("kind", f"{show(kind)} is not an {GROUP} kind{hint}")]
        )
    if api_version == API_VERSION_V1ALPHA1:
        return _verdict(label, document, _admit_v1alpha1(document, grove_enabled))
    if api_version != API_VERSION:
        allowed = f"{API_VERSION} or {API_VERSION_V1ALPHA1}"
        return DocumentVerdict(
            "invalid", label, [FieldError("apiVersion", f"{show(api_version)} is not {allowed}")]
        )
    return _verdict(label, document, admit(document, grove_enabled=grove_enabled))


def _verdict(label: str, document: dict[str, Any], verdict: Verdict) -> DocumentVerdict:
    # The API server reads no request over its limit: that comes first, and the rest is what it would
    # say if it read it (the annotations' own limit, say).
    size = len(msgspec.json.encode(document))
    errors = [FieldError("", request_too_large(KIND, size))] if size > REQUEST_LIMIT else []
    errors += verdict.errors
    return DocumentVerdict("invalid" if errors else "valid", label, errors, verdict.warnings)


def _admit_v1alpha1(document: dict[str, Any], grove_enabled: bool) -> Verdict:
    errors = check(document, DynamoGraphDeploymentV1Alpha1)
    if errors:
        return Verdict(errors=errors, warnings=[])
    try:
        converted = dgd_to_v1beta1(document)
    except ConversionError as exc:
        return Verdict(errors=[FieldError(exc.path, exc.message)], warnings=[])
    verdict = admit(converted, grove_enabled=grove_enabled)
    names = [c.get("name") for c in converted.get("spec", {}).get("components") or []]
    return Verdict(
        errors=[_alpha_path(e, names) for e in verdict.errors],
        warnings=_legacy_types(document) + [_alpha_path(w, names) for w in verdict.warnings],
        dgd=verdict.dgd,
    )


def _legacy_types(document: dict[str, Any]) -> list[FieldError]:
    """Services whose ``componentType`` of an older release has no v1beta1 value (see docs/decisions.md)."""
    services = document.get("spec", {}).get("services") or {}
    return [
        FieldError(
            f"spec.services[{name}].componentType",
            f"{show(service['componentType'])} is a legacy component type with no v1beta1 value: the "
            "component "
            "is converted without a type (a generic component) and the value is kept in the "
            "nvidia.com/dgd-spec annotation",
        )
        for name, service in sorted(services.items())
        if isinstance(service, dict) and is_legacy_type(service)
    ]


#: v1beta1 component sub-paths and their v1alpha1 spelling.
_ALPHA_FIELDS = (
    (".podTemplate.spec.containers[main]", ".extraPodSpec.mainContainer"),
    (".podTemplate.spec", ".extraPodSpec"),
    (".type", ".componentType"),
    (".sharedMemorySize", ".sharedMemory.size"),
    (".experimental.", "."),
)


def _alpha_path(error: FieldError, names: list[Any]) -> FieldError:
    """Say where a problem found after conversion sits in the v1alpha1 document the user wrote."""

    def service(match: re.Match[str]) -> str:
        index = int(match.group(1))
        return f"spec.services[{names[index]}]" if index < len(names) else match.group(0)

    path = re.sub(r"^spec\.components\[(\d+)\]", service, error.path)
    path = re.sub(r"^spec\.env\b", "spec.envs", path)
    if path.startswith("spec.services["):
        head, _, tail = path.partition("]")
        tail = re.sub(r"^\.podTemplate\.spec\.containers\[\d+\]", ".podTemplate.spec.containers[main]", tail)
        for beta, alpha in _ALPHA_FIELDS:
            if tail.startswith(beta):
                tail = alpha + tail[len(beta) :]
                break
        path = f"{head}]{tail}"
    return FieldError(path, error.message)
