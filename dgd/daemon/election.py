"""The leader elector: campaigns for, holds and releases one Lease through the cluster port.

The decisions are ``dgd.daemon.lease`` 's; this module only reads and writes the Lease and waits,
on an injected clock (so a ``ManualClock`` test decides when time passes).

Guarantees:

* ``leading`` is true only from a successful write of our record until ``hold`` returns or
  ``release`` is called; ``on_change`` is told of every change, synchronously, at that moment.
* ``hold`` returns (and ``leading`` turns false) no later than ``renew_deadline`` after the last
  successful renewal, also when a request hangs: every try is cut off at the deadline. It returns
  at once when it finds someone else's record on the lease. It says why the lease was lost and
  logs it only at debug: its caller says so once, with what follows (the daemon exits).
* ``release`` writes an empty holder with the resourceVersion last written, so it never clears a
  lease someone else has taken since.
* A lease it cannot take — its namespace missing, its credentials refused, the API failing — is
  logged as an ERROR with the cause and what to change, at every try, and kept in ``problem`` (told
  to ``on_problem``) until it leads or finds another leader; losing a race for it is no problem.
"""

from __future__ import annotations

import enum
import logging
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio

from dgd.cluster.errors import ClusterError, Conflict, Forbidden, NotFound
from dgd.cluster.protocol import Cluster
from dgd.cluster.resources import LEASE
from dgd.daemon.lease import (
    JITTER,
    Follow,
    LeaseRecord,
    LeaseTiming,
    Observed,
    decide,
    lease_object,
    observe,
    released,
    renewal_lost,
)
from dgd.messages.timestamps import rfc3339_micro
from dgd.runtime import Clock

logger = logging.getLogger("dgd.election")


class Attempt(enum.Enum):
    """How one try to acquire or renew ended."""

    LEADING = "leading"  #: our record is written
    FOLLOWING = "following"  #: someone else holds a valid lease
    FAILED = "failed"  #: the API refused or failed (a lost race, an error, a timeout)


@contextmanager
def deadline(clock: Clock, seconds: float) -> Iterator[anyio.CancelScope]:
    """A cancel scope cancelled once ``seconds`` have passed on ``clock`` (not the loop's clock)."""
    with anyio.CancelScope() as scope:
        timer = clock.call_later(seconds, scope.cancel)
        try:
            yield scope
        finally:
            timer.cancel()


