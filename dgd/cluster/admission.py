"""Admission as the memory API server runs it: a callable between a write's defaults and its storage.

A real API server calls admission webhooks between decoding a write and storing it; the memory server
calls an ``Admission`` at the same point for creates and updates (status and scale writes are not
admitted, as webhooks registered for a resource do not see its subresources). It gets the attempt and
returns the object to store (mutated or not), or raises a ``ClusterError`` (an ``Invalid``, say) to
refuse the write. The rules are not here: whoever builds the server wires them (the simulation uses
the operator's own webhooks), so this layer knows nothing of DGDs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from dgd.messages.base import JSONObject


class AdmissionAttempt(msgspec.Struct, frozen=True, kw_only=True):
    """One write to admit: the operation, the kind (group, version, kind, plural), the object as it
    would be stored, the stored one (UPDATE) and who writes."""

    operation: Literal["CREATE", "UPDATE"]
    group: str
    version: str
    kind: str
    plural: str
    obj: JSONObject
    old: JSONObject | None = None
    user: str = ""


#: The admission chain: the object to store, or a ``ClusterError`` raised to refuse.
Admission = Callable[[AdmissionAttempt], JSONObject]
