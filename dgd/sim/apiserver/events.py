"""The core/v1 view of events: ``/api/v1/.../events``, read-only, over the stored events.k8s.io/v1 Events.

A real API server serves every Event through both APIs; the memory server stores only
``events.k8s.io/v1`` (what the operator writes). kubectl reads the core one — ``kubectl describe``
lists the events of an object with ``fieldSelector=involvedObject.name=...``, and ``kubectl get
events`` prefers it — so the facade converts each Event the way the API server does
(``regarding`` → ``involvedObject``, ``note`` → ``message``, the ``deprecated*`` fields → ``source``,
``firstTimestamp``, ``lastTimestamp``, ``count``). Writes through this view are refused (405).
"""

from __future__ import annotations

from dgd.cluster.resources import Resource
from dgd.messages.base import JSONObject

#: The core/v1 Event collection, served as a view of ``resources.EVENT``.
CORE_EVENT = Resource[JSONObject](group="", version="v1", kind="Event", plural="events", has_spec=False)


def to_core(event: JSONObject) -> JSONObject:
    """The core/v1 Event of an events.k8s.io/v1 Event."""
    series = event.get("series") or {}
    first = event.get("deprecatedFirstTimestamp")
    last = event.get("deprecatedLastTimestamp") or series.get("lastObservedTime")
    core: JSONObject = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": event.get("metadata") or {},
        "involvedObject": event.get("regarding") or {},
        "reason": event.get("reason"),
        "message": event.get("note"),
        "type": event.get("type"),
        "source": event.get("deprecatedSource") or {"component": event.get("reportingController")},
        "firstTimestamp": first,
        "lastTimestamp": last,
        "count": event.get("deprecatedCount") or series.get("count") or 1,
        "eventTime": event.get("eventTime"),
        "series": event.get("series"),
        "action": event.get("action"),
        "related": event.get("related"),
        "reportingComponent": event.get("reportingController") or "",
        "reportingInstance": event.get("reportingInstance") or "",
    }
    return {key: value for key, value in core.items() if value is not None}
