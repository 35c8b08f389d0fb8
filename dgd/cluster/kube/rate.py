"""The kube adapter's client-side rate limit: a token bucket, as client-go's ``flowcontrol`` has.

``burst`` requests may go at once; after that, requests are spaced to ``qps`` per second. A
request that must wait reserves its slot first, so waiters leave in the order they arrived. Time
is the event loop's (``anyio.current_time``).
"""

from __future__ import annotations

import anyio


class RateLimiter:
    """At most ``burst`` requests at once, refilled at ``qps`` per second."""

    def __init__(self, qps: float, burst: int) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a rate limit needs qps > 0 and burst >= 1 (got qps={qps}, burst={burst})")
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._updated: float | None = None

    async def acquire(self) -> None:
        """Wait for this request's turn (at once while the bucket has tokens)."""
        now = anyio.current_time()
        if self._updated is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.qps)
        self._updated = now
        self._tokens -= 1.0
        if self._tokens < 0:
            await anyio.sleep(-self._tokens / self.qps)
