"""The operator's log at info: one line per write it makes (what, on which object, why, for which DGD)
and per status transition of a DGD, and nothing for a reconcile that changes nothing."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec
import pytest

from dgd.cluster.errors import Conflict
from dgd.cluster.protocol import Cluster
from dgd.cluster.proxy import APICall, ClusterProxy
from dgd.cluster.resources import DGD
from dgd.daemon.logs import log_handler
from tests.unit.actors.operator.harness import NS, Harness, manifest, running_operator

pytestmark = pytest.mark.anyio
R = TypeVar("R")

FIELDS = ("dgd", "verb", "object", "why")


def info_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """``logger: message`` of every record at info or above, in order."""
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.INFO]


async def drop_component(op: Harness, component: str) -> None:
    """Edit the DGD as a user would: remove one component."""
    dgd = await op.dgd()
    kept = [c for c in dgd.spec.components or [] if c.name != component]
    await op.cluster.replace(
        DGD, msgspec.structs.replace(dgd, spec=msgspec.structs.replace(dgd.spec, components=kept))
    )
    await op.settle()


async def test_a_new_dgd_logs_each_write_and_each_status_transition_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_operator() as op:
        # when a DGD is created and Grove makes it ready
        with caplog.at_level(logging.INFO, logger="dgd"):
            await op.apply(manifest())
            await op.grove_realizes()

    # then the log says, line by line, what the operator wrote and how the DGD's status moved
    assert info_lines(caplog) == [
        "dgd.reconcile: Updated DynamoGraphDeployment team-a/demo: set annotations"
        " nvidia.com/workload-provider, nvidia.com/current-worker-hash-v2;"
        " added finalizer nvidia.com/finalizer",
        "dgd.sync: Created ServiceAccount team-a/planner-serviceaccount",
        "dgd.sync: Created RoleBinding team-a/planner-serviceaccount-binding",
        "dgd.sync: Created ServiceAccount team-a/demo-k8s-service-discovery",
        "dgd.sync: Created Role team-a/demo-k8s-service-discovery-role",
        "dgd.sync: Created RoleBinding team-a/demo-k8s-service-discovery-binding",
        "dgd.sync: Created PodCliqueSet team-a/demo",
        "dgd.sync: Created Service team-a/demo-frontend",
        "dgd.sync: Created Service team-a/demo-worker",
        "dgd.reconcile: status of DynamoGraphDeployment team-a/demo:"
        " none -> pending/some_resources_are_not_ready",
        "dgd.reconcile: status of DynamoGraphDeployment team-a/demo:"
        " pending/some_resources_are_not_ready -> successful/all_resources_are_ready",
    ]
    # and each line carries the DGD, the verb, the object and why as fields
    fields = [tuple(getattr(r, key) for key in FIELDS) for r in caplog.records if r.levelno >= logging.INFO]
    assert fields[1] == (
        "team-a/demo",
        "create",
        "ServiceAccount team-a/planner-serviceaccount",
        "needed and not found",
    )
    assert fields[6] == ("team-a/demo", "create", "PodCliqueSet team-a/demo", "rendered and not found")
    assert fields[-1] == (
        "team-a/demo",
        "update",
        "DynamoGraphDeployment team-a/demo",
        "pending/some_resources_are_not_ready -> successful/all_resources_are_ready",
    )


async def test_a_reconcile_that_changes_nothing_logs_nothing_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_operator() as op:
        # given a ready DGD
        await op.apply(manifest())
        await op.grove_realizes()

        # when it is reconciled again, by nudges and by the resync, with nothing to change
        with caplog.at_level(logging.INFO, logger="dgd"):
            op.nudge(times=3)
            await op.advance(700)

    # then nothing is logged at info
    assert info_lines(caplog) == []


class ConflictsOnce(ClusterProxy):
    """A cluster whose first DGD status write conflicts (someone changed the DGD meanwhile)."""

    def __init__(self, inner: Cluster) -> None:
        super().__init__(inner)
        self.conflicted = False

    async def forward(self, call: APICall, send: Callable[[], Awaitable[R]]) -> R:
        if not self.conflicted and call.resource == DGD and call.subresource == "status":
            self.conflicted = True
            raise Conflict("the object has been modified", kind="DynamoGraphDeployment")
        return await send()


async def test_a_reconcile_retried_after_a_conflict_logs_the_retry_only_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxies: list[ConflictsOnce] = []

    def conflicting(inner: Cluster) -> Cluster:
        proxies.append(ConflictsOnce(inner))
        return proxies[-1]

    async with running_operator(proxy=conflicting) as op:
        # when a new DGD's first status write conflicts, and the retry comes
        with caplog.at_level(logging.DEBUG, logger="dgd"):
            await op.apply(manifest())
            await op.advance(5)

    # then the retry is at debug, and the status transition is logged once, when written
    assert proxies[0].conflicted
    retries = [r for r in caplog.records if "reconcile failed, will retry" in r.getMessage()]
    assert [r.levelno for r in retries] == [logging.DEBUG]
    transitions = [line for line in info_lines(caplog) if "status of" in line]
    assert transitions == [
        "dgd.reconcile: status of DynamoGraphDeployment team-a/demo:"
        " none -> pending/some_resources_are_not_ready"
    ]


async def test_an_update_a_deletion_and_the_finalizer_removal_each_log_one_line_with_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_operator() as op:
        # given a ready DGD
        await op.apply(manifest())
        await op.grove_realizes()

        with caplog.at_level(logging.INFO, logger="dgd"):
            # when a component is scaled, another removed, and then the DGD is deleted
            await op.scale("Worker", 3)
            await drop_component(op, "Frontend")
            await op.cluster.delete(DGD.key(NS, "demo"))
            await op.settle()

    # then each write is one line saying why, and each status transition one
    assert info_lines(caplog) == [
        "dgd.sync: Updated PodClique team-a/demo-0-worker (scaled from 2 to 3 replicas)",
        "dgd.reconcile: status of DynamoGraphDeployment team-a/demo:"
        " successful/all_resources_are_ready -> pending/some_resources_are_not_ready",
        "dgd.sync: Updated PodCliqueSet team-a/demo",
        "dgd.sync: Deleted Service team-a/demo-frontend: the DGD no longer renders it",
        "dgd.reconcile: Updated DynamoGraphDeployment team-a/demo: removed finalizer nvidia.com/finalizer",
    ]
    whys = [r.why for r in caplog.records if r.levelno >= logging.INFO]
    assert whys[2] == "its spec differs from the rendered one"
    assert whys[3] == "the DGD no longer renders it"


async def test_the_json_log_of_a_write_has_the_dgd_verb_object_and_why_as_fields() -> None:
    out = io.StringIO()
    handler = log_handler("json", stream=out)
    handler.setLevel(logging.INFO)
    logger = logging.getLogger("dgd.sync")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        async with running_operator() as op:
            # when a DGD is created, logged as the daemon logs (JSON)
            await op.apply(manifest())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)

    # then the line of each create has the fields as keys
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    service = next(line for line in lines if line["message"] == "Created Service team-a/demo-frontend")
    assert {key: service[key] for key in FIELDS} == {
        "dgd": "team-a/demo",
        "verb": "create",
        "object": "Service team-a/demo-frontend",
        "why": "rendered and not found",
    }
    assert service["level"] == "info" and service["logger"] == "dgd.sync"
