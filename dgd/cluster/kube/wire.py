"""One HTTP request of the kube adapter: paths, the rate limit, the call through kubernetes-asyncio, errors.

kubernetes-asyncio is the client: its ``Configuration`` names the server, its ``ApiClient`` adds the
credentials (``update_params_for_auth``, which refreshes a rotating service-account token or runs an
exec plugin) and its default headers (the user agent), and its ``RESTClientObject``'s aiohttp session
(TLS, the connection pool, the proxy) sends the request. What its ``call_api`` adds per request is
left out (issue 18): walking the body through ``sanitize_for_serialization`` and ``json.dumps`` —
the body is encoded once by msgspec — and building model objects: the raw response's bytes are
decoded straight into msgspec Structs by the adapter.

A refused request raises the port error of its ``Status`` (``errors.error_from_status``), completed
with what the request was about (kind, namespace, name), and a 429's ``Retry-After`` header;
an unreachable server is ``ServerError``, a request that timed out ``Timeout``.

A request the API server accepts may still carry warnings (``Warning: 299 - "..."`` headers: a field
the server does not know and drops, as a Grove CRD older than the operator would; a deprecated API
version). Each distinct warning is logged once (``ApiWarnings``), naming the request it came with,
as controller-runtime's warning logger does for upstream's operator.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import msgspec
from kubernetes_asyncio.client import ApiClient

from dgd.cluster.errors import (
    ClusterError,
    Forbidden,
    Invalid,
    ServerError,
    Timeout,
    TooManyRequests,
    error_from_status,
)
from dgd.cluster.kube.rate import RateLimiter
from dgd.cluster.resources import Resource

logger = logging.getLogger("dgd.cluster.kube")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"

Query = Sequence[tuple[str, str]]


class Subject(msgspec.Struct, frozen=True):
    """What a request is about, to complete the errors it may raise."""

    resource: Resource[Any]
    namespace: str | None = None
    name: str | None = None


def path(
    resource: Resource[Any], namespace: str | None = None, name: str | None = None, sub: str = ""
) -> str:
    """``/api/v1/...`` or ``/apis/<group>/<version>/...``, down to the object and its subresource."""
    parts = [f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"]
    if resource.namespaced and namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(resource.plural)
    if name is not None:
        parts.append(quote(name, safe=""))
    if sub:
        parts.append(sub)
    return "/".join(parts)


#: One warning of a ``Warning`` header: code, agent, the quoted text and an optional date (RFC 7234 §5.5).
_WARNING = re.compile(r'(\d{3}) (\S+) "((?:[^"\\]|\\.)*)"(?: "[^"]*")?')
_ESCAPE = re.compile(r"\\(.)")


def warning_texts(headers: Iterable[str]) -> list[str]:
    """The texts of the API server's warnings (code 299, the only one it sends) in ``Warning`` headers;
    a header may hold several, separated by commas."""
    return [
        _ESCAPE.sub(r"\1", text)
        for header in headers
        for code, _agent, text in _WARNING.findall(header)
        if code == "299"
    ]


class ApiWarnings:
    """Logs each distinct warning the API server sends once, with the request it came with; the last
    ``remembered`` texts are kept, so a warning seen again long after is logged again."""

    def __init__(self, remembered: int = 256) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._remembered = remembered

    def note(self, headers: Iterable[str], method: str, subject: Subject) -> None:
        for text in warning_texts(headers):
            if text in self._seen:
                self._seen.move_to_end(text)
                continue
            self._seen[text] = None
            if len(self._seen) > self._remembered:
                self._seen.popitem(last=False)
            where = "/".join(part for part in (subject.namespace, subject.name) if part)
            logger.warning(
                "the API server warns about %s %s%s: %s",
                method,
                subject.resource.kind,
                f" {where}" if where else "",
                text,
            )


class Transport:
    """Sends requests for the adapter: rate-limited, timed out after ``timeout`` seconds."""

    def __init__(self, api: ApiClient, *, limiter: RateLimiter | None, timeout: float | None) -> None:
        self.api = api
        self._warnings = ApiWarnings()
        self._limiter = limiter
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._streaming = aiohttp.ClientTimeout(total=None, sock_connect=timeout)

    async def request(
        self,
        method: str,
        url: str,
        subject: Subject,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
    ) -> bytes:
        """The response body of a successful request (any 2xx); the port error otherwise."""
        response = await self.open(method, url, subject, query=query, body=body, content_type=content_type)
        try:
            return await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _unreachable(error) from None
        finally:
            response.release()

    async def open(
        self,
        method: str,
        url: str,
        subject: Subject,
        *,
        query: Query = (),
        body: Any = None,
        content_type: str = JSON,
        stream: bool = False,
    ) -> aiohttp.ClientResponse:
        """The response of a successful request, its body unread (the caller releases it)."""
        if self._limiter is not None:
            await self._limiter.acquire()
        headers = {**self.api.default_headers, "Content-Type": content_type, "Accept": JSON}
        params = list(query)
        await self.api.update_params_for_auth(headers, params, ["BearerToken"])
        target = f"{self.api.configuration.host}{url}"
        if params:
            target += "?" + urlencode(params)
        rest = self.api.rest_client
        try:
            response: aiohttp.ClientResponse = await rest.pool_manager.request(
                method,
                target,
                data=None if body is None else msgspec.json.encode(body),
                headers=headers,
                timeout=self._streaming if stream else self._timeout,
                proxy=rest.proxy,
                proxy_headers=rest.proxy_headers,
                server_hostname=rest.server_hostname,
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _unreachable(error) from None
        if 200 <= response.status < 300:
            if "Warning" in response.headers:
                self._warnings.note(response.headers.getall("Warning"), method, subject)
            return response
        try:
            data = await response.read()
        except (aiohttp.ClientError, TimeoutError):
            data = b""
        finally:
            response.release()
        raise refusal(response.status, data, response.headers.get("Retry-After"), subject)


def refusal(code: int, data: bytes, retry_after: str | None, subject: Subject) -> ClusterError:
    """The port error for an error response: its ``Status`` if it has one, its code otherwise."""
    try:
        status = msgspec.json.decode(data)
    except msgspec.DecodeError:
        status = None
    if not isinstance(status, dict) or status.get("kind") != "Status":
        text = data.decode("utf-8", "replace").strip()[:500]
        status = {"code": code, "message": text or f"HTTP {code}"}
    status.setdefault("code", code)
    return complete(status_error(status, retry_after), subject)


def status_error(status: dict[str, Any], retry_after: str | None = None) -> ClusterError:
    """The port error of a ``Status`` (also an ``ERROR`` watch event's)."""
    code = int(status.get("code") or 500)
    message = str(status.get("message") or "")
    if code == 401:
        return Forbidden(f"Unauthorized: {message}")
    if code in (405, 406, 415):
        return Invalid(message, bad_request=True)
    error = error_from_status(status)
    if isinstance(error, TooManyRequests) and retry_after:
        with contextlib.suppress(ValueError):
            error.retry_after = float(retry_after)
    return error


def complete(error: ClusterError, subject: Subject) -> ClusterError:
    """``error`` naming the request's kind, namespace and name where its ``Status`` did not.

    A ``Status`` about another object (a request into a missing namespace is answered ``namespaces
    "x" not found``) keeps naming that object: it is not given the request's kind and namespace."""
    resource = subject.resource
    if error.kind is not None and error.kind.lower() not in (resource.plural, resource.kind.lower()):
        return error
    error.kind = resource.kind
    if resource.namespaced:
        error.namespace = error.namespace or subject.namespace
    error.name = error.name or subject.name
    return error


def _unreachable(error: BaseException) -> ClusterError:
    if isinstance(error, TimeoutError):
        return Timeout(f"the API server did not answer in time: {error!r}")
    return ServerError(f"cannot reach the API server: {error}")
