"""What the operator records on a DGD (dgd-domain §14.2), as values.

Two families, and the rule that decides when each may be emitted:

* **Status-transition events** (``RollingUpdateStarted``, ``TopologyLevelsUnavailable``…) are queued
  by a program together with the status they describe; the DGD actor emits them only after that
  status was written and actually changed. A failed or skipped status write drops them.
* **Resource-mutation events** (``Create<Kind>``, ``Update<Kind>``, ``Delete<Kind>``…) are emitted by
  whoever made the change, right after the API call succeeded and changed something: never before
  the call and never for a no-op (upstream's "Creating…" and "Skipping update…" events are not
  reproduced, ``docs/decisions.md``).

A record names no object it is about: the regarding object (the DGD) is added when it is emitted.
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from dgd.messages.meta import ObjectReference

EventType = Literal["Normal", "Warning"]


class EventRecord(msgspec.Struct, frozen=True):
    """One event about a DGD: its type, reason (CamelCase), action (a verb) and note (for people)."""

    type: EventType
    reason: str
    action: str
    note: str
    related: ObjectReference | None = None


def _where(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def created(kind: str, namespace: str | None, name: str) -> EventRecord:
    """A child was created (SyncResource create, §7)."""
    return EventRecord("Normal", f"Create{kind}", "Create", f"Created {kind} {_where(namespace, name)}")


def updated(kind: str, namespace: str | None, name: str, what: str = "") -> EventRecord:
    """A child was changed; ``what`` says which part when it was not the spec (``labels``…)."""
    detail = f" ({what})" if what else ""
    return EventRecord(
        "Normal", f"Update{kind}", "Update", f"Updated {kind} {_where(namespace, name)}{detail}"
    )


def deleted(kind: str, namespace: str | None, name: str, why: str) -> EventRecord:
    """A child the DGD no longer wants was deleted; ``why`` says what made it unwanted."""
    return EventRecord(
        "Normal", f"Delete{kind}", "Delete", f"Deleted {kind} {_where(namespace, name)}: {why}"
    )


def write_failed(verb: str, kind: str, namespace: str | None, name: str, error: str) -> EventRecord:
    """A create, update or delete of a child was refused (Warning ``<Verb><Kind>``)."""
    return EventRecord(
        "Warning",
        f"{verb}{kind}",
        verb,
        f"Failed to {verb.lower()} {kind} {_where(namespace, name)}: {error}",
    )


#: What the DGD's status and its Warning event say when its reconcile failed on an internal error: the
#: cause (an exception, with its traceback) is in the operator's log, not in the user's status.
INTERNAL_ERROR = (
    "The operator failed on an internal error while reconciling this resource; it retries with a backoff "
    "(the operator's log has the details)"
)


def parked_message(retry_in: float) -> str:
    """What the status and the event say of an object whose actor was parked for ``retry_in`` seconds
    after repeated internal failures (no actor paths, no exception names: those are in the log)."""
    return (
        "The operator stopped working on this resource after repeated internal failures; it tries "
        f"again in about {math.ceil(retry_in)} s, or at once when the spec changes (the operator's log "
        "has the details)"
    )


def reconcile_error(message: str) -> EventRecord:
    """A reconcile failed in a way the status alone does not tell (Warning ``ReconcileError``, the
    reason upstream's DCD controller gives its reconcile errors)."""
    return EventRecord("Warning", "ReconcileError", "Reconcile", message)
