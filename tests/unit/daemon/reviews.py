"""An API server's TokenReviews and SubjectAccessReviews, for the metrics server's tests.

``ReviewingCluster(inner)`` answers the two reviews as a real API server would — a token it issued
authenticates as its user, a user is allowed a non-resource URL and verb when a grant says so — and
forwards every other call to ``inner``. ``failures`` makes the reviews of a kind (``TokenReview``,
``SubjectAccessReview``) raise an error; ``hang`` makes every review wait until cancelled (an API server
that does not answer). ``reviews`` lists the kinds of the reviews asked, ``asked`` their bodies, in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import anyio

from dgd.cluster.errors import ClusterError
from dgd.cluster.memory.adapter import MemoryCluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import SUBJECT_ACCESS_REVIEW, TOKEN_REVIEW

R = TypeVar("R")

READER = "system:serviceaccount:monitoring:prometheus"
OTHER = "system:serviceaccount:team-a:curious"
SA_GROUPS = ["system:serviceaccounts", "system:authenticated"]


class ReviewingCluster(ClusterProxy):
    """See the module. ``tokens``: token -> the ``userInfo`` it authenticates as; ``grants``: the
    (user name, path, verb) allowed."""

    def __init__(
        self,
        inner: Any = None,
        *,
        tokens: dict[str, dict[str, Any]] | None = None,
        grants: set[tuple[str, str, str]] | None = None,
    ) -> None:
        super().__init__(inner if inner is not None else MemoryCluster())
        self.tokens = tokens if tokens is not None else {}
        self.grants = grants if grants is not None else set()
        self.failures: dict[str, ClusterError] = {}
        self.hang = False
        self.reviews: list[str] = []
        self.asked: list[dict[str, Any]] = []

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        if call.resource not in (TOKEN_REVIEW, SUBJECT_ACCESS_REVIEW):
            return await send()
        self.reviews.append(call.resource.kind)
        self.asked.append(call.body)
        if self.hang:
            await anyio.sleep_forever()
        if call.resource.kind in self.failures:
            raise self.failures[call.resource.kind]
        answer = self._token(call.body) if call.resource is TOKEN_REVIEW else self._access(call.body)
        return cast(R, {**call.body, "status": answer})

    def _token(self, review: dict[str, Any]) -> dict[str, Any]:
        user = self.tokens.get(review["spec"]["token"])
        if user is None:
            return {"authenticated": False, "error": "invalid bearer token"}
        return {"authenticated": True, "user": user, "audiences": ["https://kubernetes.default.svc"]}

    def _access(self, review: dict[str, Any]) -> dict[str, Any]:
        spec = review["spec"]
        attributes = spec["nonResourceAttributes"]
        if (spec["user"], attributes["path"], attributes["verb"]) in self.grants:
            return {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "metrics-reader"'}
        return {"allowed": False}


def service_account(name: str) -> dict[str, Any]:
    """The ``userInfo`` of a ServiceAccount's token."""
    return {"username": name, "uid": f"uid-of-{name.rsplit(':', 1)[1]}", "groups": list(SA_GROUPS)}
