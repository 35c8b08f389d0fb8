"""``RetryingCluster``: the port with transient answers retried, for long-running commands.

A real API server answers some requests with "not now": 429 while a new CRD's storage initializes or
priority and fairness throttles, 5xx while it starts or an etcd leader changes, a timeout on a slow
request. A command that runs for hours must not exit on one of them. ``RetryingCluster`` retries a
call that failed with ``TooManyRequests`` (after at least its ``Retry-After``), ``ServerError`` or
``Timeout``, with exponential backoff and jitter (tenacity), for up to ``give_up_after`` seconds; any
other error, and the last transient one, reaches the caller as it was. Watches are not retried here:
a watch's owner re-lists and re-watches (the informers and the world controllers do).

Retrying a write is safe for the callers it serves: they are level-triggered (a create retried
after a lost answer finds ``AlreadyExists``, an update with a resourceVersion finds ``Conflict``,
and both re-read).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_delay,
    wait_random_exponential,
)

from dgd.cluster.errors import ServerError, Timeout, TooManyRequests
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy

R = TypeVar("R")

logger = logging.getLogger("dgd.cluster")

#: The answers that mean "not now": worth the same request again after a while.
TRANSIENT = (TooManyRequests, ServerError, Timeout)


class RetryingCluster(ClusterProxy):
    """``inner`` with transient failures retried (see the module); ``max_wait`` caps one backoff."""

    def __init__(self, inner: Cluster, *, give_up_after: float = 300.0, max_wait: float = 30.0) -> None:
        super().__init__(inner)
        self._give_up_after = give_up_after
        self._max_wait = max_wait

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        backoff = wait_random_exponential(multiplier=0.5, max=self._max_wait)

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome is not None else None
            floor = error.retry_after if isinstance(error, TooManyRequests) else 0.0
            return max(floor, backoff(state))

        def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            logger.warning("%s %s: %s; retrying", call.verb, call.resource.kind, error)

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TRANSIENT),
            wait=wait,
            stop=stop_after_delay(self._give_up_after),
            sleep=anyio.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )

        async def attempt() -> R:
            return await send()

        result: R = await retrying(attempt)
        return result
