"""Events about DGDs, recorded through the cluster port (``events.k8s.io/v1``).

An event is best effort, as Kubernetes treats them: a refused event is logged, never raised, so
recording cannot fail a reconcile. When to record is the caller's rule (``dgd.domain.events``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from dgd.cluster.errors import ClusterError
from dgd.cluster.protocol import Cluster
from dgd.domain.events import EventRecord
from dgd.messages.dgd import API_VERSION, KIND, DynamoGraphDeployment
from dgd.messages.meta import Event, ObjectMeta, ObjectReference
from dgd.messages.timestamps import rfc3339_micro

logger = logging.getLogger("dgd.events")

#: The ``reportingController`` of every event the operator records.
CONTROLLER = "nvidia.com/dgd-operator"


def reference(dgd: DynamoGraphDeployment) -> ObjectReference:
    """The ``regarding`` reference of an event about ``dgd``."""
    meta = dgd.metadata
    return ObjectReference(
        api_version=API_VERSION, kind=KIND, name=meta.name, namespace=meta.namespace, uid=meta.uid
    )


class Recorder:
    """Records ``EventRecord`` s about DGDs, stamped with ``now()`` (seconds since the epoch)."""

    def __init__(self, cluster: Cluster, *, instance: str, now: Callable[[], float]) -> None:
        self._cluster = cluster
        self._instance = instance
        self._now = now

    async def emit(self, dgd: DynamoGraphDeployment, record: EventRecord) -> None:
        """Record one event about ``dgd``; a refusal is logged and dropped."""
        await self.emit_regarding(dgd.metadata.namespace, reference(dgd), record)

    async def emit_regarding(
        self, namespace: str | None, regarding: ObjectReference, record: EventRecord
    ) -> None:
        """Record one event about the object ``regarding`` names; a refusal is logged and dropped."""
        event = Event(
            api_version="events.k8s.io/v1",
            # The port names the event (``<object>.<unique suffix>``).
            metadata=ObjectMeta(namespace=namespace),
            event_time=rfc3339_micro(self._now()),
            reporting_controller=CONTROLLER,
            reporting_instance=self._instance,
            action=record.action,
            reason=record.reason,
            regarding=regarding,
            related=record.related,
            note=record.note[:1024],
            type=record.type,
        )
        try:
            await self._cluster.emit(event)
        except ClusterError as error:
            logger.warning(
                "event %s on %s %s/%s dropped: %s",
                record.reason,
                regarding.kind,
                namespace,
                regarding.name,
                error,
            )
