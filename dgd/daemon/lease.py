"""Leader election on a ``coordination.k8s.io/v1`` Lease: the decisions, with no I/O and no clock.

The rules are client-go's ``leaderelection`` package, which every controller-runtime operator uses,
so a platform team reads our Lease the way it reads any other:

* A candidate judges a lease by **its own clock**: a record it sees for the first time (or changed
  since it last looked) is valid for ``leaseDurationSeconds`` from the moment it saw it. The times
  written in the record (``acquireTime``, ``renewTime``) are for people; two machines' clocks never
  have to agree.
* A lease held by someone else and still valid is followed; an expired one, a released one (empty
  ``holderIdentity``) or one we hold ourselves is written with our record, with the resourceVersion
  we read as a precondition, so of two candidates that try at once exactly one wins.
* Taking a lease from someone else counts one more ``leaseTransitions``; renewing our own keeps
  ``acquireTime`` and the count.
* A leader that has not renewed for ``renewDeadline`` has lost the lease, and must stop writing
  (``renewal_lost``). ``renewDeadline`` is shorter than the lease, so it stops before anybody else
  may start.
* Releasing writes an empty holder and a one-second lease, so a successor takes over at its next try.
"""

from __future__ import annotations

import msgspec

from dgd.cluster.resources import LEASE
from dgd.messages.base import JSONObject

#: client-go's ``JitterFactor``: a candidate retries after ``retry_period`` times up to (1 + this).
JITTER = 1.2


class LeaseTiming(msgspec.Struct, frozen=True):
    """How long a lease lasts, how long a leader keeps trying to renew, how often everyone tries."""

    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problems(self) -> list[str]:
        """What is wrong with these durations (client-go's checks), as flag-level messages."""
        found: list[str] = []
        if self.retry_period <= 0:
            found.append("the retry period must be positive")
        if self.duration <= self.renew_deadline:
            found.append("the lease duration must be longer than the renew deadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            found.append(f"the renew deadline must be longer than {JITTER:g} times the retry period")
        if self.duration < 1:
            found.append("the lease duration must be at least 1s")
        return found

    @property
    def duration_seconds(self) -> int:
        """``leaseDurationSeconds`` as written (whole seconds, at least one)."""
        return max(1, round(self.duration))


class LeaseRecord(msgspec.Struct, frozen=True):
    """The election fields of a Lease's ``spec``; an empty ``holder`` means nobody holds it."""

    holder: str = ""
    duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: JSONObject) -> LeaseRecord:
        """The record of a stored Lease (missing fields read as Kubernetes defaults them)."""
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> JSONObject:
        """The Lease ``spec`` that stores this record (``holderIdentity`` omitted when empty)."""
        spec: JSONObject = {
            "leaseDurationSeconds": self.duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }
        if self.holder:
            spec["holderIdentity"] = self.holder
        return spec


def lease_object(namespace: str, name: str, record: LeaseRecord, resource_version: str | None) -> JSONObject:
    """The Lease to create (no ``resource_version``) or to replace (with it, as a precondition)."""
    metadata: JSONObject = {"name": name, "namespace": namespace}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    return {"apiVersion": LEASE.api_version, "kind": LEASE.kind, "metadata": metadata, "spec": record.spec()}


class Observed(msgspec.Struct, frozen=True):
    """The lease as one candidate last read it, and ``since``: when (its clock) that record appeared."""

    record: LeaseRecord
    resource_version: str
    since: float

    @property
    def expires(self) -> float:
        """When, on the observer's clock, the record stops being valid unless it changes."""
        return self.since + self.record.duration_seconds


def observe(previous: Observed | None, record: LeaseRecord, resource_version: str, now: float) -> Observed:
    """What a candidate knows after reading ``record``: an unchanged record keeps its ``since``."""
    if previous is not None and previous.record == record:
        return Observed(record, resource_version, previous.since)
    return Observed(record, resource_version, now)


class Write(msgspec.Struct, frozen=True):
    """Write ``record``: create the Lease (``resource_version`` ``None``) or replace the one read."""

    record: LeaseRecord
    resource_version: str | None


class Follow(msgspec.Struct, frozen=True):
    """Someone else holds a valid lease: try again later; it expires at ``expires`` (our clock)."""

    holder: str
    expires: float


Decision = Write | Follow


def decide(
    observed: Observed | None, *, identity: str, now: float, stamp: str, duration_seconds: int
) -> Decision:
    """What ``identity`` does at ``now`` about the lease it ``observed`` (``None``: there is none).

    ``stamp`` is the wall-clock time to write (RFC 3339 with microseconds).
    """
    if observed is None:
        return Write(LeaseRecord(identity, duration_seconds, stamp, stamp, 0), None)
    current = observed.record
    if current.holder and current.holder != identity and now < observed.expires:
        return Follow(current.holder, observed.expires)
    if current.holder == identity:
        renewed = msgspec.structs.replace(current, duration_seconds=duration_seconds, renew_time=stamp)
        return Write(renewed, observed.resource_version)
    taken = LeaseRecord(identity, duration_seconds, stamp, stamp, current.transitions + 1)
    return Write(taken, observed.resource_version)


def renewal_lost(renewed_at: float, now: float, timing: LeaseTiming) -> bool:
    """Whether a leader that last renewed at ``renewed_at`` must stop at ``now`` (its clock)."""
    return now - renewed_at >= timing.renew_deadline


def released(record: LeaseRecord, stamp: str) -> LeaseRecord:
    """The record a leader writes to give the lease up: no holder, valid for one second."""
    return LeaseRecord("", 1, stamp, stamp, record.transitions)
