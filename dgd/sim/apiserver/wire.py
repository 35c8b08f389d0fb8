"""How the HTTP facade reads requests and writes answers: bodies, ``Status`` errors, field selectors.

A body is read as JSON (or YAML), then checked against the request: an object in the URL's namespace
and with its name (``in_namespace``, ``named``), a ``Scale`` (``to_scale``).

Every failure is answered as the API server does: a ``metav1.Status`` with the HTTP code and
``reason`` of the port error (``ClusterError.to_status``), and ``Retry-After`` on a 429. The few
failures the port has no type for (401, 405, 406, 415) are raised as ``HttpError``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import msgspec
import yaml
from aiohttp import web

from dgd.cluster.errors import ClusterError, Invalid, RequestEntityTooLarge, TooManyRequests
from dgd.cluster.protocol import Scale
from dgd.messages.base import JSONObject
from dgd.messages.meta_validation import REQUEST_LIMIT

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class HttpError(ClusterError):
    """A refusal the port has no error type for; ``code`` and ``reason`` are per instance."""

    code: ClassVar[int] = 400
    reason: ClassVar[str] = "BadRequest"

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.http_code = code
        self.http_reason = reason

    def to_status(self) -> JSONObject:
        status = super().to_status()
        status.update(code=self.http_code, reason=self.http_reason)
        return status


def respond(data: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    """A JSON answer (``data`` encoded by msgspec)."""
    return web.Response(body=msgspec.json.encode(data), status=status, headers={"Content-Type": content_type})


def failure(error: ClusterError) -> web.Response:
    """The ``Status`` answer for a refused request."""
    status = error.to_status()
    headers = {"Content-Type": JSON}
    if isinstance(error, TooManyRequests):
        headers["Retry-After"] = str(status["details"]["retryAfterSeconds"])
    return web.Response(body=msgspec.json.encode(status), status=int(status["code"]), headers=headers)


def success(name: str, group: str, plural: str, uid: str | None = None) -> JSONObject:
    """The ``Status`` a DELETE answers with once the object is gone."""
    details: JSONObject = {"name": name, "group": group, "kind": plural}
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def media_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", JSON).split(";")[0].strip().lower()


async def body(request: web.Request) -> Any:
    """The request body as JSON values (JSON, or YAML for ``*yaml`` media types)."""
    raw = await request.read()
    if len(raw) > REQUEST_LIMIT:
        raise RequestEntityTooLarge(f"Request entity too large: limit is {REQUEST_LIMIT}")
    if not raw.strip():
        raise Invalid("the request has no body", bad_request=True)
    kind = media_type(request)
    try:
        if kind.endswith("yaml"):
            return yaml.load(raw, Loader=_LOADER)
        if "json" in kind:
            return msgspec.json.decode(raw)
    except (msgspec.DecodeError, yaml.YAMLError) as error:
        raise Invalid(f"the body of the request is not valid {kind}: {error}", bad_request=True) from None
    if "protobuf" in kind:
        raise HttpError(
            415,
            "UnsupportedMediaType",
            "the simulated API server takes JSON or YAML, not protobuf (kubectl create <kind> sends it: "
            "use kubectl create ... --dry-run=client -o yaml | kubectl apply -f -)",
        )
    raise HttpError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {kind}")


async def object_body(request: web.Request) -> JSONObject:
    data = await body(request)
    if not isinstance(data, dict):
        raise Invalid("the body must be a JSON object", bad_request=True)
    return data


def in_namespace(obj: JSONObject, namespace: str | None) -> JSONObject:
    """``obj`` in the request's namespace (a different one in the body is a 400, as the API server says)."""
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise Invalid("metadata must be an object", bad_request=True)
    if namespace is not None:
        given = metadata.setdefault("namespace", namespace)
        if given != namespace:
            raise Invalid(
                "the namespace of the provided object does not match the namespace sent on the request",
                bad_request=True,
            )
    return obj


def named(obj: JSONObject, name: str) -> JSONObject:
    """``obj`` with the name on the URL (a different one in the body is a 400, as the API server says)."""
    metadata = obj["metadata"]
    given = metadata.setdefault("name", name)
    if given != name:
        raise Invalid(
            f"the name of the object ({given}) does not match the name on the URL ({name})", bad_request=True
        )
    return obj


def to_scale(data: Any) -> Scale:
    """A request body as an autoscaling/v1 ``Scale`` (anything else is a 400)."""
    try:
        return msgspec.convert(data, Scale)
    except msgspec.ValidationError as error:
        raise Invalid(f"not an autoscaling/v1 Scale: {error}", bad_request=True) from None


def flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true")


class FieldSelector(msgspec.Struct, frozen=True):
    """Field requirements (``path``, equal or not, value) on dotted paths such as ``metadata.name``."""

    requirements: tuple[tuple[str, bool, str], ...] = ()

    def matches(self, obj: JSONObject) -> bool:
        for field, equal, value in self.requirements:
            node: Any = obj
            for part in field.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            actual = "" if node is None else str(node)
            if (actual == value) != equal:
                return False
        return True


def field_selector(text: str | None) -> FieldSelector:
    """Parse a field selector (``a.b=v,c!=w``). Any field path is accepted, where the API server
    accepts only a few per kind (``metadata.name``, ``metadata.namespace``, an Event's
    ``involvedObject.*``, ...); a malformed requirement is a 400."""
    requirements: list[tuple[str, bool, str]] = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        operator = next((op for op in ("!=", "==", "=") if op in part), None)
        if operator is None:
            raise Invalid(f"invalid field selector {part!r}", bad_request=True)
        field, _, value = part.partition(operator)
        field = field.strip()
        if not _FIELD.match(field):
            raise Invalid(f'field label not supported: "{field}"', bad_request=True)
        requirements.append((field, operator != "!=", value.strip()))
    return FieldSelector(tuple(requirements))


_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$")
