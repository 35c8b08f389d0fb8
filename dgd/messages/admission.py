"""What the API server sends its admission and conversion webhooks, and what they answer.

``AdmissionReview`` (``admission.k8s.io/v1``) carries one request to a mutating or validating
webhook; ``ConversionReview`` (``apiextensions.k8s.io/v1``) asks a CRD's conversion webhook to
convert objects to another version of their kind. Objects travel as raw JSON (``JSONObject``): the
webhook decides how to read them, and what it does not model passes through.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from dgd.messages.base import JSONObject, Model

ADMISSION_API_VERSION = "admission.k8s.io/v1"
CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


class GroupVersionKind(Model, frozen=True):
    """The kind of the object a request is about (``group`` is empty for the core group)."""

    version: str
    kind: str
    group: str = ""


class GroupVersionResource(Model, frozen=True):
    """The REST resource a request went to."""

    version: str
    resource: str
    group: str = ""


class UserInfo(Model, frozen=True):
    """Who made the request, as the API server authenticated them."""

    username: str = ""
    uid: str | None = None
    groups: list[str] | None = None


class AdmissionRequest(Model, frozen=True):
    """One write to admit. ``object`` is the object as it would be stored (absent on DELETE),
    ``old_object`` the stored one (UPDATE, DELETE); ``kind`` is the version the webhook is called
    with, ``request_kind`` the version the user wrote (they differ when the API server converted)."""

    uid: str
    kind: GroupVersionKind
    resource: GroupVersionResource
    operation: Operation
    user_info: UserInfo = msgspec.field(default_factory=UserInfo)
    request_kind: GroupVersionKind | None = None
    sub_resource: str | None = None
    name: str | None = None
    namespace: str | None = None
    object: JSONObject | None = None
    old_object: JSONObject | None = None
    dry_run: bool | None = None


class Status(Model, frozen=True):
    """Why a request was refused (or, with code 200 and ``status`` ``Success``, why one was allowed as
    it came): an HTTP code, a reason word and a message (``metav1.Status``)."""

    code: int
    message: str
    reason: str | None = None
    details: JSONObject | None = None
    status: str = "Failure"


class AdmissionResponse(Model, frozen=True):
    """The answer to one request: allowed or not (with why), and for a mutating webhook the changes
    as a base64 JSON patch."""

    uid: str
    allowed: bool
    status: Status | None = None
    patch: bytes | None = None
    patch_type: Literal["JSONPatch"] | None = None
    warnings: list[str] | None = None


class AdmissionReview(Model, frozen=True):
    """The envelope both ways: the API server sends ``request``, the webhook answers ``response``
    (``api_version`` and ``kind`` are required both ways, so they have no default)."""

    api_version: str
    kind: str
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None


class ConversionRequest(Model, frozen=True):
    """Convert ``objects`` (of one kind, any versions) to ``desired_api_version``."""

    uid: str
    desired_api_version: str = msgspec.field(name="desiredAPIVersion")
    objects: list[JSONObject] = msgspec.field(default_factory=list)


class ConversionResult(Model, frozen=True):
    """``Success``, or ``Failure`` with a message (the API server then fails the whole request)."""

    status: Literal["Success", "Failure"]
    message: str | None = None


class ConversionResponse(Model, frozen=True):
    """The converted objects, in the order asked, or why not."""

    uid: str
    result: ConversionResult
    converted_objects: list[JSONObject] = msgspec.field(default_factory=list)


class ConversionReview(Model, frozen=True):
    """The conversion envelope both ways."""

    api_version: str
    kind: str
    request: ConversionRequest | None = None
    response: ConversionResponse | None = None


class AdmissionReviewRequest(Model, frozen=True):
    """An ``AdmissionReview`` as the API server sends it: only the request is read (whatever it puts
    in ``response`` — Go encodes an empty one — is ignored)."""

    api_version: str
    kind: str
    request: AdmissionRequest | None = None


class ConversionReviewRequest(Model, frozen=True):
    """A ``ConversionReview`` as the API server sends it: only the request is read (it sends an
    empty ``response`` with ``convertedObjects: null``, which is not ours to check)."""

    api_version: str
    kind: str
    request: ConversionRequest | None = None
