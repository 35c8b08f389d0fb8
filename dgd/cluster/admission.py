"""Admission as the memory API server runs it: a callable between a write's defaults and its storage.

A real API server calls admission webhooks between decoding a write and storing it; the memory server
calls an ``Admission`` at the same point for creates and updates (status and scale writes are not
admitted, as webhooks registered for a resource do not see its subresources). It gets the attempt and
returns the object to store (mutated or not), or raises a ``ClusterError`` (an ``Invalid``, say) to
refuse the write. It may read what the cluster holds as the write arrives (``AdmissionAttempt.read``,
as a webhook GETs an object it needs: the pod restore mutator, its checkpoint). The rules are not here:
whoever builds the server wires them (the simulation uses the operator's own webhooks), so this layer
knows nothing of DGDs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject

#: The object the cluster holds of a resource, namespace and name (as JSON), or ``None``.
Read = Callable[[Resource[Any], str | None, str], JSONObject | None]


class AdmissionAttempt(msgspec.Struct, frozen=True, kw_only=True):
    """One write to admit: the operation, the kind (group, version, kind, plural), the object as it
    would be stored, the stored one (UPDATE), who writes, and how to read the cluster meanwhile."""

    operation: Literal["CREATE", "UPDATE"]
    group: str
    version: str
    kind: str
    plural: str
    obj: JSONObject
    old: JSONObject | None = None
    user: str = ""
    read: Read | None = None


#: The admission chain: the object to store, or a ``ClusterError`` raised to refuse.
Admission = Callable[[AdmissionAttempt], JSONObject]
