"""The errors of the cluster port: one type per API server failure, raised the same way by every adapter.

Each error carries what a user needs to read it: the HTTP code and Kubernetes ``reason`` it stands
for, the object it is about (kind, namespace, name) when there is one, and a message that says what
went wrong. ``Invalid`` lists the offending fields; ``TooManyRequests`` says when to retry.
``to_status`` and ``error_from_status`` translate to and from a ``metav1.Status`` so an HTTP facade
and the kube adapter map errors 1:1.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict, Unpack

import msgspec

from dgd.messages.base import JSONObject


class Cause(msgspec.Struct, frozen=True):
    """One invalid field: where (``spec.replicas``) and what is wrong with it."""

    field: str
    message: str


class Subject(TypedDict, total=False):
    """What an error is about, as far as it is known: the keywords every ``ClusterError`` takes."""

    kind: str | None
    namespace: str | None
    name: str | None


class ClusterError(Exception):
    """A request the API server refused or could not serve. Subclasses fix ``code`` and ``reason``
    in their class line: ``class NotFound(ClusterError, code=404, reason="NotFound")``."""

    code: ClassVar[int] = 500
    reason: ClassVar[str] = "InternalError"

    def __init_subclass__(cls, *, code: int | None = None, reason: str | None = None) -> None:
        super().__init_subclass__()
        if code is not None:
            cls.code = code
        if reason is not None:
            cls.reason = reason

    def __init__(self, message: str = "", **subject: Unpack[Subject]) -> None:
        super().__init__(message)
        self.message = message
        self.kind = subject.get("kind")
        self.namespace = subject.get("namespace")
        self.name = subject.get("name")

    @property
    def subject(self) -> str:
        """``Kind namespace/name`` (or as much of it as is known)."""
        where = f"{self.namespace}/{self.name}" if self.namespace else (self.name or "")
        return " ".join(part for part in (self.kind, where) if part)

    def __str__(self) -> str:
        subject = self.subject
        head = f"{self.reason} ({self.code})"
        return f"{head}: {subject}: {self.message}" if subject else f"{head}: {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies (fault injection raises a fresh copy each time) keep every attribute.
        return (_rebuild, (type(self), self.message), dict(self.__dict__))

    def to_status(self) -> JSONObject:
        """The ``metav1.Status`` an API server would answer with."""
        details: JSONObject = {}
        if self.name:
            details["name"] = self.name
        if self.kind:
            details["kind"] = self.kind
        status: JSONObject = {
            "apiVersion": "v1",
            "kind": "Status",
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            status["details"] = details
        return status


def _rebuild(cls: type[ClusterError], message: str) -> ClusterError:
    return cls(message)


class NotFound(ClusterError, code=404, reason="NotFound"):
    """404: the object (or the subresource, or the kind) does not exist."""


class AlreadyExists(ClusterError, code=409, reason="AlreadyExists"):
    """409: create found an object of that name already there."""


class Conflict(ClusterError, code=409, reason="Conflict"):
    """409: a resourceVersion or uid precondition did not hold; re-read and retry."""


class Gone(ClusterError, code=410, reason="Expired"):
    """410: the requested resourceVersion is older than the watch history; re-list, then watch."""


class Invalid(ClusterError, code=422, reason="Invalid"):
    """422 (or 400 for a malformed request): the object or request breaks a rule; ``causes`` say where."""

    def __init__(
        self,
        message: str = "",
        *,
        causes: tuple[Cause, ...] = (),
        bad_request: bool = False,
        **subject: Unpack[Subject],
    ) -> None:
        super().__init__(message, **subject)
        self.causes = causes
        self.bad_request = bad_request

    def __str__(self) -> str:
        text = super().__str__()
        if self.bad_request:
            text = text.replace(f"{self.reason} ({self.code})", "BadRequest (400)", 1)
        return text

    def to_status(self) -> JSONObject:
        status = super().to_status()
        if self.bad_request:
            status.update(reason="BadRequest", code=400)
        if self.causes:
            status.setdefault("details", {})["causes"] = [
                {"field": cause.field, "message": cause.message} for cause in self.causes
            ]
        return status


class Forbidden(ClusterError, code=403, reason="Forbidden"):
    """403: not allowed (RBAC, admission, or a namespace being deleted)."""


class RequestEntityTooLarge(ClusterError, code=413, reason="RequestEntityTooLarge"):
    """413: the request body is over the API server's limit (3 MiB); nothing was written."""


class TooManyRequests(ClusterError, code=429, reason="TooManyRequests"):
    """429: throttled by API priority and fairness; retry after ``retry_after`` seconds."""

    def __init__(
        self,
        message: str = "",
        *,
        retry_after: float = 1.0,
        **subject: Unpack[Subject],
    ) -> None:
        super().__init__(message, **subject)
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"{super().__str__()} (retry after {self.retry_after:g}s)"

    def to_status(self) -> JSONObject:
        status = super().to_status()
        status.setdefault("details", {})["retryAfterSeconds"] = max(1, round(self.retry_after))
        return status


class ServerError(ClusterError, code=500, reason="InternalError"):
    """5xx: the API server failed; the request may or may not have been applied."""


class Timeout(ClusterError, code=504, reason="Timeout"):
    """504: the request did not finish in time; it may still be applied."""


_ERRORS: tuple[type[ClusterError], ...] = (
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Invalid,
    Forbidden,
    RequestEntityTooLarge,
    TooManyRequests,
    Timeout,
)
_BY_REASON: dict[str, type[ClusterError]] = {error.reason: error for error in _ERRORS}
_BY_REASON.update(Gone=Gone, BadRequest=Invalid)
_BY_CODE: dict[int, type[ClusterError]] = {
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    400: Invalid,
    403: Forbidden,
    413: RequestEntityTooLarge,
    429: TooManyRequests,
    504: Timeout,
}


def error_from_status(status: JSONObject) -> ClusterError:
    """The port error for a ``metav1.Status`` (the inverse of ``ClusterError.to_status``)."""
    code = int(status.get("code") or 500)
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    details: JSONObject = status.get("details") or {}
    kind, name = details.get("kind"), details.get("name")
    error_type = _BY_REASON.get(reason) or _BY_CODE.get(code) or ServerError
    if error_type is Invalid:
        causes = tuple(
            Cause(field=str(cause.get("field", "")), message=str(cause.get("message", "")))
            for cause in details.get("causes") or ()
        )
        return Invalid(message, kind=kind, name=name, causes=causes, bad_request=code == 400)
    if error_type is TooManyRequests:
        retry_after = float(details.get("retryAfterSeconds") or 1)
        return TooManyRequests(message, retry_after=retry_after, kind=kind, name=name)
    return error_type(message, kind=kind, name=name)
