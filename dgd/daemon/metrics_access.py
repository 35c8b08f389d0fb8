"""Who may read ``/metrics``: the API server says, as with controller-runtime's secure metrics
(``filters.WithAuthenticationAndAuthorization``).

A request's bearer token (``Authorization: Bearer <token>``) is authenticated with a TokenReview; the
user it belongs to is then authorised with a SubjectAccessReview for the request's non-resource URL and
verb (``get`` on ``/metrics``). A scraper therefore needs a ClusterRole granting
``nonResourceURLs: [/metrics], verbs: [get]`` bound to it (the chart's ``<release>-metrics-reader``),
and the operator needs ``create`` on ``tokenreviews`` and ``subjectaccessreviews``.

The answers, as controller-runtime gives them: no token, or one the API server does not authenticate,
**401**; a user the API server does not allow, **403**; a review that fails — the API server cannot be
reached, refuses the review (the operator lacks the RBAC) or does not answer within ``REVIEW_TIMEOUT``
— **500**, with the reason in the log. A review is a request on the event loop like any other: a slow
or failing one delays only the scrape that waits for it.

Decisions are cached as controller-runtime caches them, so scrapes every few seconds cost the API
server a review a minute at most: a token's authentication (either way) for ``AUTHENTICATED_TTL``, an
allowed user for ``ALLOWED_TTL``, a denied one for ``DENIED_TTL``; a failed review is not cached. The
caches hold at most ``CACHE_SIZE`` entries each (the oldest dropped first) and key a token by its
SHA-256 digest, never by the token itself.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import anyio
import msgspec
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import SUBJECT_ACCESS_REVIEW, TOKEN_REVIEW
from dgd.messages.base import JSONObject

logger = logging.getLogger("dgd.metrics")

#: Seconds a token's authentication is remembered, whichever way it went.
AUTHENTICATED_TTL = 60.0
#: Seconds a user's allowed access is remembered.
ALLOWED_TTL = 300.0
#: Seconds a user's denied access is remembered.
DENIED_TTL = 30.0
#: Seconds a review may take before the scrape is answered 500.
REVIEW_TIMEOUT = 10.0
#: Entries each cache holds at most.
CACHE_SIZE = 1024

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Expiring(Generic[K, V]):
    """A bounded cache whose entries expire, each after its own time to live (on ``clock``)."""

    def __init__(self, clock: Callable[[], float], size: int = CACHE_SIZE) -> None:
        self._clock = clock
        self._size = size
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        if self._clock() >= found[0]:
            del self._entries[key]
            return None
        return found[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        self._entries.pop(key, None)
        self._entries[key] = (self._clock() + ttl, value)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class User(msgspec.Struct, frozen=True):
    """A user as the API server authenticated them (``extra``: sorted key, values pairs)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class ReviewFailed(Exception):
    """A review the API server did not answer (the message says why)."""


class Authentication(msgspec.Struct, frozen=True):
    """A token's authentication: the user it belongs to, ``None`` if the API server does not know it."""

    user: User | None


class Decision(msgspec.Struct, frozen=True):
    """Whether ``user`` may, and the API server's reason (if it gave one)."""

    allowed: bool
    reason: str = ""


class MetricsAccess:
    """Authentication and authorisation of the metrics server's requests (see the module), through
    ``cluster`` (the daemon's own client: every replica serves metrics, leading or not)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        clock: Callable[[], float] = time.monotonic,
        timeout: float = REVIEW_TIMEOUT,
    ) -> None:
        self._cluster = cluster
        self._timeout = timeout
        self._tokens: Expiring[bytes, Authentication] = Expiring(clock)
        self._decisions: Expiring[tuple[User, str, str], Decision] = Expiring(clock)

    async def authenticate(self, token: str) -> User | None:
        """The user ``token`` belongs to (``None``: the API server does not authenticate it)."""
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._tokens.get(digest)
        if cached is not None:
            return cached.user
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}}
        answer = await self._review("TokenReview", {**review, "spec": {"token": token}})
        status = answer.get("status") or {}
        user = _user(status.get("user") or {}) if status.get("authenticated") is True else None
        self._tokens.put(digest, Authentication(user), AUTHENTICATED_TTL)
        return user

    async def authorize(self, user: User, path: str, verb: str) -> Decision:
        """Whether ``user`` may ``verb`` the non-resource URL ``path``."""
        key = (user, path, verb)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        spec: JSONObject = {"user": user.name, "nonResourceAttributes": {"path": path, "verb": verb}}
        if user.uid:
            spec["uid"] = user.uid
        if user.groups:
            spec["groups"] = list(user.groups)
        if user.extra:
            spec["extra"] = {key: list(values) for key, values in user.extra}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {}}
        answer = await self._review("SubjectAccessReview", {**review, "spec": spec})
        status = answer.get("status") or {}
        decision = Decision(allowed=status.get("allowed") is True, reason=str(status.get("reason") or ""))
        self._decisions.put(key, decision, ALLOWED_TTL if decision.allowed else DENIED_TTL)
        return decision

    async def _review(self, kind: str, review: JSONObject) -> JSONObject:
        resource = TOKEN_REVIEW if kind == "TokenReview" else SUBJECT_ACCESS_REVIEW
        try:
            with anyio.fail_after(self._timeout):
                answer: JSONObject = await self._cluster.create(resource, review)
                return answer
        except TimeoutError:
            raise ReviewFailed(f"the API server did not answer a {kind} within {self._timeout:g}s") from None
        except (ClusterError, OSError) as error:
            raise ReviewFailed(f"a {kind} failed: {error or type(error).__name__}") from None

    async def refusal(self, request: web.Request) -> web.Response | None:
        """The answer to a request that may not be served (401, 403 or 500), ``None`` for one that may."""
        token = bearer_token(request.headers.get("Authorization", ""))
        if token is None:
            return _unauthorized()
        try:
            user = await self.authenticate(token)
            if user is None:
                return _unauthorized()
            decision = await self.authorize(user, request.path, request.method.lower())
        except ReviewFailed as failure:
            logger.error("a request to %s cannot be checked: %s", request.path, failure)
            return web.Response(
                status=500,
                text="the API server could not check this request's credentials (the operator's log says "
                "why)\n",
            )
        if not decision.allowed:
            logger.info("%s may not read %s: %s", user.name, request.path, decision.reason or "not allowed")
            return web.Response(
                status=403, text=f"{user.name!r} may not {request.method.lower()} {request.path}\n"
            )
        return None

    def middleware(self) -> Middleware:
        """An aiohttp middleware that serves only what ``refusal`` lets through."""

        @web.middleware
        async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
            refused = await self.refusal(request)
            return refused if refused is not None else await handler(request)

        return guarded


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case), or ``None``."""
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _user(found: JSONObject) -> User:
    extra = found.get("extra") or {}
    return User(
        name=str(found.get("username") or ""),
        uid=str(found.get("uid") or ""),
        groups=tuple(found.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(v or ())) for k, v in extra.items())),
    )


def _unauthorized() -> web.Response:
    return web.Response(
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="dgd-operator metrics"'},
        text="a bearer token the API server authenticates is required\n",
    )