class LeaderElector:
    """One candidate for the Lease ``namespace/name``, known as ``identity``.

    ``wall`` gives seconds since the epoch for the times written in the record; ``random`` draws
    the retry jitter of ``campaign``.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming,
        clock: Clock,
        wall: Callable[[], float],
        random: random.Random,
        on_change: Callable[[bool], None] | None = None,
        on_problem: Callable[[str | None], None] | None = None,
    ) -> None:
        self._cluster = cluster
        self._key = LEASE.key(namespace, name)
        self.identity = identity
        self.timing = timing
        self._clock = clock
        self._wall = wall
        self._random = random
        self._on_change = on_change
        self._observed: Observed | None = None
        self._renewed_at = -float("inf")
        self._leading = False
        self._on_problem = on_problem
        #: Why the lease cannot be taken now (``None``: it can, or another candidate holds it).
        self.problem: str | None = None

    @property
    def leading(self) -> bool:
        return self._leading

    @property
    def holder(self) -> str | None:
        """The holder seen at the last read (``None``: no lease read yet, or nobody holds it)."""
        return (self._observed.record.holder or None) if self._observed is not None else None

    @property
    def lease(self) -> str:
        return f"{self._key.namespace}/{self._key.name}"

    async def campaign(self) -> None:
        """Return once this candidate leads; tries every retry period (jittered) until then."""
        following: str | None = None
        while True:
            attempt = await self.try_acquire_or_renew()
            if attempt is Attempt.LEADING:
                logger.info("%s leads (lease %s)", self.identity, self.lease)
                return
            if attempt is Attempt.FOLLOWING and self.holder != following:
                following = self.holder
                logger.info("%s is standing by: %s holds lease %s", self.identity, following, self.lease)
            period = self.timing.retry_period
            await self._clock.sleep(period + self._random.random() * JITTER * period)

    async def hold(self) -> str:
        """Renew every retry period while leading; once the lease is lost, return why (see the module)."""
        timing = self.timing
        why = f"not renewed for {timing.renew_deadline:g}s"
        while self._leading:
            due = self._renewed_at + timing.renew_deadline
            now = self._clock.now()
            if now >= due:
                break
            await self._clock.sleep(min(timing.retry_period, due - now))
            if renewal_lost(self._renewed_at, self._clock.now(), timing):
                break
            attempt = Attempt.FAILED
            with deadline(self._clock, due - self._clock.now()):
                attempt = await self.try_acquire_or_renew()
            if attempt is Attempt.FOLLOWING:
                why = f"{self.holder} took it"
                break
        logger.debug("%s lost lease %s: %s", self.identity, self.lease, why)
        self._set_leading(False)
        return why

    async def try_acquire_or_renew(self) -> Attempt:
        """Read the lease once and, unless someone else validly holds it, write our record once."""
        now = self._clock.now()
        try:
            stored = await self._cluster.get(self._key)
        except NotFound:
            self._observed = None
        except ClusterError as error:
            self._cannot_take(error)
            return Attempt.FAILED
        else:
            version = str(stored.get("metadata", {}).get("resourceVersion") or "")
            self._observed = observe(self._observed, LeaseRecord.of(stored), version, now)
        decision = decide(
            self._observed,
            identity=self.identity,
            now=now,
            stamp=rfc3339_micro(self._wall()),
            duration_seconds=self.timing.duration_seconds,
        )
        if isinstance(decision, Follow):
            self._set_problem(None)
            return Attempt.FOLLOWING
        namespace, name = self._key.namespace or "", self._key.name
        lease = lease_object(namespace, name, decision.record, decision.resource_version)
        try:
            if decision.resource_version is None:
                written = await self._cluster.create(LEASE, lease)
            else:
                written = await self._cluster.replace(LEASE, lease)
        except Conflict as error:
            logger.debug(
                "%s: lease %s not written (another candidate wrote first): %s",
                self.identity,
                self.lease,
                error,
            )
            return Attempt.FAILED
        except ClusterError as error:
            self._cannot_take(error)
            return Attempt.FAILED
        version = str(written.get("metadata", {}).get("resourceVersion") or "")
        self._observed = Observed(decision.record, version, now)
        self._renewed_at = now
        self._set_problem(None)
        self._set_leading(True)
        return Attempt.LEADING

    def _cannot_take(self, error: ClusterError) -> None:
        """Report why the lease cannot be read or written: an ERROR while not leading (a renewal the
        hold loop retries is a warning), with what to change."""
        namespace = self._key.namespace
        if isinstance(error, NotFound):
            fix = f"create namespace {namespace}, or choose another with --lease-namespace"
        elif isinstance(error, Forbidden):
            fix = f"grant the operator's credentials the Lease verbs in {namespace}, or choose another"
            fix += " namespace with --lease-namespace"
        else:
            fix = "the API server refused or failed; it is tried again every retry period"
        problem = f"lease {self.lease} cannot be taken: {error}; {fix}"
        if self._leading:
            logger.warning("%s: %s", self.identity, problem)
            return
        logger.error("%s: %s", self.identity, problem)
        self._set_problem(problem)

    def _set_problem(self, problem: str | None) -> None:
        if problem != self.problem:
            self.problem = problem
            if self._on_problem is not None:
                self._on_problem(problem)

    async def release(self, timeout: float) -> bool:
        """Give the lease up (if leading): stop leading, then write an empty holder within ``timeout``
        seconds. ``False`` if there was nothing to release or the write failed (the lease then
        simply expires)."""
        observed = self._observed
        if not self._leading or observed is None:
            return False
        self._set_leading(False)
        record = released(observed.record, rfc3339_micro(self._wall()))
        lease = lease_object(self._key.namespace or "", self._key.name, record, observed.resource_version)
        with deadline(self._clock, timeout) as scope:
            try:
                await self._cluster.replace(LEASE, lease)
            except ClusterError as error:
                logger.warning(
                    "%s: lease %s not released (it will expire): %s", self.identity, self.lease, error
                )
                return False
        if scope.cancelled_caught:
            logger.warning(
                "%s: lease %s not released within %gs (it will expire)", self.identity, self.lease, timeout
            )
            return False
        logger.info("%s released lease %s", self.identity, self.lease)
        return True

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            if self._on_change is not None:
                self._on_change(leading)
