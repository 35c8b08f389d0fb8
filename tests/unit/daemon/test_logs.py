"""Log lines: JSON with the actor's context, and no secret value ever written."""

from __future__ import annotations

import io
import json
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
import pytest

from dgd.actors.tree import DGDS
from dgd.cluster.errors import Invalid
from dgd.daemon.logs import log_handler
from dgd.daemon.metrics import DaemonMetrics
from dgd.runtime import Actor, ActorSystem, ChildSpec, ManualClock, Supervisor, settle

PRIVATE_KEY = "\n".join(
    [
        "-----BEGIN RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAsuperSECRETkeyMATERIAL",
        "-----END RSA PRIVATE KEY-----",
    ]
)
SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "mpi-run-ssh-secret", "namespace": "dynamo-system"},
    "data": {"private.key": "c3VwZXJzZWNyZXQ=", "private.key.pub": "cHVibGlj"},
    "stringData": {"token": "hunter2"},
}
SECRET_VALUES = ("c3VwZXJzZWNyZXQ=", "cHVibGlj", "hunter2", "superSECRETkeyMATERIAL", "abc.def.ghi")


@contextmanager
def captured(format: str = "json", metrics: DaemonMetrics | None = None) -> Iterator[io.StringIO]:
    """Records of the ``dgd`` loggers, as the daemon writes them, into a string."""
    out = io.StringIO()
    handler = log_handler(
        "json" if format == "json" else "text",
        stream=out,
        reconcile_id=metrics.reconcile_id if metrics is not None else None,
    )
    logger = logging.getLogger("dgd.test")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        logger.removeHandler(handler)


class Say(msgspec.Struct, frozen=True):
    text: str


class Talker(Actor[Say]):
    """Logs what it is told, as a DGD actor would while reconciling (and reports the reconcile, as the
    DGD actor does)."""

    def __init__(self, reconciles: DaemonMetrics) -> None:
        self._reconciles = reconciles

    async def receive(self, message: Say) -> None:
        self._reconciles.reconcile_started("dynamographdeployment", "team-a", "demo")
        logging.getLogger("dgd.test").info("reconciling: %s", message.text)
        self._reconciles.reconcile_finished("dynamographdeployment", "team-a", "demo", "success", 0.0)


def test_a_line_is_one_json_object_with_time_level_logger_and_message() -> None:
    with captured() as out:
        # when something is logged outside any actor
        logging.getLogger("dgd.test").warning("disk %s is %d%% full", "/data", 91)

    # then one JSON line holds the event, and no actor context
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert set(line) == {"time", "level", "logger", "message"}
    assert (line["level"], line["logger"], line["message"]) == (
        "warning",
        "dgd.test",
        "disk /data is 91% full",
    )
    assert line["time"].endswith("Z") and len(line["time"]) == len("2026-01-01T00:00:00.000Z")


def test_the_fields_a_call_gives_are_json_keys_and_text_pairs() -> None:
    logger = logging.getLogger("dgd.test")
    write = {
        "dgd": "team-a/demo",
        "verb": "create",
        "object": "Service team-a/demo-frontend",
        "why": "not found",
    }
    # when a write is logged with its fields, in each format
    with captured("json") as json_out:
        logger.info("created Service team-a/demo-frontend", extra=write)
    with captured("text") as text_out:
        logger.info("created Service team-a/demo-frontend", extra=write)

    # then JSON has them as keys, and text as key=value pairs after the message (quoted when spaced)
    line = json.loads(json_out.getvalue())
    assert {key: line[key] for key in write} == write
    assert line["message"] == "created Service team-a/demo-frontend"
    text = text_out.getvalue().rstrip("\n")
    assert text.endswith(
        "dgd.test: created Service team-a/demo-frontend dgd=team-a/demo verb=create"
        ' object="Service team-a/demo-frontend" why="not found"'
    )


@pytest.mark.anyio
async def test_a_line_logged_by_a_dgd_actor_names_the_dgd_the_actor_and_the_reconcile() -> None:
    metrics = DaemonMetrics()
    talker = ChildSpec("team-a/demo", lambda: Talker(metrics))
    tree = [ChildSpec("operator", lambda: Supervisor([ChildSpec("dgds", lambda: Supervisor([talker]))]))]
    with captured(metrics=metrics) as out:
        async with ActorSystem(tree, clock=ManualClock(), random=random.Random(1), metrics=metrics) as system:
            metrics.bind(system)
            # when the DGD actor logs during two reconciles
            for text in ("first", "second"):
                system.ref(f"{DGDS}/team-a/demo").tell_nowait(Say(text))
                await settle()

    # then each line carries the DGD, its actor and a reconcile id of its own
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["reconciling: first", "reconciling: second"]
    for number, line in enumerate(lines, start=1):
        assert line["namespace"] == "team-a" and line["name"] == "demo"
        assert line["controller"] == "dynamographdeployment"
        assert line["actor"] == f"{DGDS}/team-a/demo"
        assert line["reconcileID"] == f"team-a/demo#{number}"


@pytest.mark.parametrize("format", ["json", "text"])
def test_no_secret_value_reaches_a_log_line_however_it_was_logged(format: str) -> None:
    logger = logging.getLogger("dgd.test")
    with captured(format) as out:
        # when a Secret is logged as an argument, inside an f-string, inside an error and a traceback
        logger.info("created %s", SECRET)
        logger.info(f"synced {SECRET}")
        logger.info("refused: %s", Invalid(f"bad object {SECRET!r}", kind="Secret", name="x"))
        logger.info("calling with headers %s", {"Authorization": "Bearer abc.def.ghi"})
        logger.info("token=abc.def.ghi password='hunter2'")
        try:
            raise ValueError(f"cannot parse key {PRIVATE_KEY}")
        except ValueError:
            logger.exception("key pair rejected")
        logger.info("generated %s", {"private.key": PRIVATE_KEY})

    # then no secret value is in the output, and what was logged is still recognisable
    text = out.getvalue()
    for secret in SECRET_VALUES:
        assert secret not in text, secret
    assert "BEGIN RSA PRIVATE KEY" not in text
    assert "mpi-run-ssh-secret" in text and "<redacted>" in text
    assert "key pair rejected" in text
