"""Bugs planted in the operator on purpose, to show that the invariants catch them."""

from __future__ import annotations

from collections.abc import Sequence

from dgd.actors.dgd.actor import DGDActor
from dgd.actors.machinery.events import reference
from dgd.domain.events import EventRecord
from dgd.domain.rollout import Hashes
from dgd.domain.rollout_replicas import WorkerDCD
from dgd.messages.dgd import DGDStatus, DynamoGraphDeployment


async def events_before_status(
    self: DGDActor, dgd: DynamoGraphDeployment, status: DGDStatus, events: Sequence[EventRecord] = ()
) -> None:
    """``DGDActor._persist`` with the bug: the queued events are emitted first, then the status is written."""
    if status == dgd.status:
        return
    for event in events:
        # posted straight away, not told to the poster: the API sees it before the status
        recorder = self._recorder
        await recorder._cluster.emit(recorder.event(dgd.metadata.namespace, reference(dgd), event))
    await self._dgd_writer.write_status(dgd, status)


def annotations_trusted(
    recorded: Hashes, workers: Sequence[WorkerDCD], desired: str, *, rolling: bool
) -> Hashes:
    """``serving_hashes`` as it was before issue 32 (#13495): the recorded worker hash is trusted, even
    when an update dropped it and the worker DCDs still run an older generation."""
    return recorded
